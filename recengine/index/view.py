"""Searching a set of segments: candidates from postings, then exact cosine over the candidates.

Candidate stage ("more like this", as search engines do it): take the query's ``query_terms``
largest terms; for each, read the head of its impact-ordered postings list (at most
``per_term`` postings, the articles where that term weighs most) in every segment; sum
``q_t * w_dt`` per article. That partial score is the exact dot product restricted to the
terms read, so the ``n_candidates`` best partial scores are very likely the articles of
highest cosine. Work is bounded by ``query_terms * per_term`` postings, whatever the corpus
size: no full scan.

Ranking: the exact cosine of the stored vectors (both unit length, so the inner product) of
each candidate, summed in float64 over the candidate's stored terms in stored order, so the
same two vectors give the same score in every segment and process. Ties are broken by the
smaller article id. Candidates are filtered *before* the cut to ``n_candidates``, so a
restrictive filter still gets its full share of candidates.

Array contracts: ids ``int64``, fingerprints ``uint64``, query hashes ``uint64 (m,)`` with
``float32 (m,)`` unit-norm weights in stored order (largest first).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt

from recengine.index.segment import (
    F32,
    I64,
    NO_DATE,
    NO_LABEL,
    U64,
    Segment,
    gather_ranges,
    ranges,
)

F64 = npt.NDArray[np.float64]
Bools = npt.NDArray[np.bool_]


@dataclass(frozen=True, eq=False)
class Part:
    """A segment and which of its rows are live (``bool (n,)``; False = deleted/replaced)."""

    segment: Segment
    alive: Bools
    all_alive: bool = field(init=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "all_alive", bool(self.alive.all()))


@dataclass(frozen=True)
class RowFilter:
    """Which articles may be returned. Empty / None fields do not restrict.

    Attributes:
        exclude_ids: internal ids never returned.
        categories: label hashes; an article must have one of them.
        tags: label hashes; an article must carry at least one of them.
        published_after / published_before: Unix seconds, inclusive / exclusive; an article
            with no publication date fails any time restriction.
    """

    exclude_ids: I64 = field(default_factory=lambda: np.zeros(0, np.int64))
    categories: U64 | None = None
    tags: U64 | None = None
    published_after: int | None = None
    published_before: int | None = None

    def allows(self, seg: Segment, rows: npt.NDArray[np.integer]) -> Bools:
        """``bool (len(rows),)``: which of the segment's rows pass."""
        ok = np.ones(len(rows), dtype=bool)
        if len(self.exclude_ids):
            ok &= ~np.isin(seg.ids[rows], self.exclude_ids)
        if self.categories is not None:
            ok &= np.isin(seg.category[rows], self.categories) & (seg.category[rows] != NO_LABEL)
        if self.tags is not None:
            idx, indptr = gather_ranges(seg.tag_indptr, rows)
            hit = np.isin(seg.tag_hashes[idx], self.tags).astype(np.int64)
            ok &= _segment_sums(hit, indptr) > 0
        if self.published_after is not None or self.published_before is not None:
            when = seg.published[rows]
            ok &= when != NO_DATE
            if self.published_after is not None:
                ok &= when >= self.published_after
            if self.published_before is not None:
                ok &= when < self.published_before
        return ok


@dataclass(frozen=True, eq=False)
class Hits:
    """Scored articles, best first (score descending, then id ascending).

    ``part`` / ``row`` locate each hit in the view; ``ids`` ``int64 (c,)``, ``scores``
    ``float64 (c,)``, ``fingerprints`` ``uint64 (c,)``.
    """

    part: npt.NDArray[np.intp]
    row: npt.NDArray[np.intp]
    ids: I64
    scores: F64
    fingerprints: U64

    def __len__(self) -> int:
        return len(self.ids)


@dataclass(frozen=True)
class SearchParams:
    """Candidate-stage sizes (see the module docstring and ``config/defaults.toml``)."""

    query_terms: int
    per_term: int
    n_candidates: int
    scale_by_weight: bool = False
    min_per_term: int = 100


