"""A migrated SQLite database for a benchmark run: settings, engine and session factory."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from sqlalchemy import Engine
from sqlalchemy.orm import Session, sessionmaker

from recengine.config import Settings, load_settings
from recengine.storage.db import make_engine, make_session_factory
from recengine.storage.migrate import upgrade


def sqlite_store(
    folder: Path, name: str = "bench.db", **overrides: Any
) -> tuple[Settings, Engine, sessionmaker[Session]]:
    """Settings with ``data_dir = folder`` and the database ``folder / name`` (plus
    ``overrides``, as ``load_settings`` takes them), the schema upgraded to head."""
    settings = load_settings(
        {"data_dir": str(folder), "database_url": f"sqlite:///{folder / name}", **overrides}
    )
    engine = make_engine(settings.resolved_database_url)
    upgrade(engine)
    return settings, engine, make_session_factory(engine)
