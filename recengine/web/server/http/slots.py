"""Load shedding: a worker's threads as slots, and a queue that waits a time budget, short
while the queue stands (CoDel) and served newest first then (adaptive LIFO).

Past capacity a FIFO queue grows without bound and every request is served late (at 300 req/s
against ~220 of capacity, p99 reached 14 s and kept rising). Here a request waits for one of
the worker's ``threads`` slots for a bounded time; one that waits longer is refused (the caller
answers 503 with ``Retry-After``).

A fixed budget alone kept the accepted requests' latency at the budget: at 2.4x capacity every
request taken had waited nearly all of it (accepted p99 ~0.37 s at a 0.25 s budget, for lists
computed in ~4 ms). A short budget alone would shed the bursts of a server below capacity. So,
as in the controlled-delay queues of Facebook's RPC servers (Maurer, "Fail at Scale", ACM Queue
2015, after Nichols and Jacobson's CoDel):

* while the queue **empties now and then** (it was empty within the last ``interval``), a
  request waits up to ``budget`` (a burst is absorbed) and requests are served in arrival order;
* once it **stands** (never empty for ``interval``: more arrives than the threads serve), a
  request waits at most ``target``, those already waiting longer than ``target`` are refused
  at the next release instead of at their budget (the client hears 503 at once), and the newest
  are served first, so the requests taken are the ones that waited least.

Priority requests (health checks) are served before any other and never refused (up to ``size``
of them at a time; more queue like any request): a busy worker is still a live one.

Event-loop only (not thread-safe): :meth:`acquire` and :meth:`release` run on the loop.
"""

from __future__ import annotations

import asyncio
import time
from collections import deque
from collections.abc import Callable

Clock = Callable[[], float]


class _Waiter:
    __slots__ = ("future", "since")

    def __init__(self, future: asyncio.Future[bool], since: float) -> None:
        self.future, self.since = future, since


class Slots:
    """``size`` slots; waiting for one is bounded by ``budget`` seconds, by ``target`` while
    the queue stands for ``interval`` (module docstring); ``priority`` requests are exempt.

    ``target`` and ``interval`` of None: a fixed budget, first come first served.
    """

    def __init__(
        self,
        size: int,
        budget: float,
        target: float | None = None,
        interval: float | None = None,
        clock: Clock = time.monotonic,
    ) -> None:
        if size < 1 or budget <= 0:
            raise ValueError(f"need size >= 1 and budget > 0, got {size}, {budget}")
        codel = (target, interval)
        if codel != (None, None) and (None in codel or min(target or 0, interval or 0) <= 0):
            raise ValueError(
                f"need target and interval both > 0 or both None: {target}, {interval}"
            )
        self.size, self.budget, self.target, self.interval = size, budget, target, interval
        self.clock = clock
        self.free = size
        self.waiting: deque[_Waiter] = deque()
        self.first: deque[_Waiter] = deque()  # priority requests
        self.shed = 0
        self.empty_at = clock()  # when the queue was last seen empty

    @property
    def busy(self) -> int:
        """Slots in use plus requests waiting for one."""
        return self.size - self.free + len(self.waiting) + len(self.first)

    def standing(self, now: float) -> bool:
        """Whether the queue has not been empty for ``interval`` (never, without CoDel)."""
        return (
            self.interval is not None
            and bool(self.waiting)
            and now - self.empty_at >= self.interval
        )

    def _emptied(self) -> None:
        if not self.waiting:
            self.empty_at = self.clock()

    async def acquire(self, *, priority: bool = False, waited: float = 0.0) -> bool:
        """Take a slot: True; False when refused (shed). ``waited``: seconds the request
        waited before it was read, taken from its budget."""
        now = self.clock()
        if self.free > 0 and not self.waiting and not self.first:
            self.free -= 1
            return True
        if not self.waiting:
            self.empty_at = now  # empty until this one
        waiter = _Waiter(asyncio.get_running_loop().create_future(), now - waited)
        # At most `size` priority requests jump the queue: a flood of health checks is queued
        # (and shed) like any other request.
        priority = priority and len(self.first) < self.size
        budget = None
        if priority:
            self.first.append(waiter)
        else:
            budget = self.target if self.standing(now) and self.target else self.budget
            budget -= waited
            if budget <= 0:
                self.shed += 1
                return False
            self.waiting.append(waiter)
        try:
            await asyncio.wait([waiter.future], timeout=budget)
        except BaseException:  # the connection went away meanwhile
            self._leave(waiter)
            raise
        if not waiter.future.done():
            self._leave(waiter)
            self.shed += 1
            return False
        if not waiter.future.result():
            self.shed += 1
            return False
        return True

    def _leave(self, waiter: _Waiter) -> None:
        if waiter.future.done():
            if waiter.future.result():
                self.release()  # it was given a slot: pass it on
        else:
            waiter.future.cancel()
            (self.first if waiter in self.first else self.waiting).remove(waiter)
            self._emptied()

    def release(self) -> None:
        """Give a slot back: to a priority request, else to a waiter (the first in arrival
        order, or the newest while the queue stands, refusing those past ``target``), else to
        the free count."""
        while self.first:
            if _give(self.first.popleft(), True):
                return
        now = self.clock()
        if self.standing(now) and self.target is not None:
            while self.waiting and now - self.waiting[0].since > self.target:
                _give(self.waiting.popleft(), False)  # refused now, not at its budget
            while self.waiting:
                if _give(self.waiting.pop(), True):
                    self._emptied()
                    return
        while self.waiting:
            if _give(self.waiting.popleft(), True):
                self._emptied()
                return
        self._emptied()
        self.free += 1


def _give(waiter: _Waiter, slot: bool) -> bool:
    """Answer a waiter still waiting (True: a slot, False: refused); False if it was not."""
    if waiter.future.done():
        return False
    waiter.future.set_result(slot)
    return slot
