"""What a list reads of articles beyond the index's vectors: their briefs (what an item shows),
clusters, member rows and internal ids. One interface, two sources:

* :class:`HeldFacts`: the snapshot's briefs (``index.briefs``, followed from SQL like every
  derived index, as of the snapshot's position), so a list reads no SQL for them; a card
  derived by another rule than this process's (a reindex deriving cards again) is read from
  SQL when shown, and so is anything the briefs do not hold (never, when the snapshot has them:
  they are of the same position as the index);
* :class:`SqlFacts`: the same read from SQL in the request's session (a snapshot without
  briefs: a model opening in the background, or briefs a sequence apart).

Both answer alike: the tests compare them (``tests/recommend/test_facts.py``). A cluster is an
article's canonical, or the article itself when it is not a member (a canonical or alone): the
criterion only asks whether two articles share one (``recommend.lists.criterion``), which a
lone article's own id never makes true.

Array contracts: ids ``int64 (n,)``; clusters ``int64 (n,)`` (``criterion.NO_CLUSTER`` for an
article the briefs do not hold).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol

import numpy as np
import numpy.typing as npt
from sqlalchemy import Row
from sqlalchemy.orm import Session

from recengine.derived.rows import epoch
from recengine.index.briefs import Brief, Briefs
from recengine.recommend.live import Snapshot
from recengine.storage.rows.clusters import MemberRow, clusters_of, member_rows
from recengine.storage.rows.index_source import briefs, internal_ids
from recengine.times import utc_text

I64 = npt.NDArray[np.int64]


class Facts(Protocol):
    def briefs(self, ids: Sequence[int]) -> dict[int, Brief]:
        """Live articles' briefs, by id."""
        ...

    def clusters(self, ids: I64) -> I64:
        """Each article's cluster (see the module docstring)."""
        ...

    def members(self, ids: Sequence[int]) -> dict[int, MemberRow]:
        """The member rows of those of ``ids`` that are members, by id."""
        ...

    def internal(self, external_ids: Sequence[str]) -> dict[str, int]:
        """Internal ids of the live articles among ``external_ids``."""
        ...

    def seq_of(self, article: int) -> int | None:
        """The ``seq`` of the article's last change, when known without reading SQL (what
        keys a kept text: ``recommend.lists.listing.Texts``); None otherwise."""
        ...


class SqlFacts:
    """:class:`Facts` read from SQL in ``session``."""

    def __init__(self, session: Session) -> None:
        self.session = session

    def briefs(self, ids: Sequence[int]) -> dict[int, Brief]:
        return {i: brief_of_row(r) for i, r in briefs(session=self.session, ids=ids).items()}

    def clusters(self, ids: I64) -> I64:
        found = clusters_of(session=self.session, article_ids=ids.tolist())
        return np.fromiter((found.get(i, i) for i in ids.tolist()), np.int64, len(ids))

    # (a deleted article keeps its own id here, NO_CLUSTER in the briefs: neither matches any
    # other article's cluster, so the criterion's verdicts are the same)

    def members(self, ids: Sequence[int]) -> dict[int, MemberRow]:
        return member_rows(session=self.session, article_ids=ids) if ids else {}

    def internal(self, external_ids: Sequence[str]) -> dict[str, int]:
        if not external_ids:
            return {}
        return internal_ids(session=self.session, external_ids=list(external_ids))

    def seq_of(self, article: int) -> int | None:
        return None  # read with the text when it is read


class HeldFacts:
    """:class:`Facts` from a snapshot's briefs (see the module docstring).

    Args:
        held: the snapshot's briefs.
        sql: where a card of another rule is read again.
        rule: this process's card rule (``text.cleaning.excerpt.card_rule``).
    """

    def __init__(self, held: Briefs, sql: SqlFacts, rule: str) -> None:
        self.held, self.sql, self.rule = held, sql, rule

    def briefs(self, ids: Sequence[int]) -> dict[int, Brief]:
        out = self.held.many(ids)
        stale = [i for i, b in out.items() if b.card_rule != self.rule]
        if stale:  # derived again since the briefs were read: the card as SQL has it now
            for i, fresh in self.sql.briefs(stale).items():
                out[i] = out[i]._replace(
                    card_image=fresh.card_image,
                    card_summary=fresh.card_summary,
                    card_rule=fresh.card_rule,
                )
        return out

    def clusters(self, ids: I64) -> I64:
        return self.held.canonicals(np.asarray(ids, np.int64))

    def members(self, ids: Sequence[int]) -> dict[int, MemberRow]:
        out = {}
        for i, b in self.held.many(ids).items():
            if b.member:
                out[i] = MemberRow(i, b.canonical, b.distance, b.score, b.rule)
        return out

    def internal(self, external_ids: Sequence[str]) -> dict[str, int]:
        found = ((x, self.held.find(x)) for x in external_ids)
        return {x: i for x, i in found if i is not None}

    def seq_of(self, article: int) -> int | None:
        brief = self.held.get(article)
        return None if brief is None else brief.seq


def brief_of_row(row: Row[Any]) -> Brief:
    """A brief of a ``storage.rows.index_source.briefs`` row (no cluster: its own)."""
    shown = row._mapping
    tags = tuple(t for t in (row.tags or ()) if isinstance(t, str))
    published = shown.get("published_at")
    return Brief(
        int(row.id),
        row.external_id,
        row.title,
        row.url,
        shown.get("card_image"),
        shown.get("card_summary"),
        shown.get("card_rule"),
        utc_text(published),
        epoch(published),
        row.category,
        tags,
        None,
        None,
        0,
        int(row.seq),
        int(row.id),
    )


def facts_of(snap: Snapshot, session: Session, rule: str) -> Facts:
    """The facts a list made from ``snap`` reads: its briefs when it has them, else SQL."""
    sql = SqlFacts(session)
    return sql if snap.briefs is None else HeldFacts(snap.briefs, sql, rule)
