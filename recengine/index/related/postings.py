"""The candidate stage of a search: postings heads over a set of segments, partial scores.

"More like this", as search engines do it: take the query's ``query_terms`` largest terms; for
each, read the head of its impact-ordered postings list (at most ``per_term`` postings, the
articles where that term weighs most) in every segment; sum ``q_t * w_dt`` per article. That
partial score is the exact dot product restricted to the terms read, so the ``n_candidates``
best partial scores are very likely the articles of highest cosine. Work is bounded by
``query_terms * per_term`` postings, whatever the corpus size: no full scan. ``index.related.view``
ranks the candidates exactly.

Array contracts: ids ``int64``, query hashes ``uint64 (m,)`` with ``float32 (m,)`` unit-norm
weights in stored order (largest first); rows ``intp`` positions within a segment.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt

from recengine.index.related.scoring import segment_sums, sum_by_id
from recengine.index.related.segment import F32, I64, U64, Segment, ranges

F64 = npt.NDArray[np.float64]
Bools = npt.NDArray[np.bool_]


@dataclass(frozen=True, eq=False)
class Part:
    """A segment and which of its rows are live (``bool (n,)``; False = deleted/replaced).
    The live rows are counted once, when the part is made (``alive`` is never changed in
    place: a change makes a new part)."""

    segment: Segment
    alive: Bools
    live: int = field(init=False)
    all_alive: bool = field(init=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "live", int(self.alive.sum()))
        object.__setattr__(self, "all_alive", self.live == len(self.alive))


@dataclass(frozen=True)
class SearchParams:
    """Candidate-stage sizes (see the module docstring and ``config/defaults.toml``)."""

    query_terms: int
    per_term: int
    n_candidates: int
    scale_by_weight: bool = False
    min_per_term: int = 100


def candidates(
    parts: tuple[Part, ...],
    q_hashes: U64,
    q_weights: F32,
    params: SearchParams,
    self_id: int | None,
) -> tuple[npt.NDArray[np.intp], npt.NDArray[np.intp], F64]:
    """Live rows reached through the query terms' postings heads, with their partial scores.

    For each query term the head is its ``per_term`` best live postings over all parts
    (weight descending, then id ascending), so the answer does not depend on how the rows
    are spread over segments, or on rows deleted but not yet merged away. Terms are taken in
    query order until ``query_terms`` of them lead to an article other than ``self_id``.
    """
    located = [_locate(p.segment, q_hashes) for p in parts]
    chunks: list[tuple[I64, F64, I64, npt.NDArray[np.intp], npt.NDArray[np.intp]]] = []
    useful, next_term, m = 0, 0, len(q_hashes)
    while useful < params.query_terms and next_term < m:
        batch = np.arange(next_term, min(m, next_term + params.query_terms - useful))
        next_term = int(batch[-1]) + 1
        caps = term_caps(q_weights[batch], float(q_weights[0]), params)
        terms, weights, ids, where, rows = _merged_heads(parts, located, batch, caps)
        good = _useful_terms(terms, ids, self_id)
        useful += len(good)
        keep = np.isin(terms, good)
        chunks.append((terms[keep], weights[keep], ids[keep], where[keep], rows[keep]))
    if not chunks:
        return np.zeros(0, np.intp), np.zeros(0, np.intp), np.zeros(0, np.float64)
    terms = np.concatenate([c[0] for c in chunks])
    contrib = np.concatenate([c[1] for c in chunks]) * q_weights[terms].astype(np.float64)
    ids = np.concatenate([c[2] for c in chunks])
    where = np.concatenate([c[3] for c in chunks])
    rows = np.concatenate([c[4] for c in chunks])
    # each id's contributions added in input order (query term, then head order): the same
    # sums on every layout; the candidates come in order of first appearance
    first, partial = sum_by_id(np.asarray(ids, np.int64), np.asarray(contrib, np.float64))
    return where[first], rows[first], partial


def term_caps(weights: F32, top: float, params: SearchParams) -> I64:
    """Postings read per query term: ``per_term`` scaled by the term's weight relative to the
    query's largest, at least ``min_per_term``. A posting's contribution is ``q_t * w_dt``, so
    a light query term's deep postings matter least."""
    if not params.scale_by_weight or top <= 0:
        return np.full(len(weights), params.per_term, dtype=np.int64)
    scaled = np.ceil(params.per_term * weights.astype(np.float64) / top).astype(np.int64)
    return np.clip(scaled, min(params.min_per_term, params.per_term), params.per_term)


