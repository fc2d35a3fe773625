"""Values an index computes once and holds for the next lists: at most ``size``, then all
dropped at once.

Two memos of the read path use it: the decoded briefs of a main part, by row
(``index.briefs``), and a segment's term columns of its last queries (``index.related.segment``).
Both are asked from many threads and refilled by the next few lists, so dropping the lot past
the bound (rather than the least recently used one) is enough, and a look-up stays one dict
access. A race between threads computes a value twice, never a wrong one: the values depend
only on their key and on immutable arrays.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable
from typing import Generic, TypeVar

K = TypeVar("K", bound=Hashable)
V = TypeVar("V")


class Held(Generic[K, V]):
    """At most ``size`` values by key, all dropped when one more is made."""

    def __init__(self, size: int) -> None:
        if size < 1:
            raise ValueError(f"size must be >= 1, got {size}")
        self.size = size
        self._values: dict[K, V] = {}

    def __len__(self) -> int:
        return len(self._values)

    def get(self, key: K, make: Callable[[], V]) -> V:
        """The value held for ``key``, else ``make()``'s, held from now on."""
        found = self._values.get(key)
        if found is None:
            found = make()
            if len(self._values) >= self.size:
                self._values.clear()
            self._values[key] = found
        return found
