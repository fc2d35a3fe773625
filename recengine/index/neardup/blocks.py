"""Radius-k candidates of fingerprints in rank order, from sorted block tables (compiled).

The reindex's leader pass (:mod:`recengine.pipeline.clusters.leader_pass`) walks every article in
rank order and asks, a block of positions at a time, two questions: which *canonicals* decided so
far lie within Hamming ``k`` of each article, and which pairs within the block do. A FAISS radius
index of the canonicals answers the first with one hash-table search per article (~50 us at
10M: 517 s for a 10M pass, five times the FAISS self-join), and a brute-force comparison of the
block answers the second with ``block^2 / 2`` distances whatever the data.

Both come from the same static tables here, built once over every position (Manku, Jain & Das
Sarma 2007; the pigeonhole argument of :mod:`recengine.index.neardup.layout` with ``k + 1`` blocks
and no flips): two fingerprints within ``k`` bits agree on at least one of ``k + 1`` disjoint bit
blocks. For each block ``t`` the positions are sorted by (block value, position), so a group of
equal values lists its positions in rank order, and

* **canonicals in reach**: each group keeps a chain of its canonicals (``last`` per group,
  ``prev`` per position), appended as the pass decides them. An article walks the chains of its
  ``k + 1`` groups: the canonicals sharing a block with it, and only those (a templated cluster
  of 10,000 copies has one canonical, so one step per table per article);
* **pairs within a block**: an article's group neighbours just before it in the sorted table
  are the earlier positions with the same block value; the walk stops at the block's start.

A pair equal on several blocks is reported once, by its first equal block. Every pair is then
checked with a popcount, so answers are exact (``tests/index/test_blocks.py`` against brute force).
Work: the group members visited (``n / 2**b`` per table for uniform fingerprints of ``b``-bit
blocks; about 150 at 10M, k = 3) and the output; memory 25 bytes per position per table
(100 at k = 3; int32 positions), the per-group arrays at most ``2**b`` long. The kernels are
compiled with numba on first use (cached on disk), so importing this module costs nothing
until a pass runs.

Array contracts: fingerprints ``uint64 (n,)`` by position (rank order); positions ``int64``;
results ``(rows, cols)`` ``int64``: rows are offsets in the block (``p - start``).
"""

from __future__ import annotations

import importlib
from functools import cache
from types import ModuleType
from typing import Any

import numpy as np
import numpy.typing as npt

FpArray = npt.NDArray[np.uint64]
PosArray = npt.NDArray[np.int64]
MAX_POSITIONS = 2**31 - 1  # tables hold int32 positions


