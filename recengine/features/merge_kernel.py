"""The compiled count of shared hashes of :func:`recengine.features.neardup.overlap` (numba;
loaded by ``neardup.MERGE`` once it pays, so that importing the package does not load numba).
"""

from __future__ import annotations

from typing import Any

from numba import njit


@njit(cache=True, nogil=True)
def shared_count(a: Any, b: Any) -> int:
    """``|a & b|`` of two sorted ``uint64`` arrays of distinct values: one merge of both,
    without branches on the data (two hashes compare unpredictably: a branch per step would
    be mispredicted half the time). Measured on arrays of ~5,600 and ~11,300 hashes: 42 us
    against 138 us for ``numpy.searchsorted`` of the smaller in the larger."""
    i = j = n = 0
    la, lb = len(a), len(b)
    while i < la and j < lb:
        x, y = a[i], b[j]
        n += x == y
        i += x <= y
        j += y <= x
    return n
