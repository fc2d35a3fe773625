"""Reader events (articles read, with the time): written by the edges, read to build feeds,
listed and erased for a reader on request, and deleted once older than the retention.

The reader's id is stored here and nowhere else (feedback counts are per list article, variant
and slot), so deleting a reader's rows here erases every trace of the reader in the database.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from datetime import datetime
from typing import Any

from sqlalchemy import Row, delete, func, select
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
    *, session: Session, user_id: str, limit: int, since: datetime | None = None
) -> Sequence[Row[int, str, datetime]]:
    """The reader's latest ``limit`` events on live articles, newest first (at ``since`` or
    later, when given: older ones are past the retention).

    Rows: ``article_id, kind, at``. Events of deleted articles are left out (the article is
    gone), but they stay stored.
    """
    query = (
        select(ReaderEvent.article_id, ReaderEvent.kind, ReaderEvent.at)
        .join(Article, Article.id == ReaderEvent.article_id)
        .where(ReaderEvent.user_id == user_id, Article.deleted_at.is_(None))
        .order_by(ReaderEvent.at.desc(), ReaderEvent.id.desc())
        .limit(limit)
    )
    if since is not None:
        query = query.where(ReaderEvent.at >= since)
    return session.execute(query).all()


def read_article_ids(*, session: Session, user_id: str, since: datetime | None = None) -> set[int]:
    """Every article the reader has an event for (deleted articles included), at ``since`` or
    later when given."""
    query = select(ReaderEvent.article_id).where(ReaderEvent.user_id == user_id)
    if since is not None:
        query = query.where(ReaderEvent.at >= since)
    return set(session.scalars(query.distinct()).all())


def events_of(
    *, session: Session, user_id: str, after_id: int, limit: int
) -> Sequence[Row[int, str, str, str, datetime, datetime | None]]:
    """Every stored event of the reader, by id (paged: ids above ``after_id``), with the
    article's caller id and title, deleted articles included.

    Rows: ``id, external_id, title, kind, at, deleted_at``.
    """
    return session.execute(
        select(
            ReaderEvent.id,
            Article.external_id,
            Article.title,
            ReaderEvent.kind,
            ReaderEvent.at,
            Article.deleted_at,
        )
        .join(Article, Article.id == ReaderEvent.article_id)
        .where(ReaderEvent.user_id == user_id, ReaderEvent.id > after_id)
        .order_by(ReaderEvent.id)
        .limit(limit)
    ).all()


def reads_between(
    *, session: Session, since: datetime, until: datetime | None = None, batch: int = 10_000
) -> Iterator[tuple[str, datetime, int]]:
    """Every stored event at ``since`` or later (and before ``until``, when given), by reader
    then time: ``(user_id, at, article_id)``, streamed ``batch`` rows at a time (the co-reads
    of ``recommend.signals.coreads``: no reader id leaves the caller's memory)."""
    query = select(ReaderEvent.user_id, ReaderEvent.at, ReaderEvent.article_id).where(
        ReaderEvent.at >= since
    )
    if until is not None:
        query = query.where(ReaderEvent.at < until)
    query = query.order_by(ReaderEvent.user_id, ReaderEvent.at, ReaderEvent.id)
    for user_id, at, article_id in session.execute(query.execution_options(yield_per=batch)):
        yield user_id, at, int(article_id)


def last_event_id(*, session: Session) -> int:
    """The largest event id stored (0: none)."""
    return int(session.scalar(select(func.max(ReaderEvent.id))) or 0)


def any_event_after(*, session: Session, after_id: int, before: datetime) -> bool:
    """Whether an event with an id above ``after_id`` is stamped before ``before`` (reads sent
    late, or imported with their times: they change days already summarised)."""
    found = session.scalars(
        select(ReaderEvent.id).where(ReaderEvent.id > after_id, ReaderEvent.at < before).limit(1)
    )
    return found.first() is not None


def delete_reader_events(*, session: Session, user_id: str) -> int:
    """Delete every event of the reader; returns how many there were."""
    result = session.execute(delete(ReaderEvent).where(ReaderEvent.user_id == user_id))
    return int(result.rowcount or 0)  # type: ignore[attr-defined]


def any_event_before(*, session: Session, cutoff: datetime) -> bool:
    """Whether any event is older than ``cutoff`` (one look-up in ``ix_reader_events_at``)."""
    found = session.scalars(select(ReaderEvent.id).where(ReaderEvent.at < cutoff).limit(1))
    return found.first() is not None


def delete_events_before(*, session: Session, cutoff: datetime, limit: int) -> int:
    """Delete at most ``limit`` events older than ``cutoff`` (index ``ix_reader_events_at``);
    returns how many. Batches keep each transaction, and its lock, short."""
    oldest = select(ReaderEvent.id).where(ReaderEvent.at < cutoff).limit(limit)
    chosen = [int(i) for i in session.scalars(oldest)]
    if chosen:
        session.execute(delete(ReaderEvent).where(ReaderEvent.id.in_(chosen)))
    return len(chosen)