def block_layout(k: int) -> list[tuple[int, int]]:
    """``(offset, width)`` of the ``k + 1`` disjoint blocks that cover the 64 bits (widths
    differ by at most one bit); the Spark engine's join cuts the same blocks.

    Raises:
        ValueError: ``k`` outside ``[0, 63]``.
    """
    if not 0 <= k < 64:
        raise ValueError(f"k must be in [0, 63], got {k}")
    count = k + 1
    widths = [64 // count + (1 if t < 64 % count else 0) for t in range(count)]
    offsets = np.cumsum([0, *widths[:-1]]).tolist()
    return list(zip(offsets, widths, strict=True))


class BlockTables:
    """Sorted block tables over ``fps`` (positions in rank order) and the chains of the
    canonicals added so far.

    Args:
        fps: ``uint64 (n,)``, position ``p`` the ``p``-th article in rank order.
        k: the radius (Hamming ``<= k``).

    Raises:
        ValueError: ``k`` outside ``[0, 63]`` or more than ``MAX_POSITIONS`` positions.
    """

    def __init__(self, fps: FpArray, k: int) -> None:
        bits = block_layout(k)
        n = len(fps)
        if n > MAX_POSITIONS:
            raise ValueError(f"{n} positions: at most {MAX_POSITIONS}")
        self.k = k
        self.fps = np.ascontiguousarray(fps, dtype=np.uint64)
        self.shifts = np.array([s for s, _ in bits], dtype=np.uint64)
        self.masks = np.array([(1 << w) - 1 for _, w in bits], dtype=np.uint64)
        count = len(bits)
        self.order = np.empty((count, n), np.int32)  # table t: positions by (value, position)
        self.rank = np.empty((count, n), np.int32)  # position -> index in order[t]
        self.group = np.empty((count, n), np.int32)  # position -> dense group number
        self.sorted_fps = np.empty((count, n), np.uint64)  # fps[order[t]]: scans read in line
        self.flag = np.zeros((count, n), bool)  # by index in order[t]: a canonical
        self.prev = np.full((count, n), -1, np.int32)  # canonical -> the one before it
        firsts = []
        for t in range(count):
            keys = ((self.fps >> self.shifts[t]) & self.masks[t]).astype(_key_type(bits[t][1]))
            order = np.argsort(keys, kind="stable")  # stable: positions ascending in a group
            self.order[t] = order
            self.rank[t, order] = np.arange(n, dtype=np.int32)
            self.sorted_fps[t] = self.fps[order]
            sorted_keys = keys[order]
            fresh = np.ones(n, bool)
            fresh[1:] = sorted_keys[1:] != sorted_keys[:-1]
            self.group[t, order] = np.cumsum(fresh, dtype=np.int32) - 1
            firsts.append(np.flatnonzero(fresh).astype(np.int32))
        groups = max(1, *(len(f) for f in firsts))  # at most 2**width: 65,536 at k = 3
        self.head = np.zeros((count, groups), np.int32)  # group -> its first index
        for t, first in enumerate(firsts):
            self.head[t, : len(first)] = first
        self.last = np.full((count, groups), -1, np.int32)  # group -> latest canonical
        self.count = np.zeros((count, groups), np.int32)  # group -> its canonicals
        self._rows, self._cols = np.empty(4_096, np.int64), np.empty(4_096, np.int64)

    def add_canonicals(self, positions: PosArray) -> None:
        """Make ``positions`` canonicals (ascending, each later than every canonical so far)."""
        tables = (self.group, self.rank, self.prev, self.last, self.count, self.flag)
        _kernels().chain(*tables, np.asarray(positions, np.int64))

    def earlier(self, start: int, stop: int) -> tuple[PosArray, PosArray]:
        """For positions ``start..stop``: the canonicals added so far within ``k`` of each,
        ``(rows, cols)``, each pair once (rows: offsets; cols: positions)."""
        walk = _kernels().earlier
        args = (*self._sorted(), self.flag, self.prev, self.last, self.count)
        return self._filled(lambda r, c: walk(*args, start, stop, r, c))

    def within(self, start: int, stop: int) -> tuple[PosArray, PosArray]:
        """Pairs of positions ``start..stop`` within ``k`` of each other, ``(rows, cols)`` as
        offsets, ``col < row``, each pair once."""
        walk = _kernels().within
        args = self._sorted()
        return self._filled(lambda r, c: walk(*args, start, stop, r, c))

    def _filled(self, walk: Any) -> tuple[PosArray, PosArray]:
        """Run a kernel into the reusable buffers, again into longer ones if they were short
        (pairs are few for most blocks: one pass, no allocation beyond the result copy)."""
        count = int(walk(self._rows, self._cols))
        if count > len(self._rows):
            self._rows, self._cols = np.empty(count, np.int64), np.empty(count, np.int64)
            walk(self._rows, self._cols)
        return self._rows[:count].copy(), self._cols[:count].copy()

    def _sorted(self) -> tuple[Any, ...]:
        return (self.fps, self.k, self.shifts, self.masks, self.order, self.rank, self.group,
                self.head, self.sorted_fps)  # fmt: skip


def _key_type(width: int) -> type[np.unsignedinteger[Any]]:
    """The narrowest unsigned type of a ``width``-bit key: numpy's stable sort of 8- and 16-bit
    keys is a radix sort (a 10M table in a fraction of the 64-bit sort's time)."""
    for kind in (np.uint8, np.uint16, np.uint32):
        if width <= np.iinfo(kind).bits:
            return kind
    return np.uint64


@cache
def _kernels() -> ModuleType:
    """The compiled table walks (numba compiles them on first use, or loads its disk cache)."""
    return importlib.import_module("recengine.index.neardup.block_kernels")
