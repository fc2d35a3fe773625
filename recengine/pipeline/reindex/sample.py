"""A sample spread evenly over ids, drawn from keyset pages of ids: what the fits of a reindex
read (the dense part's LSA, ``pipeline.reindex.dense_fit``; the new words,
``pipeline.reindex.new_words``) so that their memory is bounded by the sample whatever the corpus
size, and every engine reading the same database draws the same sample."""

from __future__ import annotations

import math
from collections.abc import Callable

PAGE = 50_000  # ids per page (one short read transaction each)


def spread_ids(read_page: Callable[[int, int], list[int]], n: int, sample: int) -> list[int]:
    """Every ``ceil(n / sample)``-th id of the pages, in order.

    Args:
        read_page: ``(after_id, limit) ->`` up to ``limit`` ids greater than ``after_id``,
            ascending (empty at the end).
        n: how many ids the pages hold (an estimate is fine: it sets the step only).
        sample: at most this many ids are wanted.
    """
    step, last, seen = max(1, math.ceil(n / sample)), 0, 0
    out: list[int] = []
    while page := read_page(last, PAGE):
        out += page[(-seen) % step :: step]
        seen, last = seen + len(page), page[-1]
    return out
