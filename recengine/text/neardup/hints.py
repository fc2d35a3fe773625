"""What an ingest computed of the texts it is about to write, for the steps after the write.

An ingest cleans each new text once, outside the write lock, for its tokens; the steps inside
the write (the passage index applying the new rows, the verification of the new articles'
duplicate candidates) need values of the same clean text. :class:`TextHints` hands those on,
keyed by the raw ``(title, content)`` they were computed from, so a step that meets a row with
exactly that text takes them instead of cleaning it again; one without a hint computes the
value itself (the same function of the text: a hint only saves the work).

It keeps the values of its two latest :meth:`TextHints.put` calls: the batch being written and
the next one, analysed meanwhile (``pipeline.ingest.ingester``), so what it holds stays bounded by
two batches.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from typing import Generic, TypeVar

V = TypeVar("V")
Key = tuple[str, str]  # title, content as stored


class TextHints(Generic[V]):
    """Values of ``(title, content)`` texts about to be written (see the module docstring);
    safe to share between threads (a server's writes)."""

    def __init__(self) -> None:
        self._generations: tuple[dict[Key, V], dict[Key, V]] = ({}, {})
        self._lock = threading.Lock()

    def put(self, items: Sequence[Key], values: Sequence[V]) -> None:
        """The values of ``items``' texts, in order; the call before the last is forgotten."""
        fresh = dict(zip(items, values, strict=True))
        with self._lock:
            self._generations = (fresh, self._generations[0])

    def get(self, title: str, content: str) -> V | None:
        """The value put for exactly this text, or None."""
        key = (title, content)
        for generation in self._generations:
            found = generation.get(key)
            if found is not None:
                return found
        return None
