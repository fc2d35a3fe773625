"""Where each of a batch of article ids sits among a part's ids.

A related list looks up a few hundred ids among the million sorted ids of a main part, twice
(the related index's rows of the dense neighbours, the dense index's rows of the candidates): a
binary search misses the cache at most of its ~20 steps, 0.2 ms per look-up at 1M. Article ids
come from a database sequence, so a part's ids are nearly contiguous: a table from ``id -
first id`` to row answers each id with one read. The table is used when the ids' range is at
most ``MAX_SPAN`` times their number (it costs 4 bytes per id of the range, built on the first
look-up); ids numbered otherwise fall back to the binary search. Both give the same rows.

:func:`sorted_find` is that binary search, for any sorted distinct values (the term hashes a
query looks up in a segment too); :func:`among` the membership test of a list's ids.

Array contract: ``ids`` ``int64 (n,)`` ascending and unique; answers are ``intp`` rows, ``-1``
for an id the part does not hold.
"""

from __future__ import annotations

from functools import cached_property
from typing import Any

import numpy as np
import numpy.typing as npt

I64 = npt.NDArray[np.int64]
Rows = npt.NDArray[np.intp]

MAX_SPAN = 4  # a table of at most 4 ids' range per row held (16 bytes per row)
MIN_TABLE = 1_024  # smaller parts are searched: a table would not pay for itself


def sorted_find(values: npt.NDArray[Any], wanted: npt.NDArray[Any]) -> Rows:
    """Position of each of ``wanted`` in ``values`` (ascending, distinct; ids, term hashes),
    ``-1`` where absent: a binary search each."""
    if not len(values):
        return np.full(len(wanted), -1, dtype=np.intp)
    pos = np.minimum(np.searchsorted(values, wanted), len(values) - 1)
    return np.where(values[pos] == wanted, pos, -1).astype(np.intp)


def among(values: npt.NDArray[Any], others: npt.NDArray[Any]) -> npt.NDArray[np.bool_]:
    """``bool (len(values),)``: whether each of ``values`` is one of ``others`` (any order; the
    few hundred ids of one list). ``others`` sorted once and a binary search each: ``np.isin``
    sorts both arrays together, or builds a table over their whole range (article ids up to the
    corpus's size), ~10x slower at these sizes; the same answer."""
    found: npt.NDArray[np.bool_] = sorted_find(np.unique(others), values) >= 0
    return found


class IdRows:
    """The rows of ids in one part's sorted ids (see the module docstring). Immutable."""

    def __init__(self, ids: I64) -> None:
        self.ids = ids

    def find(self, ids: npt.ArrayLike) -> Rows:
        """Row of each of ``ids``; ``-1`` where the part does not hold it."""
        wanted = np.asarray(ids, dtype=np.int64)
        own = self.ids
        if not len(own):
            return np.full(len(wanted), -1, dtype=np.intp)
        table = self._table
        if table is None:
            return sorted_find(own, wanted)
        offset = wanted - own[0]
        inside = (offset >= 0) & (offset < len(table))
        rows = np.full(len(wanted), -1, dtype=np.intp)
        rows[inside] = table[offset[inside]]
        return rows

    def find_one(self, article_id: int) -> int:
        """Row of one id (``-1``: not held), without arrays around it (a list's few items)."""
        own = self.ids
        if not len(own):
            return -1
        table = self._table
        if table is not None:
            offset = article_id - int(own[0])
            return int(table[offset]) if 0 <= offset < len(table) else -1
        row = int(np.searchsorted(own, article_id))
        return row if row < len(own) and int(own[row]) == article_id else -1

    @cached_property
    def _table(self) -> npt.NDArray[np.int32] | None:
        """``id - ids[0]`` -> row (``-1``: no such id), or None when the range is too wide."""
        n = len(self.ids)
        if n < MIN_TABLE or n >= 2**31:
            return None
        span = int(self.ids[-1]) - int(self.ids[0]) + 1
        if span > MAX_SPAN * n:
            return None
        table = np.full(span, -1, dtype=np.int32)
        table[self.ids - self.ids[0]] = np.arange(n, dtype=np.int32)
        return table
