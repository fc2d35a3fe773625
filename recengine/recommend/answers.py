"""A process-local cache of computed answers (related lists, duplicate clusters), kept exact.

An answer is a pure function of the model version, the request's parameters and the database
as of a change sequence. The cache follows the process's related-articles index
(``index.follower``): its entries are valid at the index's ``(version, seq)``, and every step
the index takes (any committed write it applies: articles, clusters, editorial overrides, a
model switch; :func:`follow`) empties it. **Invalidation is by sequence**: between writes every
repeated request is answered from memory; after a write each answer is computed once more
(its ETag, a hash of the body, is unchanged when the body is, so conditional requests still
get 304). A finer test (drop only the answers a changed article can alter) would have to
track every input of a list: the postings heads it read, its pins and blocks, its cluster
rows; it is left for when writes are frequent enough to need it.

Bounded: at most ``max_bytes`` (the bodies plus a fixed cost per entry); least recently used
answers go first. Thread-safe (one lock; every operation is short).
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Hashable, Sequence
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from recengine.index.follower import Step

V = TypeVar("V")
ENTRY_BYTES = 400  # bookkeeping per entry (key, list node, record) beside the body


@dataclass
class CacheStats:
    hits: int = 0
    misses: int = 0
    stored: int = 0
    evicted: int = 0
    resets: int = 0


@dataclass
class _Entry(Generic[V]):
    value: V
    size: int


class AnswerCache(Generic[V]):
    """Answers by key, valid at the cache's ``(version, seq)`` (see the module docstring).

    Args:
        max_bytes: the memory bound (0 disables the cache: nothing is stored).
    """

    def __init__(self, max_bytes: int) -> None:
        if max_bytes < 0:
            raise ValueError(f"max_bytes must be >= 0, got {max_bytes}")
        self.max_bytes = max_bytes
        self.version: int | None = None
        self.seq: int | None = None
        self.generation = 0  # resets so far: an answer computed across one is not kept
        self.bytes = 0
        self.stats = CacheStats()
        self._entries: OrderedDict[Hashable, _Entry[V]] = OrderedDict()
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self._entries)

    def get(self, key: Hashable, *, version: int, seq: int, count_miss: bool = True) -> V | None:
        """The answer for ``key`` if the cache is valid for an index at ``(version, seq)``
        (``count_miss=False``: a look-up whose miss is counted by the one that follows)."""
        with self._lock:
            entry = self._entries.get(key)
            if entry is None or (self.version, self.seq) != (version, seq):
                self.stats.misses += count_miss
                return None
            self._entries.move_to_end(key)
            self.stats.hits += 1
            return entry.value

    def put(
        self,
        key: Hashable,
        value: V,
        *,
        size: int,
        version: int,
        seq: int,
        generation: int | None = None,
    ) -> bool:
        """Keep ``value``, computed from an index at ``(version, seq)``; False (not kept) when
        the cache is at another position (the index moved on meanwhile) or, given the
        ``generation`` read before computing, was reset since."""
        cost = size + ENTRY_BYTES
        with self._lock:
            moved = generation is not None and generation != self.generation
            if moved or (self.version, self.seq) != (version, seq) or cost > self.max_bytes:
                return False
            old = self._entries.pop(key, None)
            if old is not None:
                self.bytes -= old.size
            self._entries[key] = _Entry(value, cost)
            self.bytes += cost
            self.stats.stored += 1
            while self.bytes > self.max_bytes:
                _, oldest = self._entries.popitem(last=False)
                self.bytes -= oldest.size
                self.stats.evicted += 1
            return True

    def reset(self, version: int | None, seq: int | None) -> None:
        """Forget everything; the cache is (empty and) valid at ``(version, seq)``."""
        with self._lock:
            self._forget()
            self.version, self.seq = version, seq

    def clear(self) -> None:
        """Forget everything; the cache stays valid at its position."""
        with self._lock:
            self._forget()

    def _forget(self) -> None:
        self._entries.clear()
        self.bytes = 0
        self.generation += 1
        self.stats.resets += 1

    def describe(self) -> dict[str, Any]:
        return {
            "entries": len(self._entries),
            "bytes": self.bytes,
            "version": self.version,
            "seq": self.seq,
            **self.stats.__dict__,
        }


def follow(caches: Sequence[AnswerCache[Any]], step: Step[Any]) -> None:
    """A listener of the related-articles follower (``Follower.listen``): the index moved, so
    every cache is emptied and valid at its new position (by sequence)."""
    for cache in caches:
        cache.reset(step.after.version, step.after.seq)


def drop(caches: Sequence[AnswerCache[Any]], step: Step[Any]) -> None:
    """A listener of another follower the answers depend on (the dense part of related lists,
    ``derived.dense``): it moved, so every cache is emptied at its position; an answer computed
    before (e.g. without the dense part while it was opening) is not kept (``generation``).
    A compacted copy swapped in at the same position (same content, ``Follower.Step``) changes
    no answer and is let pass."""
    before, after = step.before, step.after
    if before is not None and (before.version, before.seq) == (after.version, after.seq):
        return
    for cache in caches:
        cache.clear()
