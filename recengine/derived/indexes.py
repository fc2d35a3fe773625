"""Where derived index files live, and the followers of every kind a deployment keeps."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from recengine.config import Settings


def index_directory(settings: Settings, kind: str) -> Path | None:
    """``data_dir/index/<kind>/`` (None when ``index.persist`` is off: memory only)."""
    return settings.data_dir / "index" / kind if settings.index.persist else None


def follower_options(settings: Settings) -> dict[str, Any]:
    """The follower settings every kind shares (``[index]``)."""
    return {"interval": settings.index.sync_interval_s, "page": settings.index.build_batch}
