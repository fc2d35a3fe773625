"""The two numeric steps of a search, in numpy or compiled, whichever pays in this process.

``row_dots`` (the exact scoring of :func:`recengine.index.view.exact_dot`) and ``sum_by_id`` (the
candidates' partial sums of :func:`recengine.index.postings.candidates`) each have a numpy
formulation and a compiled one (``index.score_kernels``, numba) that gives the same floats bit
for bit, ~9x faster. The compiled one has a fixed price: importing numba and loading its cached
machine code costs about half a second of CPU in a new process, as much as the numpy
formulations spend on some five million values. So a process rents before it buys (the
classic ski-rental rule, within a factor two of the best choice made knowing the future): it
uses numpy until it has spent about that price on them, then loads the kernels for good; a
step big enough to pay on its own loads them at once. A one-shot command (``recengine related``)
and a small site never load numba; a big site's server loads it on its first big searches.

Array contracts: as the kernels' (``index.score_kernels``).
"""

from __future__ import annotations

import importlib
from functools import cache
from types import ModuleType
from typing import Any

import numpy as np
import numpy.typing as npt

from recengine.index.segment import I64, gather_ranges

F64 = npt.NDArray[np.float64]

_KERNELS = "recengine.index.score_kernels"
_PRICE = 5_000_000  # values through numpy that cost what loading the kernels costs
_at_once = _PRICE // 5  # a step this big loads them at once (5 steps like it pay the price)
_spent = 0  # values this process has put through the numpy formulations
_bought = False  # the kernels are loaded: every step uses them


@cache
def kernels() -> ModuleType:
    """The compiled steps (numba compiles them on first use, or loads its disk cache)."""
    return importlib.import_module(_KERNELS)


def _compiled(values: int) -> ModuleType | None:
    """The kernels when they pay for a step over ``values`` values, else None (numpy).

    Unlocked: two threads may both count a step or both load the kernels; either way the
    answers are the same floats."""
    global _spent, _bought
    if not _bought:
        _spent += values
        _bought = values >= _at_once or _spent >= _PRICE
    return kernels() if _bought else None


def row_dots(indptr: I64, cols: Any, weights: Any, rows: I64, q_cols: I64, q_w: F64) -> F64:
    """``float64 (len(rows),)``: for each row, the sum over its stored entries of
    ``weight * q_w[col]`` (see ``score_kernels.row_dots``)."""
    compiled = _compiled(int((indptr[rows + 1] - indptr[rows]).sum()) if len(rows) else 0)
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
    compiled = _compiled(len(ids))
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
