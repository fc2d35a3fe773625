"""numpy's pairwise summation, compiled (numba): the order in which ``np.sum`` and
``np.add.reduce`` add a contiguous run of float64 values, so that a compiled kernel gives the
same floats as the numpy formulation it replaces, bit for bit (no ``fastmath``: the compiler may
not reorder the additions). Used by the related index's scoring (``index.related.score_kernels``)
and the dense part's exact inner products (``index.dense_kernels``).
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numba import njit

BLOCK = 128  # numpy's PW_BLOCKSIZE


@njit(cache=True, nogil=True)
def block_sum(a: Any, lo: int, n: int) -> Any:
    """numpy's ``pairwise_sum`` of ``a[lo:lo + n]`` for ``n <= 128``."""
    if n < 8:
        res = 0.0
        for i in range(n):
            res += a[lo + i]
        return res
    r0, r1, r2, r3 = a[lo], a[lo + 1], a[lo + 2], a[lo + 3]
    r4, r5, r6, r7 = a[lo + 4], a[lo + 5], a[lo + 6], a[lo + 7]
    i = 8
    stop = n - n % 8
    while i < stop:
        r0 += a[lo + i]
        r1 += a[lo + i + 1]
        r2 += a[lo + i + 2]
        r3 += a[lo + i + 3]
        r4 += a[lo + i + 4]
        r5 += a[lo + i + 5]
        r6 += a[lo + i + 6]
        r7 += a[lo + i + 7]
        i += 8
    res = ((r0 + r1) + (r2 + r3)) + ((r4 + r5) + (r6 + r7))
    while i < n:
        res += a[lo + i]
        i += 1
    return res


@njit(cache=True, nogil=True)
def pairwise_sum(a: Any, lo: int, n: int) -> Any:
    """numpy's ``pairwise_sum`` of ``a[lo:lo + n]``: blocks of up to 128, and above that the
    sum of two halves (the first a multiple of 8 long), left before right. numpy recurses;
    this walks an explicit stack (numba's disk cache cannot hold a recursive function)."""
    if n <= BLOCK:
        return block_sum(a, lo, n)
    starts = np.empty(64, np.int64)
    sizes = np.empty(64, np.int64)
    stage = np.empty(64, np.int64)  # 0: neither half summed, 1: the left one, 2: both
    sums = np.empty(64, np.float64)
    top, done = 0, 0
    starts[0], sizes[0], stage[0] = lo, n, 0
    while top >= 0:
        size = sizes[top]
        if size <= BLOCK:
            sums[done] = block_sum(a, starts[top], size)
            done += 1
            top -= 1
            continue
        half = size // 2
        half -= half % 8
        if stage[top] == 2:
            sums[done - 2] = sums[done - 2] + sums[done - 1]
            done -= 1
            top -= 1
            continue
        stage[top] += 1
        first = stage[top] == 1
        starts[top + 1] = starts[top] if first else starts[top] + half
        sizes[top + 1] = half if first else size - half
        stage[top + 1] = 0
        top += 1
    return sums[0]
