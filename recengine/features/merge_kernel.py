"""The compiled count of shared hashes of :func:`recengine.features.neardup.overlap` (numba;
loaded by ``neardup.MERGE`` once it pays, so that importing the package does not load numba).
"""

from __future__ import annotations

from typing import Any

from numba import njit

_STRIDE = 256  # merge steps between two looks at whether the count can still reach ``need``


@njit(cache=True, nogil=True)
def shared_count(a: Any, b: Any, need: int = 0) -> int:
    """``|a & b|`` of two sorted ``uint64`` arrays of distinct values when it is ``>= need``;
    otherwise some count ``< need``: the merge stops as soon as the hashes left of the shorter
    side could no longer bring it there (a verification needs only to know that the pair fails,
    and nearly every pair it is given does: the leader pass of 15,000 articles of the
    resampled paragraph mix passed 589 of 174,576, most sharing under a tenth of their
    shingles, which a full merge walked to the end).

    One merge of both, without branches on the data (two hashes compare unpredictably: a
    branch per step would be mispredicted half the time). Measured on arrays of ~5,600 and
    ~11,300 hashes: 42 us against 138 us for ``numpy.searchsorted`` of the smaller in the
    larger (``need = 0``: the whole merge).
    """
    i = j = n = 0
    la, lb = len(a), len(b)
    while True:
        left = min(la - i, lb - j)  # no more hashes than this can still be shared
        if left == 0 or n + left < need:
            return n
        # every step moves i and j by at most one: ``left`` steps stay within both arrays
        for _ in range(min(left, _STRIDE)):
            x, y = a[i], b[j]
            n += x == y
            i += x <= y
            j += y <= x
