"""The compiled run hashes of :mod:`recengine.text.neardup.shingles` and
:mod:`recengine.text.neardup.passages` (numba; rented through ``shingles.HASHING`` once they pay, so
that importing the package does not load numba).

One pass over a text's word points each, no temporaries: the polynomial hash of every run of
``n`` points as a rolling hash (``h' = (h - c_0 B^(n-1)) B + c_n``, exact mod 2^64, so equal to
the doubling of ``shingles.run_hashes``), the distinct values of a sorted array, and a text's
passages (the ``m`` smallest distinct splitmix64-mixed run hashes, kept in a buffer of ``m`` as
the runs go by, where numpy mixed, partitioned and sorted every run). The sort of a shingle set
stays numpy's (vectorised: faster than a compiled quicksort).

Array contracts: word points ``uint32 (k,)``, ``k >= 1``; hashes ``uint64``.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numba import njit

_BASE = np.uint64(0x9E3779B97F4A7C15)  # shingles._BASE
_ONE = np.uint64(1)
_MIX1 = np.uint64(0xBF58476D1CE4E5B9)  # passages.mix64
_MIX2 = np.uint64(0x94D049BB133111EB)
_S30, _S27, _S31 = np.uint64(30), np.uint64(27), np.uint64(31)


@njit(cache=True, nogil=True)
def run_hashes(points: Any, n: int) -> Any:
    """``shingles.run_hashes``: ``uint64 (len(points) - width + 1,)``, ``width = min(n, k)``."""
    width = min(n, len(points))
    out = np.empty(len(points) - width + 1, np.uint64)
    top = _ONE  # B^(width - 1)
    h = np.uint64(0)
    for j in range(width):
        h = h * _BASE + np.uint64(points[j])
        if j:
            top = top * _BASE
    out[0] = h
    for i in range(width, len(points)):
        h = (h - np.uint64(points[i - width]) * top) * _BASE + np.uint64(points[i])
        out[i - width + 1] = h
    return out


@njit(cache=True, nogil=True)
def distinct(ordered: Any) -> Any:
    """The distinct values of a sorted non-empty ``uint64`` array, in order."""
    out = np.empty(len(ordered), np.uint64)
    out[0] = ordered[0]
    k = 1
    for i in range(1, len(ordered)):
        if ordered[i] != out[k - 1]:
            out[k] = ordered[i]
            k += 1
    return out[:k].copy()


@njit(cache=True, nogil=True)
def lowest_mixed(points: Any, n: int, m: int) -> Any:
    """``passages.passages_of``: the ``m`` smallest distinct mixed hashes of the runs of
    ``min(n, k)`` points, sorted (fewer when there are fewer)."""
    hashes = run_hashes(points, n)
    best = np.empty(m, np.uint64)
    k = 0
    for i in range(len(hashes)):
        h = hashes[i]
        h = (h ^ (h >> _S30)) * _MIX1
        h = (h ^ (h >> _S27)) * _MIX2
        h = h ^ (h >> _S31)
        if k == m and h >= best[m - 1]:
            continue
        at = k  # where h goes: after every value below it
        while at and best[at - 1] > h:
            at -= 1
        if at and best[at - 1] == h:
            continue  # held already
        for j in range(min(k, m - 1), at, -1):
            best[j] = best[j - 1]
        best[at] = h
        if k < m:
            k += 1
    return best[:k].copy()
