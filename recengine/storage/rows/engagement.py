"""Engagement counters (``engagement_counts``): impressions, clicks and examinations of an item
in a list article's list, per day.

Written with the feedback counters (``pipeline.feedback``), in the same way: one
``INSERT ... ON CONFLICT DO UPDATE`` executed for a batch, so concurrent writers add up. Read
as totals over a range of days (``recommend.signals.engagement``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import date
from typing import Any, cast

import numpy as np
import numpy.typing as npt
from sqlalchemy import Table, delete, func, select
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.orm import Session

from recengine.storage.models import EngagementCount
from recengine.storage.rows.articles import in_chunks

# (day, list article id, item id) -> (impressions, clicks, examined)
PairKey = tuple[date, int, int]
PairCounts = tuple[int, int, float]


@dataclass(frozen=True)
class PairTotals:
    """Totals per (list article, item) over some days, sorted by ``(source, item)``:
    ``source`` / ``item`` ``int64 (n,)``, ``clicks`` / ``examined`` ``float64 (n,)``."""

    source: npt.NDArray[np.int64]
    item: npt.NDArray[np.int64]
    clicks: npt.NDArray[np.float64]
    examined: npt.NDArray[np.float64]

    def __len__(self) -> int:
        return len(self.source)

    @classmethod
    def empty(cls) -> PairTotals:
        ids, values = np.zeros(0, np.int64), np.zeros(0, np.float64)
        return cls(ids, ids, values, values)


def add_pair_counts(*, session: Session, counts: Mapping[PairKey, PairCounts]) -> None:
    """Add the counts to the stored counters (creating rows as needed). Never commits."""
    if not counts:
        return
    rows = [
        {"day": d, "source_id": s, "item_id": i, "impressions": n, "clicks": c, "examined": x}
        for (d, s, i), (n, c, x) in sorted(counts.items())  # one lock order for every writer
    ]
    session.connection().execute(_upsert(session.get_bind().dialect.name), rows)


def _upsert(dialect: str) -> Any:
    table = cast(Table, EngagementCount.__table__)  # the Core table: compiled once, cached
    make = postgresql.insert if dialect == "postgresql" else sqlite.insert
    statement: Any = make(table)
    return statement.on_conflict_do_update(
        index_elements=["day", "source_id", "item_id"],
        set_={
            name: table.c[name] + statement.excluded[name]
            for name in ("impressions", "clicks", "examined")
        },
    )


def items_listed(*, session: Session, day: date, sources: Sequence[int]) -> dict[int, set[int]]:
    """The items counted already on ``day`` in each of the ``sources``' lists."""
    out: dict[int, set[int]] = {}
    for chunk in in_chunks(list(sources)):
        rows = session.execute(
            select(EngagementCount.source_id, EngagementCount.item_id).where(
                EngagementCount.day == day, EngagementCount.source_id.in_(chunk)
            )
        ).all()
        for source, item in rows:
            out.setdefault(int(source), set()).add(int(item))
    return out


def pair_totals(*, session: Session, first: date, last: date) -> PairTotals:
    """Clicks and examinations per (list article, item), summed over ``first`` .. ``last``."""
    rows = session.execute(
        select(
            EngagementCount.source_id,
            EngagementCount.item_id,
            func.sum(EngagementCount.clicks),
            func.sum(EngagementCount.examined),
        )
        .where(EngagementCount.day >= first, EngagementCount.day <= last)
        .group_by(EngagementCount.source_id, EngagementCount.item_id)
        .order_by(EngagementCount.source_id, EngagementCount.item_id)
    ).all()
    if not rows:
        return PairTotals.empty()
    source, item, clicks, examined = zip(*rows, strict=True)
    return PairTotals(
        np.array(source, np.int64),
        np.array(item, np.int64),
        np.array(clicks, np.float64),
        np.array(examined, np.float64),
    )


def drop_pairs_before(*, session: Session, day: date) -> int:
    """Delete the counters of days before ``day`` (they are past every window); how many."""
    result = session.execute(delete(EngagementCount).where(EngagementCount.day < day))
    return int(result.rowcount or 0)  # type: ignore[attr-defined]
