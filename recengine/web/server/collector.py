"""A serving worker's garbage collector: a full collection walks only what is new.

Why: CPython's full (generation 2) collection walks every object the collector tracks, and a
worker that serves the related list holds some 200,000 of them for good (the modules it has
imported, the app, its indexes' Python parts). On a 2-core machine one such collection took
120-220 ms at 1M articles, with the GIL held: every request of the worker waited for it, and
behind it the queue, which at 200 lists/s took several hundred ms more to drain. Three to nine
of them came in 2 minutes (BENCHMARKS.md: p99 156 ms and 7 % shed in such a run, 89 ms and 1 %
with this module).

The cure is CPython's own (``gc.freeze``): objects moved to the permanent generation are never
walked again. What is frozen, and when:

* at the worker's start, after a full collection, everything then alive;
* after each full collection the interpreter runs by itself (its thresholds unchanged), what
  survived it, on the loop's next tick: the first requests import and build much (the index is
  built on the first read), and what they leave is long-lived by then;
* every ``refresh_seconds`` (``web.gc_refresh_seconds``) everything is thawed: the next full
  collection walks it all once more, so cycles among frozen objects that have since become
  garbage are freed, at the cost of one slow collection per period. The indexes a write
  replaces are not among them: reference counting frees each at once, frozen or not (a test
  keeps it so; a cycle through an index would hold every replaced copy until the refresh).

``refresh_seconds`` 0 leaves the interpreter's collector as it is (nothing frozen; the pauses
are still published).

The interpreter's callback only records (it may run in any thread, inside any allocation,
even one made under a lock the metrics take); the loop's tick (about once a second) freezes
and hands the pauses to the metrics (``recengine_gc_full_collection_seconds``). Nothing here
counts the frozen objects: ``gc.get_freeze_count`` walks them all (14 ms for 400,000).
"""

from __future__ import annotations

import gc
import time
from collections.abc import Callable
from typing import Any

FULL = 2  # the oldest generation


class Collector:
    """See the module docstring. Not thread-safe but for the interpreter's callback: one
    worker's loop starts it, ticks it and stops it."""

    def __init__(self, refresh_seconds: float, clock: Callable[[], float] = time.monotonic) -> None:
        self.refresh_seconds = refresh_seconds
        self.clock = clock
        self.pauses: list[float] = []  # seconds of each full collection not yet published
        self._started_at: float | None = None
        self._due = False
        self._thawed_at = 0.0

    @property
    def freezing(self) -> bool:
        return self.refresh_seconds > 0

    def start(self) -> None:
        """Follow the interpreter's full collections; collect and freeze what is alive."""
        gc.callbacks.append(self._collected)
        if self.freezing:
            gc.collect()
            gc.freeze()
            self._thawed_at = self.clock()

    def stop(self) -> None:
        """Stop following and thaw (the interpreter is as it was, bar what was collected)."""
        if self._collected in gc.callbacks:
            gc.callbacks.remove(self._collected)
        if self.freezing:
            gc.unfreeze()

    def _collected(self, phase: str, info: dict[str, Any]) -> None:
        if info["generation"] != FULL:
            return
        if phase == "start":
            self._started_at = time.perf_counter()
        elif self._started_at is not None:
            self.pauses.append(time.perf_counter() - self._started_at)
            self._started_at = None
            self._due = True

    def tick(self) -> list[float]:
        """On the worker's loop: freeze what the last full collection left, or thaw
        everything once per ``refresh_seconds``. Returns the seconds each full collection
        since the last tick took (for the metrics)."""
        pauses, self.pauses = self.pauses, []
        if not self.freezing:
            return pauses
        if self._due:
            self._due = False
            gc.freeze()
        elif self.clock() - self._thawed_at >= self.refresh_seconds:
            self._thawed_at = self.clock()
            gc.unfreeze()
        return pauses
