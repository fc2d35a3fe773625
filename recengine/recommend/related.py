"""Related articles: candidates -> exact cosine -> filters -> duplicate suppression -> explanations.

:meth:`RelatedArticles.related` returns the body of DESIGN.md's HTTP contract::

    {"article": "id",
     "items": [{"id", "title", "url", "score", "reasons": {"shared_terms": [...], ...}}],
     "suppressed": [{"id", "duplicate_of", "distance"}],
     "floor": {"min_score", "dropped"}}

``score`` is the cosine of the two stored TF-IDF vectors (6 decimals); items are ordered by
score, ties by the earlier-ingested article. ``suppressed`` lists what would have been on this
page but is a near-duplicate (``recommend.criterion``) of the article itself
(``duplicate_of`` = the article) or of an item ranked above it (``duplicate_of`` = that item),
with the Hamming distance of their fingerprints, so an editor can see why X is not shown.

The relevance floor: items scoring below ``min_score`` (the request's, else
``related.min_score``) are left out, so a list can be shorter than ``k`` rather than padded with
junk; ``floor.dropped`` says how many of this page's places were left empty by it. The floor
cuts the list after suppression (scores only fall down the list, so the items above it, and the
suppressed ones among them, are exactly those of a list ranked with the floor as a filter).

The query article's own vector is read from SQL, so an article ingested a moment ago gets
related items right away, from the index as caught up at that moment (``recommend.live``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt
from sqlalchemy import Row
from sqlalchemy.orm import Session

from recengine.config import Settings
from recengine.derived.rows import epoch, label_hashes
from recengine.errors import ModelMissing, NotFound
from recengine.features.tfidf import EMPTY_VECTOR, SparseVector
from recengine.index.view import Hits, RowFilter
from recengine.recommend.criterion import (
    NO_CLUSTER,
    Articles,
    DuplicateCriterion,
    VectorAt,
    anonymous,
)
from recengine.recommend.explain import shared_terms
from recengine.recommend.live import LiveIndex, Snapshot, search_params
from recengine.recommend.params import Filters, check_id, check_int
from recengine.recommend.suppress import Picked, pick
from recengine.storage.clusters import clusters_of
from recengine.storage.index_source import briefs, internal_ids, query_article
from recengine.storage.state import read_state

# When suppression and filters leave fewer than offset + k results, candidates grow by this
# factor, at most this many times (then the list is what it is: there are no more).
GROWTH, MAX_ROUNDS = 4, 4


@dataclass(frozen=True)
class Query:
    """The article a list is about: internal id, vector, fingerprint, labels."""

    id: int
    external_id: str
    vector: SparseVector
    fingerprint: int
    category: str | None
    tags: tuple[str, ...]


class RelatedArticles:
    """The related-articles use case. One per process; safe to share between threads.

    Args:
        settings: ``related`` and ``features.hamming_k`` settings.
        index: the process's live index.
    """

    def __init__(self, settings: Settings, index: LiveIndex) -> None:
        self.settings = settings
        self.index = index
        self.criterion = DuplicateCriterion.from_settings(settings)

    def related(
        self,
        article_id: str,
        *,
        session: Session,
        k: int | str | None = None,
        offset: int | str = 0,
        **filters: Any,
    ) -> dict[str, Any]:
        """The related-articles body for ``article_id`` (the caller's id).

        Args:
            article_id: the article.
            session: a session of the caller (read only; nothing is written).
            k: results wanted (``related.default_k`` when None; at most ``related.max_k``).
            offset: results skipped (paging).
            **filters: ``exclude`` (caller ids), ``categories``, ``tags``,
                ``published_after``, ``published_before`` (aware datetimes or ISO 8601),
                ``min_score`` (0-1; ``related.min_score`` when not given).

        Raises:
            InvalidRequest: a parameter is invalid. NotFound: no live article has this id.
            ModelMissing: no IDF model has been fitted yet.
        """
        r = self.settings.related
        article_id = check_id(article_id)
        k = check_int(r.default_k if k is None else k, "k", 1, r.max_k)
        offset = check_int(offset, "offset", 0, r.max_offset)
        parsed = Filters.parse(r.max_filter_values, **filters)
        snap = self.index.current(session=session)
        query = load_query(session, snap, article_id)
        row_filter = to_row_filter(session, parsed, exclude=[query.id])
        floor = r.min_score if parsed.min_score is None else parsed.min_score
        hits, picked = self._ranked(session, snap, query, row_filter, 0.0, offset + k)
        picked, dropped = under_floor(hits, picked, floor, offset, k)
        body = self._body(session, snap, query, hits, picked, offset, k)
        body["floor"] = {"min_score": floor, "dropped": dropped}
        return body

    def _ranked(
        self,
        session: Session,
        snap: Snapshot,
        query: Query,
        row_filter: RowFilter,
        min_score: float,
        wanted: int,
    ) -> tuple[Hits, Picked]:
        """Candidates, best first, and the ones kept after suppression (``wanted`` at most)."""
        n = max(self.settings.related.candidates, 3 * wanted)
        for _ in range(MAX_ROUNDS):
            params = search_params(self.settings, n)
            hits = snap.view.search(
                query.vector.hashes, query.vector.weights, params, row_filter, query.id
            )
            hits = above(hits, min_score)
            picked = self._pick(session, snap, hits, query, wanted)
            if len(picked.kept) >= wanted or len(hits) < n:
                break
            n *= GROWTH
        return hits, picked

    def _pick(
        self, session: Session, snap: Snapshot, hits: Hits, query: Query, wanted: int
    ) -> Picked:
        """Suppression over a growing prefix of ``hits``: clusters are looked up only for the
        candidates it needs (usually a few more than ``wanted``)."""
        window = min(len(hits), 2 * wanted + 8)
        stored = hit_vectors(snap, hits)
        while True:
            # one look-up for the query and the candidates: its cluster may have changed too
            ids = np.concatenate((np.array([query.id], np.int64), hits.ids[:window]))
            prints = np.concatenate(
                (np.array([query.fingerprint], np.uint64), hits.fingerprints[:window])
            )
            found = with_clusters(
                session, ids, prints, lambda j: query.vector if j == 0 else stored(j - 1)
            )
            prefix = found.take(range(1, len(ids)))
            picked = pick(prefix, found.take([0]), self.criterion, wanted)
            if len(picked.kept) >= wanted or window >= len(hits):
                return picked
            window = min(len(hits), window * GROWTH)

    def _body(
        self,
        session: Session,
        snap: Snapshot,
        query: Query,
        hits: Hits,
        picked: Picked,
        offset: int,
        k: int,
    ) -> dict[str, Any]:
        page = picked.kept[offset : offset + k]
        shown = [s for s in picked.suppressed if s.kept_before >= offset]
        ids = [int(hits.ids[i]) for i in page] + [int(hits.ids[s.position]) for s in shown]
        facts = briefs(session=session, ids=ids + [s.duplicate_of for s in shown])
        external = {i: row.external_id for i, row in facts.items()}
        external[query.id] = query.external_id
        items = []
        for i in page:
            row = facts.get(int(hits.ids[i]))
            if row is None:  # deleted since the index caught up
                continue
            vec = snap.view.vector(int(hits.part[i]), int(hits.row[i]))
            items.append(item(row, float(hits.scores[i]), self.reasons(query, row, *vec)))
        suppressed = [
            {
                "id": external[int(hits.ids[s.position])],
                "duplicate_of": external[s.duplicate_of],
                "distance": s.distance,
            }
            for s in shown
            if int(hits.ids[s.position]) in external and s.duplicate_of in external
        ]
        return {"article": query.external_id, "items": items, "suppressed": suppressed}

    def reasons(
        self,
        query: Query,
        row: Row[Any],
        hashes: np.ndarray[Any, Any],
        weights: np.ndarray[Any, Any],
    ) -> dict[str, Any]:
        """The explanation of one item: shared terms, and shared category and tags."""
        tags = [t for t in (row.tags or ()) if t in query.tags]
        return {
            "shared_terms": shared_terms(
                query.vector, hashes, weights, self.settings.related.explain_terms
            ),
            "same_category": bool(query.category) and row.category == query.category,
            "shared_tags": tags,
        }


def load_query(session: Session, snap: Snapshot, external_id: str) -> Query:
    """The query article with its stored vector (the active model's, else the snapshot's)."""
    row = query_article(session=session, external_id=external_id, version=snap.version)
    if row is not None and row.vector is None:
        active = read_state(session=session).active_model_version
        if active != snap.version:  # a reindex switched models; the index catches up soon
            row = query_article(session=session, external_id=external_id, version=active)
    if row is None:
        raise NotFound(f"no article with id {external_id!r}")
    if row.vector is None:
        raise ModelMissing(f"article {external_id!r} has no features yet: run `recengine reindex`")
    vector = SparseVector.from_bytes(row.vector) if row.vector else EMPTY_VECTOR
    tags = tuple(t for t in (row.tags or ()) if isinstance(t, str))
    return Query(row.id, row.external_id, vector, row.fingerprint, row.category, tags)


def to_row_filter(session: Session, filters: Filters, exclude: Sequence[int]) -> RowFilter:
    """The index filter of validated request filters (caller ids -> internal ids)."""
    excluded = list(exclude) + list(
        internal_ids(session=session, external_ids=list(filters.exclude)).values()
    )
    return RowFilter(
        exclude_ids=np.array(sorted(set(excluded)), dtype=np.int64),
        categories=label_hashes(filters.categories) if filters.categories else None,
        tags=label_hashes(filters.tags) if filters.tags else None,
        published_after=epoch(filters.published_after) if filters.published_after else None,
        published_before=epoch(filters.published_before) if filters.published_before else None,
    )


def under_floor(
    hits: Hits, picked: Picked, floor: float, offset: int, k: int
) -> tuple[Picked, int]:
    """``picked`` without what scores below ``floor``, and how many of the page's places
    (``offset`` .. ``offset + k``) that left empty."""
    if floor <= 0:
        return picked, 0
    scores = hits.scores
    kept = [i for i in picked.kept if scores[i] >= floor]
    page = len(picked.kept[offset : offset + k])
    suppressed = [s for s in picked.suppressed if scores[s.position] >= floor]
    return Picked(kept, suppressed), page - len(kept[offset : offset + k])


def above(hits: Hits, min_score: float) -> Hits:
    """The prefix of ``hits`` (best first) scoring at least ``min_score``."""
    if min_score <= 0:
        return hits
    n = int(np.searchsorted(-hits.scores, -min_score, side="right"))
    return Hits(hits.part[:n], hits.row[:n], hits.ids[:n], hits.scores[:n], hits.fingerprints[:n])


def with_clusters(
    session: Session, ids: npt.NDArray[np.int64], prints: npt.NDArray[np.uint64], vector: VectorAt
) -> Articles:
    """Articles with their cluster (canonical id) looked up in ``cluster_members``."""
    found = clusters_of(session=session, article_ids=[int(i) for i in ids])
    clusters = np.array([found.get(int(i), NO_CLUSTER) for i in ids], dtype=np.int64)
    return Articles(np.asarray(ids, np.int64), np.asarray(prints, np.uint64), clusters, vector)


def hit_vectors(snap: Snapshot, hits: Hits) -> VectorAt:
    """``j -> stored vector of hits[j]``, read from the index when asked for."""

    def vector(j: int) -> SparseVector:
        return anonymous(*snap.view.vector(int(hits.part[j]), int(hits.row[j])))

    return vector


def item(row: Row[Any], score: float, reasons: dict[str, Any]) -> dict[str, Any]:
    """One entry of ``items``."""
    return {
        "id": row.external_id,
        "title": row.title,
        "url": row.url,
        "score": round(score, 6),
        "reasons": reasons,
    }