class IndexView:
    """An immutable set of parts, searched together. Ids are unique across live rows."""

    def __init__(self, parts: tuple[Part, ...]) -> None:
        self.parts = parts

    def __len__(self) -> int:
        return sum(int(p.alive.sum()) for p in self.parts)

    def locate(self, article_id: int) -> tuple[int, int] | None:
        """``(part, row)`` of a live article, or None."""
        for i, part in enumerate(self.parts):
            row = int(part.segment.find(np.array([article_id], np.int64))[0])
            if row >= 0 and part.alive[row]:
                return i, row
        return None

    def vector(self, part: int, row: int) -> tuple[U64, F32]:
        """Stored vector of a row: term hashes ``uint64 (m,)``, weights ``float32 (m,)``."""
        seg = self.parts[part].segment
        s, e = seg.vec_indptr[row], seg.vec_indptr[row + 1]
        return seg.terms[seg.vec_cols[s:e]], seg.vec_weights[s:e]

    def search(
        self,
        q_hashes: U64,
        q_weights: F32,
        params: SearchParams,
        filt: RowFilter,
        self_id: int | None = None,
    ) -> Hits:
        """The ``n_candidates`` best candidates, exactly scored, best first.

        Args:
            q_hashes / q_weights: the query vector in stored order (largest weight first).
            params: candidate-stage sizes.
            filt: which articles may be returned (applied before the candidate cut).
            self_id: the query article's own id: a term is only worth reading when it leads
                to some other article.
        """
        parts, rows, partial = _candidates(self.parts, q_hashes, q_weights, params, self_id)
        keep = np.zeros(len(rows), dtype=bool)
        for i, part in enumerate(self.parts):
            mine = np.flatnonzero(parts == i)
            keep[mine] = filt.allows(part.segment, rows[mine])
        parts, rows, partial = parts[keep], rows[keep], partial[keep]
        ids = self._column("ids", parts, rows)
        top = top_by_score(partial, ids, params.n_candidates)
        return self.score(parts[top], rows[top], q_hashes, q_weights)

    def _column(
        self, name: str, parts: npt.NDArray[np.intp], rows: npt.NDArray[np.intp]
    ) -> npt.NDArray[Any]:
        """A per-row array (``ids``, ``fingerprints``, ``published``...) at (part, row)."""
        dtype = getattr(self.parts[0].segment, name).dtype if self.parts else np.int64
        out = np.zeros(len(rows), dtype=dtype)
        for i, part in enumerate(self.parts):
            mine = np.flatnonzero(parts == i)
            out[mine] = getattr(part.segment, name)[rows[mine]]
        return out

    def score(
        self,
        parts: npt.NDArray[np.intp],
        rows: npt.NDArray[np.intp],
        q_hashes: U64,
        q_weights: F32,
    ) -> Hits:
        """Exact cosine of the given rows with the query, sorted best first."""
        scores = np.zeros(len(rows), dtype=np.float64)
        ids = np.zeros(len(rows), dtype=np.int64)
        prints = np.zeros(len(rows), dtype=np.uint64)
        for i, part in enumerate(self.parts):
            mine = np.flatnonzero(parts == i)
            if not len(mine):
                continue
            seg = part.segment
            scores[mine] = exact_dot(seg, rows[mine], q_hashes, q_weights)
            ids[mine] = seg.ids[rows[mine]]
            prints[mine] = seg.fingerprints[rows[mine]]
        order = np.lexsort((ids, -scores))
        return Hits(parts[order], rows[order], ids[order], scores[order], prints[order])

    def newest(self, n: int, filt: RowFilter) -> Hits:
        """Up to ``n`` live articles, newest first (published desc, undated last, id desc)."""
        parts, rows, when, ids = [], [], [], []
        for i, part in enumerate(self.parts):
            r = np.flatnonzero(part.alive)
            r = r[filt.allows(part.segment, r)]
            parts.append(np.full(len(r), i, np.intp))
            rows.append(r)
            when.append(part.segment.published[r])
            ids.append(part.segment.ids[r])
        all_when = np.concatenate(when) if when else np.zeros(0, np.int64)
        all_ids = np.concatenate(ids) if ids else np.zeros(0, np.int64)
        pick = np.arange(len(all_ids))
        if len(pick) > n > 0:  # only the n latest dates (and ties) need sorting
            cut = np.partition(all_when, len(all_when) - n)[len(all_when) - n]
            pick = np.flatnonzero(all_when >= cut)
        order = pick[np.lexsort((all_ids[pick], all_when[pick]))[::-1][:n]]
        all_parts = np.concatenate(parts)[order] if parts else np.zeros(0, np.intp)
        all_rows = np.concatenate(rows)[order] if rows else np.zeros(0, np.intp)
        prints = self._column("fingerprints", all_parts, all_rows)
        return Hits(all_parts, all_rows, all_ids[order], np.zeros(len(order)), prints)


