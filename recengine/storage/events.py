"""Reader events (articles read, with the time): written by the edges, read to build feeds."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

from sqlalchemy import Row, select
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.orm import Session

from recengine.storage.models import Article, ReaderEvent


def add_events(*, session: Session, rows: Sequence[dict[str, Any]]) -> None:
    """Insert events: each row ``user_id``, ``article_id`` (internal), ``kind``, ``at``.

    An event stored already (same reader, time, article and kind) is skipped, on either
    database (``ON CONFLICT DO NOTHING`` on the unique index ``uq_reader_events_once``): a
    retried request stores nothing twice.
    """
    if not rows:
        return
    make = postgresql.insert if session.get_bind().dialect.name == "postgresql" else sqlite.insert
    session.execute(make(ReaderEvent).on_conflict_do_nothing(), list(rows))


def recent_events(
    *, session: Session, user_id: str, limit: int
) -> Sequence[Row[int, str, datetime]]:
    """The reader's latest ``limit`` events on live articles, newest first.

    Rows: ``article_id, kind, at``. Events of deleted articles are left out (the article is
    gone), but they stay stored.
    """
    return session.execute(
        select(ReaderEvent.article_id, ReaderEvent.kind, ReaderEvent.at)
        .join(Article, Article.id == ReaderEvent.article_id)
        .where(ReaderEvent.user_id == user_id, Article.deleted_at.is_(None))
        .order_by(ReaderEvent.at.desc(), ReaderEvent.id.desc())
        .limit(limit)
    ).all()


def read_article_ids(*, session: Session, user_id: str) -> set[int]:
    """Every article the reader has an event for (deleted articles included)."""
    return set(
        session.scalars(
            select(ReaderEvent.article_id).where(ReaderEvent.user_id == user_id).distinct()
        ).all()
    )
