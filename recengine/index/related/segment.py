"""A segment of the related-articles index: rows of article arrays, a forward store, postings.

One segment holds, for ``n`` articles sorted by internal id:

* ``ids`` ``int64 (n,)`` ascending, unique: internal article ids;
* ``fingerprints`` ``uint64 (n,)``: 64-bit simhash fingerprints (the duplicate criterion);
* ``published`` ``int64 (n,)``: publication time in Unix seconds, :data:`NO_DATE` when unknown;
* ``category`` ``uint64 (n,)``: hash of the category label, :data:`NO_LABEL` when none;
* ``tag_indptr`` ``int64 (n+1,)`` / ``tag_hashes`` ``uint64``: hashes of each article's tags;
* the forward store of the stored TF-IDF vectors, in CSR form: ``vec_indptr`` ``int64 (n+1,)``,
  ``vec_cols`` ``int32 (nnz,)`` (positions in ``terms``), ``vec_weights`` ``float32 (nnz,)``,
  each row in the stored order (largest weight first) and of unit L2 norm;
* ``terms`` ``uint64 (V,)`` sorted: the term hashes the segment knows;
* the postings of each row's ``index_terms`` largest terms, grouped by term and *impact
  ordered* (largest weight first, then ascending row) so a query can read only the head of a
  long list: ``post_indptr`` ``int64 (V+1,)``, ``post_rows`` ``int32 (P,)``,
  ``post_weights`` ``float32 (P,)``.

Labels and terms are 64-bit hashes (see ``features.hashing``), so segments need no shared
vocabulary: a segment built from a handful of new articles is searched like the big one.
A segment is immutable; deletions are a separate ``alive`` mask owned by the caller.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, fields
from functools import cached_property

import numpy as np
import numpy.typing as npt

from recengine.index.held import Held
from recengine.index.ids import IdRows, sorted_find

NO_DATE = np.iinfo(np.int64).min
NO_LABEL = 0
COLUMNS_HELD = 8  # queries whose term columns a segment holds (Segment.columns): a worker's threads

I64 = npt.NDArray[np.int64]
U64 = npt.NDArray[np.uint64]
I32 = npt.NDArray[np.int32]
F32 = npt.NDArray[np.float32]


@dataclass(frozen=True, eq=False)
class Rows:
    """Article rows to index, vectors given by term hash (the input of :func:`build_segment`).

    ``vec_hashes`` ``uint64 (nnz,)`` and ``vec_weights`` ``float32 (nnz,)`` hold each row's
    stored vector in its stored order; the other arrays are as in the module docstring.
    """

    ids: I64
    fingerprints: U64
    published: I64
    category: U64
    tag_indptr: I64
    tag_hashes: U64
    vec_indptr: I64
    vec_hashes: U64
    vec_weights: F32

    def __len__(self) -> int:
        return len(self.ids)

    def check(self) -> None:
        """Raise ``ValueError`` unless the arrays fit together."""
        n = len(self.ids)
        for name in ("fingerprints", "published", "category"):
            if len(getattr(self, name)) != n:
                raise ValueError(f"{name} has {len(getattr(self, name))} rows, ids has {n}")
        _check_indptr("tag_indptr", self.tag_indptr, n, len(self.tag_hashes))
        _check_indptr("vec_indptr", self.vec_indptr, n, len(self.vec_hashes))
        if len(self.vec_weights) != len(self.vec_hashes):
            raise ValueError("vec_weights and vec_hashes differ in length")
        if n and len(np.unique(self.ids)) != n:
            raise ValueError("ids are not unique")


def _check_indptr(name: str, indptr: I64, n: int, nnz: int) -> None:
    if len(indptr) != n + 1 or indptr[0] != 0 or indptr[-1] != nnz:
        raise ValueError(f"{name} does not describe {n} rows of {nnz} values")
    if n and np.any(np.diff(indptr) < 0):
        raise ValueError(f"{name} is not non-decreasing")


def empty_rows() -> Rows:
    z64, zu = np.zeros(0, np.int64), np.zeros(0, np.uint64)
    one = np.zeros(1, np.int64)
    return Rows(z64, zu, z64, zu, one, zu, one, zu, np.zeros(0, np.float32))


@dataclass(frozen=True, eq=False)
class Segment:
    """The arrays of the module docstring, plus ``index_terms`` (postings kept per row)."""

    ids: I64
    fingerprints: U64
    published: I64
    category: U64
    tag_indptr: I64
    tag_hashes: U64
    vec_indptr: I64
    vec_cols: I32
    vec_weights: F32
    terms: U64
    post_indptr: I64
    post_rows: I32
    post_weights: F32
    index_terms: int

    def __len__(self) -> int:
        return len(self.ids)

    @property
    def nbytes(self) -> int:
        return sum(getattr(self, f.name).nbytes for f in fields(self) if f.name != "index_terms")

    def arrays(self) -> dict[str, npt.NDArray[np.generic]]:
        """Name -> array, for saving (see ``index.layered`` and ``index.container``)."""
        return {f.name: getattr(self, f.name) for f in fields(self) if f.name != "index_terms"}

    def find(self, ids: I64) -> npt.NDArray[np.intp]:
        """Row of each id, ``-1`` where the segment does not hold it."""
        return self._id_rows.find(ids)

    @cached_property
    def _id_rows(self) -> IdRows:
        return IdRows(self.ids)

    def columns(self, hashes: U64) -> npt.NDArray[np.intp]:
        """Column of each of ``hashes`` among :attr:`terms` (``-1`` where absent), not to be
        changed by the caller. A list looks its query's terms up two or three times (the
        postings, the exact scores of each candidate source): the answers for the last few
        queries are held, by the hashes' bytes, since at 1M the terms are 9.4M and a binary
        search misses the cache at most of its steps (~0.1 ms for a query's 48 terms)."""
        hashes = np.asarray(hashes, np.uint64)
        return self._columns.get(hashes.tobytes(), lambda: sorted_find(self.terms, hashes))

    @cached_property
    def _columns(self) -> Held[bytes, npt.NDArray[np.intp]]:
        return Held(COLUMNS_HELD)

    def rows(self, keep: npt.NDArray[np.bool_]) -> Rows:
        """The kept rows back in :class:`Rows` form (to merge segments)."""
        return _select(self, np.flatnonzero(keep), lambda idx: self.terms[self.vec_cols[idx]])


def ranges(starts: I64, lengths: I64) -> I64:
    """``int64``: the positions ``starts[i] .. starts[i] + lengths[i] - 1``, range after range."""
    ends = np.cumsum(lengths)
    offsets = np.repeat(np.asarray(starts, np.int64) - (ends - lengths), lengths)
    out: I64 = np.arange(int(ends[-1]) if len(ends) else 0, dtype=np.int64) + offsets
    return out


def gather_ranges(indptr: I64, rows: npt.NDArray[np.integer]) -> tuple[I64, I64]:
    """Positions of the values of ``rows`` of a CSR structure, and the new indptr.

    Returns:
        ``(index int64 (sum of lengths,), indptr int64 (len(rows)+1,))``: ``values[index]`` are
        the values of ``rows`` in order, row ``i`` at ``index[indptr[i]:indptr[i+1]]``.
    """
    rows = np.asarray(rows, dtype=np.int64)
    starts = indptr[rows]
    lengths = indptr[rows + 1] - starts
    new_indptr = np.zeros(len(rows) + 1, dtype=np.int64)
    np.cumsum(lengths, out=new_indptr[1:])
    return ranges(starts, lengths), new_indptr


def concat_rows(parts: list[Rows]) -> Rows:
    """One :class:`Rows` from several (ids must stay unique across them)."""
    parts = [p for p in parts if len(p)] or [empty_rows()]
    if len(parts) == 1:
        return parts[0]

    def indptr(name: str) -> I64:
        out = [np.zeros(1, np.int64)]
        base = 0
        for p in parts:
            ptr = getattr(p, name)
            out.append(ptr[1:] + base)
            base += int(ptr[-1])
        return np.concatenate(out)

    def cat(name: str) -> npt.NDArray[np.generic]:
        return np.concatenate([getattr(p, name) for p in parts])

    return Rows(
        ids=cat("ids"),  # type: ignore[arg-type]
        fingerprints=cat("fingerprints"),  # type: ignore[arg-type]
        published=cat("published"),  # type: ignore[arg-type]
        category=cat("category"),  # type: ignore[arg-type]
        tag_indptr=indptr("tag_indptr"),
        tag_hashes=cat("tag_hashes"),  # type: ignore[arg-type]
        vec_indptr=indptr("vec_indptr"),
        vec_hashes=cat("vec_hashes"),  # type: ignore[arg-type]
        vec_weights=cat("vec_weights"),  # type: ignore[arg-type]
    )


def build_segment(rows: Rows, index_terms: int) -> Segment:
    """Sort rows by id, map term hashes to columns, and build the impact-ordered postings.

    Args:
        rows: the articles (checked with :meth:`Rows.check`).
        index_terms: how many of each row's largest terms get a posting.

    Raises:
        ValueError: inconsistent arrays, duplicate ids, or ``index_terms < 1``.
    """
    if index_terms < 1:
        raise ValueError(f"index_terms must be >= 1, got {index_terms}")
    rows.check()
    order = np.argsort(rows.ids, kind="stable")
    if np.any(order != np.arange(len(order))):
        rows = _take(rows, order)
    terms, inverse = np.unique(rows.vec_hashes, return_inverse=True)
    cols: I32 = inverse.astype(np.int32).ravel()
    post_indptr, post_rows, post_weights = _postings(
        rows.vec_indptr, cols, rows.vec_weights, len(terms), index_terms
    )
    return Segment(
        ids=np.ascontiguousarray(rows.ids, dtype=np.int64),
        fingerprints=np.ascontiguousarray(rows.fingerprints, dtype=np.uint64),
        published=np.ascontiguousarray(rows.published, dtype=np.int64),
        category=np.ascontiguousarray(rows.category, dtype=np.uint64),
        tag_indptr=rows.tag_indptr.astype(np.int64),
        tag_hashes=rows.tag_hashes.astype(np.uint64),
        vec_indptr=rows.vec_indptr.astype(np.int64),
        vec_cols=cols,
        vec_weights=rows.vec_weights.astype(np.float32),
        terms=terms.astype(np.uint64),
        post_indptr=post_indptr,
        post_rows=post_rows,
        post_weights=post_weights,
        index_terms=index_terms,
    )


def _take(rows: Rows, order: npt.NDArray[np.intp]) -> Rows:
    return _select(rows, order, lambda idx: rows.vec_hashes[idx])


def _select(
    src: Rows | Segment, sel: npt.NDArray[np.intp], hashes_at: Callable[[I64], U64]
) -> Rows:
    """Rows ``sel`` of ``src`` (in that order); ``hashes_at`` maps value positions to hashes."""
    vec_idx, vec_indptr = gather_ranges(src.vec_indptr, sel)
    tag_idx, tag_indptr = gather_ranges(src.tag_indptr, sel)
    return Rows(
        ids=src.ids[sel],
        fingerprints=src.fingerprints[sel],
        published=src.published[sel],
        category=src.category[sel],
        tag_indptr=tag_indptr,
        tag_hashes=src.tag_hashes[tag_idx],
        vec_indptr=vec_indptr,
        vec_hashes=hashes_at(vec_idx),
        vec_weights=src.vec_weights[vec_idx],
    )


def _postings(
    vec_indptr: I64, cols: I32, weights: F32, n_terms: int, index_terms: int
) -> tuple[I64, I32, F32]:
    """Postings of each row's first ``index_terms`` values (stored order = largest first)."""
    lengths = np.diff(vec_indptr)
    row_of = np.repeat(np.arange(len(lengths), dtype=np.int32), lengths)
    rank = np.arange(len(cols), dtype=np.int64) - np.repeat(vec_indptr[:-1], lengths)
    keep = rank < index_terms
    p_rows, p_cols, p_w = row_of[keep], cols[keep], weights[keep]
    # by term, then largest weight first, then row: the head of a list is its best postings
    if len(p_w) and p_w.min() > 0:
        # one stable sort of (column, inverted weight bits): the bits of positive float32
        # values order like the values, and rows are ascending already (stable keeps that)
        inverted = np.uint32(0xFFFFFFFF) - p_w.astype(np.float32).view(np.uint32)
        key = (p_cols.astype(np.uint64) << np.uint64(32)) | inverted.astype(np.uint64)
        order = np.argsort(key, kind="stable")
    else:
        order = np.lexsort((p_rows, -p_w, p_cols))
    indptr = np.zeros(n_terms + 1, dtype=np.int64)
    np.cumsum(np.bincount(p_cols, minlength=n_terms), out=indptr[1:])
    return indptr, p_rows[order].astype(np.int32), p_w[order].astype(np.float32)
