"""Reader events: what a reader read, and when (the history feeds are built from)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sqlalchemy import insert
from sqlalchemy.orm import Session

from recengine.storage.models import ReaderEvent


def add_events(*, session: Session, rows: Sequence[dict[str, Any]]) -> None:
    """Insert events; each row holds ``user_id``, ``article_id`` (internal), ``kind``, ``at``."""
    if rows:
        session.execute(insert(ReaderEvent), list(rows))
