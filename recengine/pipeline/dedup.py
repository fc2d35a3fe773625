"""Keeping near-duplicate clusters in SQL right: at ingest (incremental) and at reindex (all).

Clusters are stored per IDF model version (``storage.clusters``); readers see the active one.

At ingest, inside the batch's write transaction and after its features are written,
:meth:`Deduplicator.update` recomputes the clusters of exactly the articles a change can affect:
the connected components (of the verified near-duplicate graph) that contain a changed
article or a former cluster-mate of one. Leader clustering is local to components
(:mod:`recengine.pipeline.clustering`), so the result equals a full recluster. Rows are
replaced in the same transaction, so a crash leaves the batch and its clusters both in or both
out.

At reindex, :meth:`Deduplicator.cluster_all` computes every cluster of the new version before
the switch, outside the writers' lock: every pair within the candidate radius (self-join of the
new version's index), verified, assigned, written under the new version in short transactions;
the articles changed meanwhile are then brought up to date with :meth:`update_version`, the
last few inside the switch (``pipeline.switch``). :meth:`recluster` does the same in one
transaction for the active version (a reference for tests and repairs).

The index of writers is the process's near-duplicate :class:`~recengine.index.follower.Follower`.
Call :meth:`Deduplicator.prepare` before a write transaction: a first use or a model switch
then loads (or builds) the index outside the writers' lock, and the sync inside the
transaction only applies the last few changes.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager, nullcontext
from dataclasses import dataclass, field

import numpy as np
from sqlalchemy.orm import Session, sessionmaker

from recengine.config import Settings
from recengine.derived.neardup import neardup_follower
from recengine.features.neardup import NearDupCriterion
from recengine.features.tfidf import SparseVector
from recengine.index.follower import Follower
from recengine.index.neardup import NearDupIndex
from recengine.pipeline.clustering import Edge, Member, assign, rank_key, verify_pairs
from recengine.pipeline.featurize import text_of
from recengine.storage.articles import titles_and_contents
from recengine.storage.clusters import (
    MemberRow,
    delete_version,
    insert_rows,
    published,
    replace_rows,
    rows_touching,
)
from recengine.storage.db import transaction
from recengine.storage.features import features_of
from recengine.storage.index_rows import SqlIndexRows, index_rows
from recengine.storage.state import read_state
from recengine.text.shingles import Shingles, shingles

PAIR_CHUNK = 50_000
WRITE_CHUNK = 1_000  # cluster rows per short write transaction (a reindex, before its switch)


class Deduplicator:
    """Cluster maintenance for one process (holds its synced index).

    Args:
        settings: candidate radius, verification threshold, index file.
        index: a synced index to share (e.g. with the read API); built from settings if omitted.
    """

    def __init__(self, settings: Settings, index: Follower[NearDupIndex] | None = None) -> None:
        self.criterion = NearDupCriterion.from_settings(settings)
        self.index = index or neardup_follower(settings)
        self.k = settings.features.hamming_k
        self.strip = settings.features.strip_boilerplate

    @contextmanager
    def pending(self) -> Iterator[None]:
        """Wrap a write transaction that calls :meth:`update` (see ``Follower.pending``)."""
        with self.index.pending():
            yield

    def prepare(self, factory: sessionmaker[Session]) -> None:
        """Bring the index up to date in a read transaction of its own: call before a write
        transaction, so that a load or build after a model switch happens outside its lock."""
        with index_rows(factory) as rows:
            self.index.sync(rows)

    def synced(self, session: Session) -> NearDupIndex:
        """The index caught up with ``session``'s transaction (its own writes included)."""
        held = self.index.sync(SqlIndexRows(session))
        return NearDupIndex(self.k) if held is None else held.index

    def update(self, session: Session, changed: Iterable[int]) -> int:
        """Recluster the components touched by ``changed`` articles under the active version,
        in the caller's (write) transaction; returns the rows written."""
        seeds = set(changed)
        version = read_state(session=session).active_model_version
        if not seeds or version is None:
            return 0
        return self.update_version(session, seeds, version, self.synced(session))

    def update_version(
        self, session: Session, changed: Iterable[int], version: int, index: NearDupIndex
    ) -> int:
        """Recluster the components touched by ``changed`` under ``version``, with ``index``
        (that version's fingerprints); returns the rows written."""
        return self.plan_version(session, changed, version, index).write(session)

    def plan_version(
        self, session: Session, changed: Iterable[int], version: int, index: NearDupIndex
    ) -> ClusterPlan:
        """What :meth:`update_version` would write, read in ``session`` and not written yet.

        For a version only this process writes (a reindex's new one, before its switch): the
        reading can run in a read transaction and the writing in a short write transaction.
        """
        nodes, edges = self._components(session, index, version, set(changed))
        return ClusterPlan(version, sorted(nodes), self._assign(session, edges))

    def recluster(self, session: Session) -> int:
        """Replace every cluster row of the active version from a full self-join, in the
        caller's transaction; returns the rows written."""
        version = read_state(session=session).active_model_version
        if version is None:
            return 0
        delete_version(session=session, version=version)
        edges = self._all_edges(lambda: nullcontext(session), self.synced(session), version)
        members = self._assign(session, edges)
        insert_rows(session=session, version=version, rows=members)
        return len(members)

    def cluster_all(self, factory: sessionmaker[Session], version: int, index: NearDupIndex) -> int:
        """Every cluster of ``version`` from a full self-join of ``index``, read and written in
        short transactions (a reindex, before its switch: readers do not see the version yet).

        Returns:
            The rows written.
        """
        edges = self._all_edges(lambda: transaction(factory), index, version)
        return self.cluster_edges(factory, version, edges)

    def cluster_edges(
        self, factory: sessionmaker[Session], version: int, edges: Sequence[Edge]
    ) -> int:
        """Clusters of ``version`` from verified ``edges`` (e.g. Spark's), replacing every row
        of that version in short transactions; returns the rows written."""
        with transaction(factory) as session:
            members = self._assign(session, edges)
        while True:
            with transaction(factory) as session:
                if not delete_version(session=session, version=version, limit=WRITE_CHUNK):
                    break
        for start in range(0, len(members), WRITE_CHUNK):
            with transaction(factory) as session:
                insert_rows(
                    session=session, version=version, rows=members[start : start + WRITE_CHUNK]
                )
        return len(members)

    def save(self) -> None:
        """Write the index file (call after the transaction committed)."""
        self.index.save()

    def _all_edges(
        self,
        reading: Callable[[], AbstractContextManager[Session]],
        index: NearDupIndex,
        version: int,
    ) -> list[Edge]:
        """Every verified pair of ``index``; features and texts read a chunk of pairs at a time."""
        pairs = index.pairs()
        edges: list[Edge] = []
        for start in range(0, len(pairs), PAIR_CHUNK):
            a, b = pairs.a[start : start + PAIR_CHUNK], pairs.b[start : start + PAIR_CHUNK]
            with reading() as session:
                fps, vectors, texts = self._load(session, version, set(np.union1d(a, b).tolist()))
            edges += verify_pairs(a, b, fps, vectors, self.criterion, texts)
        return edges

    def _components(
        self, session: Session, index: NearDupIndex, version: int, seeds: set[int]
    ) -> tuple[set[int], list[Edge]]:
        """Closure of ``seeds`` under verified edges and existing cluster rows."""
        nodes: set[int] = set()
        edges: dict[tuple[int, int], Edge] = {}
        frontier = set(seeds)
        loaded = _Loaded()  # each article's features and shingles are loaded once per call
        while frontier:
            nodes |= frontier
            for row in rows_touching(
                session=session, version=version, article_ids=sorted(frontier)
            ):
                for other in (row.article_id, row.canonical_id):
                    if other not in nodes:
                        frontier.add(other)
            live = [i for i in sorted(frontier) if i in index]
            found = index.search_many(np.array([index.fingerprint(i) for i in live], np.uint64))
            others = {
                s: [h for h in found.hits(q)[0].tolist() if h != s] for q, s in enumerate(live)
            }
            others = {s: hits for s, hits in others.items() if hits}
            # Only articles in a candidate pair are loaded (most new articles have none).
            involved = set(others) | {h for hits in others.values() for h in hits}
            fps, vectors, texts = self._load(session, version, involved, loaded)
            for source, hits in others.items():
                pair_a = np.array([min(source, h) for h in hits])
                pair_b = np.array([max(source, h) for h in hits])
                for e in verify_pairs(pair_a, pair_b, fps, vectors, self.criterion, texts):
                    edges[(e.a, e.b)] = e
            frontier = {x for e in edges.values() for x in (e.a, e.b)} - nodes
        return nodes, list(edges.values())

    def _assign(self, session: Session, edges: Sequence[Edge]) -> list[MemberRow]:
        ids = sorted({x for e in edges for x in (e.a, e.b)})
        dates = published(session=session, article_ids=ids)
        ranks = {i: rank_key(i, dates.get(i)) for i in ids}
        return [_row(m) for m in assign(ranks, edges)]

    def _load(
        self, session: Session, version: int, ids: set[int], loaded: _Loaded | None = None
    ) -> tuple[dict[int, int], dict[int, SparseVector], dict[int, Shingles]]:
        """Fingerprints, vectors and text shingles of the given articles (and of those already
        in ``loaded``, which only the missing ones are added to)."""
        loaded = loaded or _Loaded()
        missing = sorted(ids - loaded.fps.keys())
        rows = features_of(session=session, version=version, article_ids=missing)
        loaded.fps.update({r.article_id: r.fingerprint for r in rows})
        loaded.vectors.update({r.article_id: SparseVector.from_bytes(r.vector) for r in rows})
        texts = titles_and_contents(session=session, article_ids=[r.article_id for r in rows])
        loaded.shingles.update(
            {i: shingles(text_of(t, c, self.strip)) for i, (t, c) in texts.items()}
        )
        return loaded.fps, loaded.vectors, loaded.shingles


@dataclass(frozen=True)
class ClusterPlan:
    """The cluster rows of ``version`` to replace: those of ``nodes`` by ``members``."""

    version: int
    nodes: list[int]
    members: list[MemberRow]

    def write(self, session: Session) -> int:
        """Replace the rows (in the caller's write transaction); returns how many."""
        replace_rows(
            session=session, version=self.version, article_ids=self.nodes, rows=self.members
        )
        return len(self.members)


@dataclass
class _Loaded:
    fps: dict[int, int] = field(default_factory=dict)
    vectors: dict[int, SparseVector] = field(default_factory=dict)
    shingles: dict[int, Shingles] = field(default_factory=dict)


def _row(m: Member) -> MemberRow:
    return MemberRow(m.article_id, m.canonical_id, m.distance, m.score)
