"""Keeping near-duplicate clusters in SQL right: at ingest (incremental) and at reindex (all).

At ingest, inside the batch's write transaction and after its features are written,
:meth:`Deduplicator.update` recomputes the clusters of exactly the articles a change can affect:
the connected components (of the verified near-duplicate graph) that contain a changed
article or a former cluster-mate of one. Leader clustering is local to components
(:mod:`recengine.pipeline.clustering`), so the result equals a full recluster. Rows are
replaced in the same transaction, so a crash leaves the batch and its clusters both in or both
out.

At reindex, :meth:`Deduplicator.recluster` runs in the switch transaction: every pair within
the candidate radius (self-join of the index), verified, assigned; all rows replaced.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field

import numpy as np
from sqlalchemy.orm import Session

from recengine.config import Settings
from recengine.features.neardup import NearDupCriterion
from recengine.features.tfidf import SparseVector
from recengine.index.neardup import NearDupIndex
from recengine.index.synced import SyncedIndex
from recengine.pipeline.clustering import Edge, Member, assign, rank_key, verify_pairs
from recengine.pipeline.featurize import text_of
from recengine.storage.articles import titles_and_contents
from recengine.storage.clusters import (
    MemberRow,
    delete_all,
    insert_rows,
    published,
    replace_rows,
    rows_touching,
)
from recengine.storage.features import features_of
from recengine.storage.fingerprints import SqlFingerprints
from recengine.storage.state import read_state
from recengine.text.shingles import Shingles, shingles

PAIR_CHUNK = 50_000


def synced_index(settings: Settings) -> SyncedIndex:
    """The process's index, persisted as ``neardup.index_file`` in ``data_dir``."""
    n = settings.neardup
    return SyncedIndex(
        settings.data_dir / n.index_file,
        settings.features.hamming_k,
        refresh_interval=n.refresh_interval,
        save_after=n.save_after,
    )


class Deduplicator:
    """Cluster maintenance for one process (holds its synced index).

    Args:
        settings: candidate radius, verification threshold, index file.
        index: a synced index to share (e.g. with the read API); built from settings if omitted.
    """

    def __init__(self, settings: Settings, index: SyncedIndex | None = None) -> None:
        self.criterion = NearDupCriterion.from_settings(settings)
        self.index = index or synced_index(settings)
        self.strip = settings.features.strip_boilerplate

    @contextmanager
    def pending(self) -> Iterator[None]:
        """Wrap a write transaction that calls :meth:`update` (see ``SyncedIndex.pending``)."""
        with self.index.pending():
            yield

    def update(self, session: Session, changed: Iterable[int]) -> int:
        """Recluster the components touched by ``changed`` articles; returns rows written."""
        seeds = set(changed)
        version = read_state(session=session).active_model_version
        if not seeds or version is None:
            return 0
        index = self.index.sync(SqlFingerprints(session))
        nodes, edges = self._components(session, index, version, seeds)
        members = self._assign(session, edges)
        replace_rows(session=session, article_ids=sorted(nodes), rows=members)
        return len(members)

    def recluster(self, session: Session) -> int:
        """Replace every cluster row from a full self-join; returns the rows written."""
        delete_all(session=session)
        version = read_state(session=session).active_model_version
        if version is None:
            return 0
        index = self.index.sync(SqlFingerprints(session))
        pairs = index.pairs()
        edges: list[Edge] = []
        for start in range(0, len(pairs), PAIR_CHUNK):
            a, b = pairs.a[start : start + PAIR_CHUNK], pairs.b[start : start + PAIR_CHUNK]
            fps, vectors, texts = self._load(session, version, set(np.union1d(a, b).tolist()))
            edges += verify_pairs(a, b, fps, vectors, self.criterion, texts)
        members = self._assign(session, edges)
        insert_rows(session=session, rows=members)
        return len(members)

    def save(self) -> None:
        """Write the index file (call after the transaction committed)."""
        self.index.save()

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
            for row in rows_touching(session=session, article_ids=sorted(frontier)):
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


@dataclass
class _Loaded:
    fps: dict[int, int] = field(default_factory=dict)
    vectors: dict[int, SparseVector] = field(default_factory=dict)
    shingles: dict[int, Shingles] = field(default_factory=dict)


def _row(m: Member) -> MemberRow:
    return MemberRow(m.article_id, m.canonical_id, m.distance, m.score)
