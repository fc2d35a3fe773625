"""The compiled walks of :mod:`recengine.index.neardup.blocks` (numba; imported only when a pass
runs, so that importing the package does not load numba).

Arguments are the tables of :class:`recengine.index.neardup.blocks.BlockTables` (int32, one row per
block), ``fps`` ``uint64``, ``shifts`` / ``masks`` ``uint64`` per block. ``earlier`` and
``within`` write their pairs into ``rows`` / ``cols`` (``int64``) while there is room and
return how many there are: a caller whose arrays were too short runs them again, longer.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numba import njit

_M1 = np.uint64(0x5555555555555555)
_M2 = np.uint64(0x3333333333333333)
_M4 = np.uint64(0x0F0F0F0F0F0F0F0F)
_H01 = np.uint64(0x0101010101010101)
_ONE, _TWO, _FOUR, _TOP, _ZERO = (np.uint64(v) for v in (1, 2, 4, 56, 0))
# A group's part before an article is scanned (sequential reads) while it holds at most this
# many entries per canonical in it (+ SCAN_MIN); past that the chain is walked (a random read
# per canonical): a cluster of 10,000 copies has one canonical in its groups.
SCAN_SHARE = 4
SCAN_MIN = 32


@njit(cache=True, inline="always")
def popcount(x: Any) -> Any:
    """Set bits of a ``uint64`` (SWAR; LLVM emits ``popcnt`` where the CPU has it). Every
    constant is ``uint64``: numba turns ``uint64`` mixed with ``int64`` into float."""
    x = x - ((x >> _ONE) & _M1)
    x = (x & _M2) + ((x >> _TWO) & _M2)
    x = (x + (x >> _FOUR)) & _M4
    return (x * _H01) >> _TOP


@njit(cache=True, inline="always")
def first_block(x: Any, t: int, shifts: Any, masks: Any) -> bool:
    """No block before ``t`` is equal (``x`` = the pair's xor): the pair's first equal block
    is ``t``, so only table ``t`` reports it."""
    for u in range(t):  # noqa: SIM110 (numba compiles the loop; not all() of a generator)
        if (x >> shifts[u]) & masks[u] == _ZERO:
            return False
    return True


@njit(cache=True)
def chain(
    group: Any, rank: Any, prev: Any, last: Any, count: Any, flag: Any, positions: Any
) -> None:
    """Make ``positions`` (ascending) canonicals: flag them in the sorted tables and append
    them to their groups' chains."""
    for p in positions:
        for t in range(group.shape[0]):
            g = group[t, p]
            prev[t, p] = last[t, g]
            last[t, g] = p
            count[t, g] += 1
            flag[t, rank[t, p]] = True


@njit(cache=True)
def earlier(
    fps: Any, k: int, shifts: Any, masks: Any, order: Any, rank: Any, group: Any, head: Any,
    sorted_fps: Any, flag: Any, prev: Any, last: Any, count: Any,
    start: int, stop: int, rows: Any, cols: Any,
) -> int:  # fmt: skip
    """Each position of ``start..stop`` against the canonicals of its groups: a scan of the
    group's part of the sorted table before it (contiguous) while the canonicals are a fair
    share of it, a walk of the group's chain (one step per canonical) when they are few."""
    found, room = 0, len(rows)
    radius = np.uint64(k)
    for t in range(group.shape[0]):
        t_group, t_rank, t_head, t_fps = group[t], rank[t], head[t], sorted_fps[t]
        t_flag, t_order, t_count, t_last, t_prev = flag[t], order[t], count[t], last[t], prev[t]
        for p in range(start, stop):
            f = fps[p]
            g = t_group[p]
            lo, hi = t_head[g], t_rank[p]
            if hi - lo <= SCAN_SHARE * t_count[g] + SCAN_MIN:
                for i in range(lo, hi):
                    x = f ^ t_fps[i]
                    if popcount(x) <= radius and t_flag[i] and first_block(x, t, shifts, masks):
                        if found < room:
                            rows[found] = p - start
                            cols[found] = t_order[i]
                        found += 1
                continue
            c = t_last[g]
            while c >= 0:
                x = f ^ fps[c]
                if popcount(x) <= radius and first_block(x, t, shifts, masks):
                    if found < room:
                        rows[found] = p - start
                        cols[found] = c
                    found += 1
                c = t_prev[c]
    return found


@njit(cache=True)
def within(
    fps: Any, k: int, shifts: Any, masks: Any, order: Any, rank: Any, group: Any, head: Any,
    sorted_fps: Any, start: int, stop: int, rows: Any, cols: Any,
) -> int:  # fmt: skip
    """Each position of ``start..stop`` against its group neighbours before it in the block
    (just before it in the sorted table: a group lists its positions ascending)."""
    found, room = 0, len(rows)
    radius = np.uint64(k)
    for t in range(group.shape[0]):
        t_group, t_rank, t_head = group[t], rank[t], head[t]
        t_fps, t_order = sorted_fps[t], order[t]
        for p in range(start, stop):
            f = fps[p]
            lo = t_head[t_group[p]]
            i = t_rank[p] - 1
            while i >= lo and t_order[i] >= start:
                x = f ^ t_fps[i]
                if popcount(x) <= radius and first_block(x, t, shifts, masks):
                    if found < room:
                        rows[found] = p - start
                        cols[found] = t_order[i] - start
                    found += 1
                i -= 1
    return found
