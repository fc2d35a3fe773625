"""Searching a set of segments: candidates from postings, then exact cosine over the candidates.

Candidate stage: ``index.related.postings`` (impact-ordered postings heads of the query's largest
terms, partial scores; bounded work, no full scan).

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

from recengine.index.ids import among
from recengine.index.related.postings import (
    F64,
    Bools,
    Part,
    SearchParams,
    candidates,
)
from recengine.index.related.scoring import row_dots, segment_sums
from recengine.index.related.segment import (
    F32,
    I64,
    NO_DATE,
    NO_LABEL,
    U64,
    Segment,
    gather_ranges,
)

__all__ = ["Hits", "IndexView", "Part", "RowFilter", "SearchParams", "exact_dot", "top_by_score"]


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
            ok &= ~among(seg.ids[rows], self.exclude_ids)
        if self.categories is not None:
            ok &= np.isin(seg.category[rows], self.categories) & (seg.category[rows] != NO_LABEL)
        if self.tags is not None:
            idx, indptr = gather_ranges(seg.tag_indptr, rows)
            hit = np.isin(seg.tag_hashes[idx], self.tags).astype(np.int64)
            ok &= segment_sums(hit, indptr) > 0
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
    ``float64 (c,)``, ``fingerprints`` ``uint64 (c,)``; ``dense`` ``float64 (c,)``: the part of
    each score a dense component gave, when the ranking blends one (None: scores are cosines
    of the stored vectors alone).
    """

    part: npt.NDArray[np.intp]
    row: npt.NDArray[np.intp]
    ids: I64
    scores: F64
    fingerprints: U64
    dense: F64 | None = None

    def __len__(self) -> int:
        return len(self.ids)

    def take(self, idx: npt.NDArray[np.integer] | slice) -> Hits:
        """The hits at ``idx`` (positions or a slice), in that order."""
        dense = None if self.dense is None else self.dense[idx]
        return Hits(
            self.part[idx],
            self.row[idx],
            self.ids[idx],
            self.scores[idx],
            self.fingerprints[idx],
            dense,
        )


class IndexView:
    """An immutable set of parts, searched together. Ids are unique across live rows."""

    def __init__(self, parts: tuple[Part, ...]) -> None:
        self.parts = parts

    def __len__(self) -> int:
        return sum(p.live for p in self.parts)

    def locate(self, article_id: int) -> tuple[int, int] | None:
        """``(part, row)`` of a live article, or None."""
        for i, part in enumerate(self.parts):
            row = int(part.segment.find(np.array([article_id], np.int64))[0])
            if row >= 0 and part.alive[row]:
                return i, row
        return None

    def locate_many(self, ids: I64) -> tuple[npt.NDArray[np.intp], npt.NDArray[np.intp]]:
        """``(part, row)`` of each live article of ``ids`` (-1, -1 where none)."""
        parts = np.full(len(ids), -1, np.intp)
        rows = np.full(len(ids), -1, np.intp)
        for i, part in enumerate(self.parts):
            found = part.segment.find(ids)
            hit = found >= 0
            hit[hit] = part.alive[found[hit]]
            parts[hit], rows[hit] = i, found[hit]
        return parts, rows

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
        parts, rows, partial = candidates(self.parts, q_hashes, q_weights, params, self_id)
        keep = self.allowed(parts, rows, filt)
        parts, rows, partial = parts[keep], rows[keep], partial[keep]
        ids = self._column("ids", parts, rows)
        top = top_by_score(partial, ids, params.n_candidates)
        return self.score(parts[top], rows[top], q_hashes, q_weights)

    def allowed(
        self, parts: npt.NDArray[np.intp], rows: npt.NDArray[np.intp], filt: RowFilter
    ) -> Bools:
        """``bool (len(rows),)``: which of the rows at (part, row) pass ``filt``."""
        keep = np.zeros(len(rows), dtype=bool)
        for i, part in enumerate(self.parts):
            mine = np.flatnonzero(parts == i)
            keep[mine] = filt.allows(part.segment, rows[mine])
        return keep

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


def exact_dot(seg: Segment, rows: npt.NDArray[np.integer], q_hashes: U64, q_weights: F32) -> F64:
    """``float64 (len(rows),)``: inner product of each row's stored vector with the query.

    Each row's products, in stored order, summed as ``np.add.reduceat`` sums them (compiled
    once that pays, ``index.related.scoring``: ~9x faster than the numpy formulation it matches bit
    for bit, whose binary search of every stored column among the query's was a sixth of a
    related list at 1M)."""
    if not len(rows):
        return np.zeros(0, np.float64)
    if not len(seg.terms) or not len(q_hashes):
        return np.zeros(len(rows), np.float64)
    pos = seg.columns(q_hashes)
    known = pos >= 0
    dots: F64 = row_dots(
        np.asarray(seg.vec_indptr, np.int64),
        np.asarray(seg.vec_cols),
        np.asarray(seg.vec_weights),
        np.asarray(rows, np.int64),
        pos[known].astype(np.int64),
        q_weights[known].astype(np.float64),
    )
    return dots