def _useful_terms(terms: I64, ids: I64, self_id: int | None) -> I64:
    """The query terms (indices) whose heads hold some article other than ``self_id``."""
    other = terms[ids != self_id] if self_id is not None else terms
    if not len(other):
        return np.zeros(0, np.int64)
    return np.flatnonzero(np.bincount(other, minlength=int(other.max()) + 1))


def _locate(seg: Segment, q_hashes: U64) -> tuple[I64, I64]:
    """Postings range ``[start, end)`` of each query term in the segment (empty if unknown)."""
    if not len(seg.terms):
        zeros = np.zeros(len(q_hashes), np.int64)
        return zeros, zeros
    pos = seg.columns(q_hashes)
    known = pos >= 0
    return (
        np.where(known, seg.post_indptr[pos], 0),
        np.where(known, seg.post_indptr[pos + 1], 0),
    )


def _merged_heads(
    parts: tuple[Part, ...],
    located: list[tuple[I64, I64]],
    batch: I64,
    caps: I64,
) -> tuple[I64, F64, I64, npt.NDArray[np.intp], npt.NDArray[np.intp]]:
    """Each batch term's ``per_term`` best live postings over all parts, in head order.

    Returns parallel arrays: query term index, posting weight, article id, part, row.
    """
    got = []
    for i, part in enumerate(parts):
        start, end = located[i]
        terms, weights, rows = _live_heads(part, start[batch], end[batch], caps)
        got.append((batch[terms], weights, part.segment.ids[rows], np.full(len(rows), i), rows))
    terms = np.concatenate([g[0] for g in got])
    weights = np.concatenate([g[1] for g in got])
    ids = np.concatenate([g[2] for g in got])
    where = np.concatenate([g[3] for g in got]).astype(np.intp)
    rows = np.concatenate([g[4] for g in got]).astype(np.intp)
    if len(parts) > 1:
        order = np.lexsort((ids, -weights, terms))
        terms, weights, ids, where, rows = (
            terms[order],
            weights[order],
            ids[order],
            where[order],
            rows[order],
        )
        keep = _rank_in_groups(terms) < caps[np.searchsorted(batch, terms)]
        terms, weights, ids, where, rows = (
            terms[keep],
            weights[keep],
            ids[keep],
            where[keep],
            rows[keep],
        )
    return terms, weights, ids, where, rows


def _rank_in_groups(keys: I64) -> I64:
    """0, 1, 2... within each run of equal consecutive keys."""
    if not len(keys):
        return np.zeros(0, np.int64)
    starts = np.flatnonzero(np.concatenate(([True], keys[1:] != keys[:-1])))
    lengths = np.diff(np.concatenate((starts, [len(keys)])))
    return np.arange(len(keys)) - np.repeat(starts, lengths)


def _live_heads(
    part: Part, start: I64, end: I64, caps: I64
) -> tuple[I64, F64, npt.NDArray[np.intp]]:
    """The first ``per_term`` live postings of each range: (range index, weight, row).

    Reads ``per_term`` postings per range and reads further (doubling) only for ranges where
    deleted rows left fewer than ``per_term`` live ones.
    """
    seg = part.segment
    if part.all_alive:  # nothing to skip: the heads are the first postings
        lengths = np.minimum(end - start, caps)
        idx = ranges(start, lengths)
        term = np.repeat(np.arange(len(start)), lengths)
        heads = seg.post_rows[idx].astype(np.intp)
        return term, seg.post_weights[idx].astype(np.float64), heads
    take = caps.astype(np.int64)
    while True:
        lengths = np.minimum(end - start, take)
        idx = ranges(start, lengths)
        rows = seg.post_rows[idx]
        alive = part.alive[rows]
        indptr = np.concatenate(([0], np.cumsum(lengths)))
        live = segment_sums(alive, indptr).astype(np.int64)
        short = (live < caps) & (lengths < end - start)
        if not short.any():
            break
        take = np.where(short, take * 2, take)
    before = np.repeat(np.concatenate(([0], np.cumsum(live)[:-1])), lengths)
    rank = np.cumsum(alive) - 1 - before
    keep = alive & (rank < np.repeat(caps, lengths))
    term = np.repeat(np.arange(len(start)), lengths)
    return term[keep], seg.post_weights[idx[keep]].astype(np.float64), rows[keep].astype(np.intp)