def top_by_score(scores: F64, ids: I64, n: int) -> npt.NDArray[np.intp]:
    """Positions of the ``n`` best (score descending, then id ascending), in no set order."""
    if len(scores) <= n:
        return np.arange(len(scores))
    kth = -np.partition(-scores, n - 1)[n - 1]
    above = np.flatnonzero(scores > kth)
    ties = np.flatnonzero(scores == kth)
    ties = ties[np.argsort(ids[ties], kind="stable")][: n - len(above)]
    return np.concatenate((above, ties))


def _candidates(
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
    unique, first, inverse = np.unique(ids, return_index=True, return_inverse=True)
    # bincount adds in input order (query term, then head order): the same on every layout
    partial = np.asarray(
        np.bincount(inverse.ravel(), weights=contrib, minlength=len(unique)), dtype=np.float64
    )
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
    pos = np.minimum(np.searchsorted(seg.terms, q_hashes), len(seg.terms) - 1)
    known = seg.terms[pos] == q_hashes
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
        live = _segment_sums(alive, indptr).astype(np.int64)
        short = (live < caps) & (lengths < end - start)
        if not short.any():
            break
        take = np.where(short, take * 2, take)
    before = np.repeat(np.concatenate(([0], np.cumsum(live)[:-1])), lengths)
    rank = np.cumsum(alive) - 1 - before
    keep = alive & (rank < np.repeat(caps, lengths))
    term = np.repeat(np.arange(len(start)), lengths)
    return term[keep], seg.post_weights[idx[keep]].astype(np.float64), rows[keep].astype(np.intp)


def exact_dot(seg: Segment, rows: npt.NDArray[np.integer], q_hashes: U64, q_weights: F32) -> F64:
    """``float64 (len(rows),)``: inner product of each row's stored vector with the query."""
    if not len(rows):
        return np.zeros(0, np.float64)
    idx, indptr = gather_ranges(seg.vec_indptr, np.asarray(rows))
    if not len(seg.terms) or not len(q_hashes):
        return np.zeros(len(rows), np.float64)
    pos = np.minimum(np.searchsorted(seg.terms, q_hashes), len(seg.terms) - 1)
    known = seg.terms[pos] == q_hashes
    order = np.argsort(pos[known], kind="stable")
    q_cols = pos[known][order]
    q_w = q_weights[known][order].astype(np.float64)
    cols = seg.vec_cols[idx]
    at = np.minimum(np.searchsorted(q_cols, cols), max(len(q_cols) - 1, 0))
    match = (q_cols[at] == cols) if len(q_cols) else np.zeros(len(cols), bool)
    contrib = np.where(match, seg.vec_weights[idx].astype(np.float64) * q_w[at], 0.0)
    return _segment_sums(contrib, indptr)


def _segment_sums(values: npt.NDArray[np.generic], indptr: I64) -> F64:
    """Sum of each CSR row, each summed on its own (independent of the other rows)."""
    n = len(indptr) - 1
    out = np.zeros(n, dtype=np.float64)
    nonempty = indptr[1:] > indptr[:-1]
    if len(values) and nonempty.any():
        sums = np.add.reduceat(values.astype(np.float64), indptr[:-1][nonempty])
        out[nonempty] = sums
    return out
