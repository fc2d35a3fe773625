"""The clusters as a write transaction's plan sees them
(``pipeline.clusters.leader_updates.ClusterView``).

``pipeline.clusters.upkeep`` re-decides the articles a write can affect
(``pipeline.clusters.leader_updates.relink``) through this view: their candidates from the version's
indexes, the stored cluster rows from SQL, and verification by
``pipeline.clusters.verify.PairJudge``. What it reads is cached for the transaction: the stored rows
do not change while the plan is made, and a batch of templated pages has the whole cluster among the
candidates of each page, so each member's status is read once per batch, not once per page.

Array contracts: ids ``int64``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

import numpy as np
from sqlalchemy.orm import Session

from recengine.index.neardup.candidates import Candidates
from recengine.index.neardup.radius import IdArray
from recengine.pipeline.clusters.leader_rule import Edge, rank_key
from recengine.pipeline.clusters.leader_updates import Ids, Rank
from recengine.pipeline.clusters.verify import Kept, Loaded, PairJudge
from recengine.storage.rows.clusters import (
    canonicals_of,
    earliest_members,
    live_published,
    members_of_all,
    not_members,
    published,
)
from recengine.text.neardup.kept import KeptTexts

_UNKNOWN, _MEMBER, _FREE = -1, 0, 1  # stored status of an id, as read in one plan
_PREFETCH = 256  # candidate canonicals of one article read at once (more: as verified)
_PREFETCH_BATCH = 8_192  # those of a whole batch read at once (more: an article's at a time)


class SqlClusterView:
    """:class:`recengine.pipeline.clusters.leader_updates.ClusterView` over SQL (rows of one model
    version) and that version's index, for one write transaction (what it reads is cached for
    it)."""

    def __init__(
        self,
        session: Session,
        index: Candidates,
        version: int,
        judge: PairJudge,
        batch: Iterable[int] = (),
        kept: Kept | None = None,
    ) -> None:
        self.session, self.index, self.version, self.judge = session, index, version, judge
        self.loaded = Loaded(kept=KeptTexts(0) if kept is None else kept)
        self.batch = set(batch)  # the written articles: loaded together at the first verify
        self.found: dict[int, IdArray] = {}
        self.looked: set[int] = set()  # the articles whose candidates were looked at
        self.heads_index = index.canonicals  # the canonicals at the start (None: read SQL)
        # What was read of the stored rows (they do not change while the plan is made): a
        # batch of templated pages has the whole cluster among the candidates of each page,
        # and each member's status is read once per batch, not once per page.
        self.status = np.full(0, _UNKNOWN, np.int8)  # by id: _UNKNOWN, _MEMBER or _FREE
        self.heads: dict[int, int] = {}  # member -> stored canonical
        self.canonicals_of: dict[int, IdArray] = {}  # index.of_canonicals, asked once each
        self.rank: dict[int, Rank | None] = {}  # None: deleted

    def candidates(self, article_id: int) -> IdArray:
        self.looked.add(article_id)
        if article_id not in self.found:
            self.found[article_id] = self.index.of(article_id)
        return self.found[article_id]

    def canonical_candidates(self, article_id: int) -> IdArray:
        """The canonicals among the article's candidates; what verifying it against them
        needs is read now, for all of them at once when they are not too many (a read per
        verification cost more than the verifications of long articles, BENCHMARKS.md; a
        crowd of templated pages may offer thousands, of which the first few decide)."""
        self.looked.add(article_id)
        if self.batch:
            self._prefetch_batch()
        found = self._canonicals_of(article_id)
        if len(found) <= _PREFETCH:
            self._load(article_id, *found.tolist())
        return found

    def _canonicals_of(self, article_id: int) -> IdArray:
        found = self.canonicals_of.get(article_id)
        if found is None:
            found = self.canonicals_of[article_id] = self.index.of_canonicals(article_id)
        return found

    def _prefetch_batch(self) -> None:
        """Read at once what deciding the written articles will read: their candidate
        canonicals' fingerprints, texts and ranks (one read each for the whole batch where
        a decision each cost three, BENCHMARKS.md), unless they are too many to hold."""
        batch, self.batch = self.batch, set()
        wanted = set(batch)
        for x in sorted(batch):
            found = self._canonicals_of(x)
            if len(found) <= _PREFETCH:
                wanted.update(found.tolist())
            if len(wanted) > _PREFETCH_BATCH:
                wanted = set(batch)
                break
        self.judge.load(self.session, self.version, wanted, self.loaded)
        self.ranks(sorted(wanted))

    def among_candidates(self, article_id: int, ids: Ids) -> IdArray:
        return self.index.among(article_id, np.asarray(ids, dtype=np.int64))

    def stored(self, article_ids: Sequence[int]) -> Mapping[int, int]:
        ids = self._known(article_ids)
        if self.heads_index is not None:  # those in it have no row: no need to ask
            ids = ids[~self.heads_index.contains_many(ids)]
        maybe = set(ids[self.status[ids] != _FREE].tolist())  # members and the unknown
        unknown = sorted(i for i in maybe if i not in self.heads)
        if unknown:
            found = canonicals_of(session=self.session, version=self.version, article_ids=unknown)
            self.heads.update(found)
            self.status[unknown] = _FREE
            self.status[list(found)] = _MEMBER
        return {i: self.heads[i] for i in ids.tolist() if i in self.heads}

    def unclustered(self, article_ids: Ids) -> Sequence[int]:
        ids = self._known(article_ids)
        if self.heads_index is not None:  # candidates are indexed: in it = no member row
            heads: list[int] = np.unique(ids[self.heads_index.contains_many(ids)]).tolist()
            return heads
        unknown = np.unique(ids[self.status[ids] == _UNKNOWN])
        if len(unknown):
            free = not_members(
                session=self.session, version=self.version, article_ids=unknown.tolist()
            )
            self.status[unknown] = _MEMBER
            self.status[free] = _FREE
        free_ids: list[int] = np.unique(ids[self.status[ids] == _FREE]).tolist()
        return free_ids

    def _known(self, article_ids: Ids) -> IdArray:
        """``article_ids`` as an array, the status table grown to hold them."""
        ids = np.asarray(article_ids, dtype=np.int64).reshape(-1)
        top = int(ids.max()) + 1 if len(ids) else 0
        if top > len(self.status):
            grown = np.full(max(top, 2 * len(self.status)), _UNKNOWN, np.int8)
            grown[: len(self.status)] = self.status
            self.status = grown
        return ids

    def members(self, canonical_ids: Sequence[int]) -> Sequence[int]:
        return members_of_all(
            session=self.session, version=self.version, canonical_ids=canonical_ids
        )

    def ranks(self, article_ids: Sequence[int]) -> Mapping[int, Rank]:
        rank = self.rank
        missing = [i for i in article_ids if i not in rank]
        if missing:
            dates = live_published(session=self.session, article_ids=missing)
            for i in missing:
                rank[i] = rank_key(i, dates[i]) if i in dates else None
        return {i: r for i in article_ids if (r := rank[i]) is not None}

    def verify(self, article_id: int, canonical_id: int) -> Edge | None:
        self._load(article_id, canonical_id)
        return self.judge.edge(article_id, canonical_id, self.loaded)

    def measure(self, a: int, b: int) -> tuple[int, float]:
        """Distance and score of a pair with features (a row the editors put there)."""
        self._load(a, b)
        v = self.judge.decision(a, b, self.loaded)
        if v is None:
            raise ValueError(f"no features for {a} or {b}")
        return v.distance, v.score

    def earliest(self, canonical_id: int) -> int:
        """The earliest-ranked of a stored canonical and its members (deleted included)."""
        found = earliest_members(
            session=self.session, version=self.version, canonical_id=canonical_id
        )
        found.update(published(session=self.session, article_ids=[canonical_id]))
        return min(found, key=lambda i: rank_key(i, found[i]), default=canonical_id)

    def _load(self, *ids: int) -> None:
        if self.batch:
            self._prefetch_batch()
        fps = self.loaded.fps
        if any(i not in fps for i in ids):
            self.judge.load(self.session, self.version, ids, self.loaded)
