"""The exact ranking of related candidates from two sources: TF-IDF postings and dense
neighbours, scored by a blend of the two cosines.

::

    score(q, d) = (1 - w) * cos(tfidf_q, tfidf_d) + w * cos(lsa_q, lsa_d)        w = dense_weight

Candidates: the related index's (postings heads, filtered before its cut, ``index.related.view``)
and the dense index's ``dense_candidates`` nearest neighbours of the query's LSA vector (FAISS,
``index.dense``), filtered the same way. Every candidate of either source is scored exactly on
both parts from the stored vectors (float64, row by row), sorted by score, ties by the smaller
id; ``Hits.dense`` keeps each item's dense share (``w * cos_lsa``) for its explanation.

The dense part is off, and the ranking is the TF-IDF one as it was, when ``w = 0``, when the
version has no dense model (small corpora: ``dense.min_articles``), or when no term of the
query is in the model (its LSA vector is zero).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from recengine.index.dense import F32, F64, I64, DenseIndex, dots
from recengine.index.ids import among
from recengine.index.related.segment import U64
from recengine.index.related.view import Hits, IndexView, RowFilter, SearchParams


@dataclass(frozen=True, eq=False)
class DenseQuery:
    """The query's side of the dense part: its LSA vector, the index, weight and reach."""

    index: DenseIndex
    vector: F32
    weight: float
    candidates: int


def ranked(
    view: IndexView,
    q_hashes: U64,
    q_weights: F32,
    params: SearchParams,
    filt: RowFilter,
    self_id: int,
    dense: DenseQuery | None,
) -> tuple[Hits, bool]:
    """Candidates of both sources, exactly scored, best first (see the module docstring).

    Returns:
        The hits, and whether both sources ran out before their reach (more candidates
        would find nothing more).
    """
    sparse = view.search(q_hashes, q_weights, params, filt, self_id)
    exhausted = len(sparse) < params.n_candidates
    if dense is None:
        return sparse, exhausted
    near, near_dots = dense.index.search(dense.vector, dense.candidates + 1)
    near, near_dots = near[near != self_id], near_dots[near != self_id]
    exhausted = exhausted and len(near) < dense.candidates
    parts, rows = view.locate_many(near[~among(near, sparse.ids)])
    parts, rows = parts[parts >= 0], rows[parts >= 0]
    keep = view.allowed(parts, rows, filt)
    more = view.score(parts[keep], rows[keep], q_hashes, q_weights)
    both = Hits(
        np.concatenate((sparse.part, more.part)),
        np.concatenate((sparse.row, more.row)),
        np.concatenate((sparse.ids, more.ids)),
        np.concatenate((sparse.scores, more.scores)),
        np.concatenate((sparse.fingerprints, more.fingerprints)),
    )
    return blended(both, dense, (near, near_dots)), exhausted


def blended(hits: Hits, dense: DenseQuery | None, known: tuple[I64, F64] | None = None) -> Hits:
    """Hits scored by the TF-IDF cosine alone (``IndexView.score``) scored by the blend of both
    parts (as is without a dense part), best first. ``known``: ids ``int64 (m,)`` and their
    dense inner products ``float64 (m,)`` the search computed already (``DenseIndex.search``:
    the same floats as :func:`~recengine.index.dense.dots` here), not computed again."""
    if dense is None:
        return hits
    products = np.zeros(len(hits), np.float64)
    have = np.zeros(len(hits), bool)
    if known is not None and len(known[0]):
        order = np.argsort(known[0])
        at = np.minimum(np.searchsorted(known[0], hits.ids, sorter=order), len(order) - 1)
        have = known[0][order[at]] == hits.ids
        products[have] = known[1][order[at[have]]]
    _, vectors = dense.index.lookup(hits.ids[~have])
    products[~have] = dots(vectors, dense.vector.astype(np.float64))
    share = dense.weight * products
    scores = (1.0 - dense.weight) * hits.scores + share
    order = np.lexsort((hits.ids, -scores))
    return Hits(
        hits.part[order],
        hits.row[order],
        hits.ids[order],
        scores[order],
        hits.fingerprints[order],
        share[order],
    )


def dense_query(
    index: DenseIndex | None, vector: F32 | None, weight: float, candidates: int
) -> DenseQuery | None:
    """The dense side of a query, or None when the dense part is off for it."""
    if index is None or vector is None or not index.dims or weight <= 0:
        return None
    if not np.any(vector):
        return None
    return DenseQuery(index, np.asarray(vector, np.float32), weight, candidates)
