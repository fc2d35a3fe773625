"""Reader feedback counters (``feedback_counts``): impressions and clicks per day, list
article, variant and slot.

Counters are added with one ``INSERT ... ON CONFLICT DO UPDATE`` per batch (both PostgreSQL and
SQLite 3.24+ have it), so concurrent writers (several server processes) add up instead of
overwriting each other, and a batch is one statement whatever its size.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import date
from typing import Any, cast

from sqlalchemy import Table, delete, func, select
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.orm import Session

from recengine.storage.models import Article, FeedbackCount
from recengine.storage.rows.articles import in_chunks

# (day, article id, variant, slot) -> (impressions, clicks)
CountKey = tuple[date, int, str, int]


@dataclass(frozen=True)
class CountRow:
    day: date
    article: str
    variant: str
    slot: int
    impressions: int
    clicks: int


def add_counts(*, session: Session, counts: Mapping[CountKey, tuple[int, int]]) -> None:
    """Add the counts to the stored counters (creating rows as needed). Never commits.

    One upsert statement executed for all rows (the DB-API's executemany): the statement is
    compiled once per process and cached, where a multi-row VALUES of a batch's own length was
    compiled again for every batch (7 ms of a 10 ms flush, on the thread that shares the
    server worker's interpreter with the related lists).
    """
    if not counts:
        return
    rows = [
        {"day": d, "article_id": a, "variant": v, "slot": s, "impressions": i, "clicks": c}
        for (d, a, v, s), (i, c) in sorted(counts.items())  # one lock order for every writer
    ]
    session.connection().execute(_upsert(session.get_bind().dialect.name), rows)


def _upsert(dialect: str) -> Any:
    table = cast(Table, FeedbackCount.__table__)  # the Core table: compiled once, cached
    make = postgresql.insert if dialect == "postgresql" else sqlite.insert
    statement: Any = make(table)
    return statement.on_conflict_do_update(
        index_elements=["day", "article_id", "variant", "slot"],
        set_={
            "impressions": table.c.impressions + statement.excluded.impressions,
            "clicks": table.c.clicks + statement.excluded.clicks,
        },
    )


def article_ids(*, session: Session, external_ids: Sequence[str]) -> dict[str, int]:
    """Caller id -> internal id of the live articles among ``external_ids``."""
    out: dict[str, int] = {}
    for chunk in in_chunks(list(external_ids)):
        rows = session.execute(
            select(Article.external_id, Article.id).where(
                Article.external_id.in_(chunk), Article.deleted_at.is_(None)
            )
        ).all()
        out.update({r.external_id: r.id for r in rows})
    return out


def counts_between(*, session: Session, first: date, last: date) -> list[CountRow]:
    """Every counter of the days ``first`` .. ``last`` (inclusive)."""
    rows = session.execute(
        select(
            FeedbackCount.day,
            Article.external_id,
            FeedbackCount.variant,
            FeedbackCount.slot,
            FeedbackCount.impressions,
            FeedbackCount.clicks,
        )
        .join(Article, Article.id == FeedbackCount.article_id)
        .where(FeedbackCount.day >= first, FeedbackCount.day <= last)
        .order_by(FeedbackCount.day, FeedbackCount.article_id, FeedbackCount.variant)
    ).all()
    return [CountRow(*r) for r in rows]


def totals_by(*, session: Session, first: date, last: date) -> list[tuple[str, int, int, int]]:
    """``(variant, slot, impressions, clicks)`` summed over the days and articles."""
    rows = session.execute(
        select(
            FeedbackCount.variant,
            FeedbackCount.slot,
            func.sum(FeedbackCount.impressions),
            func.sum(FeedbackCount.clicks),
        )
        .where(FeedbackCount.day >= first, FeedbackCount.day <= last)
        .group_by(FeedbackCount.variant, FeedbackCount.slot)
        .order_by(FeedbackCount.variant, FeedbackCount.slot)
    ).all()
    return [(str(v), int(s), int(i or 0), int(c or 0)) for v, s, i, c in rows]


def last_day(*, session: Session) -> date | None:
    """The latest day with counters."""
    found: date | None = session.scalar(select(func.max(FeedbackCount.day)))
    return found


def drop_before(*, session: Session, day: date) -> None:
    """Delete the counters of days before ``day`` (retention)."""
    session.execute(delete(FeedbackCount).where(FeedbackCount.day < day))


def most_clicked(*, session: Session, since: date, category: str | None, limit: int) -> list[int]:
    """Live articles (of ``category`` when given) with clicks counted under their lists on the
    days from ``since`` on, most clicked first (then more impressions, then the newer id):
    internal ids, at most ``limit``. (The counters are per list article: an article's clicks
    are its page's readers going on to read, its traffic and engagement together.)"""
    clicks = func.sum(FeedbackCount.clicks)
    statement = (
        select(FeedbackCount.article_id)
        .join(Article, Article.id == FeedbackCount.article_id)
        .where(FeedbackCount.day >= since, Article.deleted_at.is_(None))
        .group_by(FeedbackCount.article_id)
        .having(clicks > 0)
        .order_by(
            clicks.desc(),
            func.sum(FeedbackCount.impressions).desc(),
            FeedbackCount.article_id.desc(),
        )
        .limit(limit)
    )
    if category is not None:
        statement = statement.where(Article.category == category)
    return [int(a) for a in session.scalars(statement)]
