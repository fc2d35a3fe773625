"""Load shedding: a worker's threads as slots, and a queue that waits at most a time budget.

Past capacity a FIFO queue grows without bound and every request is served late (at 300 req/s
against ~220 of capacity, p99 reached 14 s and kept rising). Here a request waits for one of
the worker's ``threads`` slots for at most ``budget`` seconds; one that waits longer is
refused (the caller answers 503 with ``Retry-After``), so the requests taken wait at most the
budget whatever the offered load. Priority requests (health checks) go to the front of the
queue and are not refused (up to ``size`` of them at a time): a busy worker is still a
live one.

Event-loop only (not thread-safe): :meth:`acquire` and :meth:`release` run on the loop.
"""

from __future__ import annotations

import asyncio
from collections import deque


class Slots:
    """``size`` slots; waiting for one is bounded by ``budget`` seconds (except ``priority``)."""

    def __init__(self, size: int, budget: float) -> None:
        if size < 1 or budget <= 0:
            raise ValueError(f"need size >= 1 and budget > 0, got {size}, {budget}")
        self.size, self.budget = size, budget
        self.free = size
        self.waiting: deque[asyncio.Future[None]] = deque()
        self.shed = 0
        self.priority_waiting = 0

    @property
    def busy(self) -> int:
        """Slots in use plus requests waiting for one."""
        return self.size - self.free + len(self.waiting)

    async def acquire(self, *, priority: bool = False) -> bool:
        """Take a slot: True; False when none came free within the budget (shed)."""
        if self.free > 0 and not self.waiting:
            self.free -= 1
            return True
        waiter: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        # At most `size` priority requests jump the queue: a flood of health checks is queued
        # (and shed) like any other request.
        priority = priority and self.priority_waiting < self.size
        if priority:
            self.waiting.appendleft(waiter)
            self.priority_waiting += 1
        else:
            self.waiting.append(waiter)
        try:
            await asyncio.wait([waiter], timeout=None if priority else self.budget)
        except BaseException:  # the connection went away meanwhile
            self._leave(waiter)
            raise
        finally:
            self.priority_waiting -= priority
        if not waiter.done():
            self._leave(waiter)
            self.shed += 1
            return False
        return True

    def _leave(self, waiter: asyncio.Future[None]) -> None:
        if waiter.done():
            self.release()  # it was given a slot: pass it on
        else:
            waiter.cancel()
            self.waiting.remove(waiter)

    def release(self) -> None:
        """Give a slot back: to the first waiter still waiting, else to the free count."""
        while self.waiting:
            waiter = self.waiting.popleft()
            if not waiter.done():
                waiter.set_result(None)
                return
        self.free += 1
