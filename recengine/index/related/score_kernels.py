"""The compiled parts of a search (numba; loaded by :mod:`recengine.index.related.scoring` once they
pay for themselves, so that importing the package does not load numba): the exact scoring of
:func:`recengine.index.related.view.exact_dot` and the candidates' partial sums of
:func:`recengine.index.related.postings.candidates`.

``row_dots`` gives, bit for bit, what the numpy formulation gives (``np.where`` of the matched
products, then ``np.add.reduceat`` per row), without its temporaries: numpy's reduction of a
row is its first value plus the pairwise sum of the rest (8 accumulators over blocks of up to
128 values, halves above that: ``index.pairwise``), and :func:`_reduced` repeats that order
exactly (no
``fastmath``: the compiler may not reorder the additions). The query's columns are looked up in
a small open-addressing table instead of a binary search per stored value.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numba import njit

from recengine.index.pairwise import pairwise_sum

_GOLDEN = np.uint64(0x9E3779B97F4A7C15)  # Fibonacci hashing of a column


@njit(cache=True, nogil=True)
def _reduced(a: Any, n: int) -> Any:
    """``np.add.reduce(a[:n])`` as numpy computes it: the first value, plus the rest."""
    if n == 0:
        return 0.0
    return a[0] + pairwise_sum(a, 1, n - 1)


@njit(cache=True, nogil=True)
def row_dots(indptr: Any, cols: Any, weights: Any, rows: Any, q_cols: Any, q_w: Any) -> Any:
    """``float64 (len(rows),)``: for each row, the sum over its stored entries of
    ``weight * q_w[col]`` (0 for a column the query does not have).

    Args:
        indptr: ``int64 (n + 1,)``, cols ``int32 (nnz,)``, weights ``float32 (nnz,)``: the
            segment's stored vectors (CSR).
        rows: the rows scored.
        q_cols: ``int64 (m,)`` distinct columns of the query's terms; q_w ``float64 (m,)``.
    """
    bits = 4
    while (1 << bits) < 4 * len(q_cols):
        bits += 1
    size = 1 << bits
    shift = np.uint64(64 - bits)
    keys = np.full(size, -1, np.int64)
    values = np.zeros(size, np.float64)
    for j in range(len(q_cols)):
        slot = np.int64((np.uint64(q_cols[j]) * _GOLDEN) >> shift)
        while keys[slot] != -1:
            slot = (slot + 1) & (size - 1)
        keys[slot] = q_cols[j]
        values[slot] = q_w[j]
    longest = 0
    for r in rows:
        longest = max(longest, indptr[r + 1] - indptr[r])
    buf = np.empty(longest, np.float64)
    out = np.zeros(len(rows), np.float64)
    for i in range(len(rows)):
        start, stop = indptr[rows[i]], indptr[rows[i] + 1]
        for k in range(start, stop):
            c = np.int64(cols[k])
            slot = np.int64((np.uint64(c) * _GOLDEN) >> shift)
            v = 0.0
            while keys[slot] != -1:
                if keys[slot] == c:
                    v = np.float64(weights[k]) * values[slot]
                    break
                slot = (slot + 1) & (size - 1)
            buf[k - start] = v
        out[i] = _reduced(buf, stop - start)
    return out


@njit(cache=True, nogil=True)
def sum_by_id(ids: Any, values: Any) -> Any:
    """``(first, sums)``: for each distinct id, in order of first appearance, the position of
    its first entry and the sum of its ``values`` in input order from 0.0 (``np.bincount``'s
    sums, bit for bit, without sorting the ids).

    Args:
        ids: ``int64 (n,)``; values: ``float64 (n,)``.
    """
    n = len(ids)
    bits = 4
    while (1 << bits) < 2 * n:
        bits += 1
    size = 1 << bits
    shift = np.uint64(64 - bits)
    keys = np.empty(size, np.int64)
    slots = np.full(size, -1, np.int64)  # slot -> place in the output
    first = np.empty(n, np.int64)
    sums = np.zeros(n, np.float64)
    found = 0
    for i in range(n):
        x = ids[i]
        slot = np.int64((np.uint64(x) * _GOLDEN) >> shift)
        while slots[slot] != -1 and keys[slot] != x:
            slot = (slot + 1) & (size - 1)
        place = slots[slot]
        if place == -1:
            place = found
            slots[slot], keys[slot], first[place] = place, x, i
            found += 1
        sums[place] += values[i]
    return first[:found], sums[:found]
