"""The two numeric steps of a search, in numpy or compiled, whichever pays in this process.

``row_dots`` (the exact scoring of :func:`recengine.index.related.view.exact_dot`) and ``sum_by_id``
(the candidates' partial sums of :func:`recengine.index.related.postings.candidates`) each have a
numpy formulation and a compiled one (``index.related.score_kernels``, numba) that gives the same
floats bit for bit, ~9x faster. The process rents before it buys (:mod:`recengine.rental`): loading
the kernels costs about what the numpy formulations spend on some five million values, so a
one-shot command (``recengine related``) and a small site never load numba; a big site's server
loads it on its first big searches.

Array contracts: as the kernels' (``index.related.score_kernels``).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt

from recengine.index.related.segment import I64, gather_ranges
from recengine.rental import Rental

F64 = npt.NDArray[np.float64]

# values through numpy that cost what loading the kernels costs; a step of a fifth of that
# loads them at once (5 steps like it pay the price)
RENTAL = Rental("recengine.index.related.score_kernels", price=5_000_000, at_once=1_000_000)


def row_dots(indptr: I64, cols: Any, weights: Any, rows: I64, q_cols: I64, q_w: F64) -> F64:
    """``float64 (len(rows),)``: for each row, the sum over its stored entries of
    ``weight * q_w[col]`` (see ``score_kernels.row_dots``)."""
    compiled = RENTAL.kernels(int((indptr[rows + 1] - indptr[rows]).sum()) if len(rows) else 0)
    if compiled is not None:
        dots: F64 = compiled.row_dots(indptr, cols, weights, rows, q_cols, q_w)
        return dots
    if not len(rows) or not len(q_cols):
        return np.zeros(len(rows), np.float64)
    idx, row_ptr = gather_ranges(indptr, rows)
    order = np.argsort(q_cols, kind="stable")
    sorted_cols, sorted_w = q_cols[order], q_w[order]
    stored = np.asarray(cols)[idx].astype(np.int64)
    at = np.minimum(np.searchsorted(sorted_cols, stored), len(sorted_cols) - 1)
    products = np.asarray(weights)[idx].astype(np.float64) * sorted_w[at]
    return segment_sums(np.where(sorted_cols[at] == stored, products, 0.0), row_ptr)


def sum_by_id(ids: I64, values: F64) -> tuple[I64, F64]:
    """``(first, sums)``: for each distinct id in order of first appearance, the position of
    its first entry and the sum of its values in input order (``np.bincount``'s sums)."""
    compiled = RENTAL.kernels(len(ids))
    if compiled is not None:
        first, sums = compiled.sum_by_id(ids, values)
        return first, sums
    unique, at, inverse = np.unique(ids, return_index=True, return_inverse=True)
    totals = np.bincount(inverse.ravel(), weights=values, minlength=len(unique))
    order = np.argsort(at, kind="stable")
    return at[order].astype(np.int64), totals[order].astype(np.float64)  # int64 when empty


def segment_sums(values: npt.NDArray[np.generic], indptr: I64) -> F64:
    """Sum of each CSR row, each summed on its own (independent of the other rows)."""
    n = len(indptr) - 1
    out = np.zeros(n, dtype=np.float64)
    nonempty = indptr[1:] > indptr[:-1]
    if len(values) and nonempty.any():
        sums = np.add.reduceat(values.astype(np.float64), indptr[:-1][nonempty])
        out[nonempty] = sums
    return out
