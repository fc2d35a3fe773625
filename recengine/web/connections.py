"""A worker's cap on open connections, and the idle ones it closes first to stay under it.

A flood of ~4,300 idle or slow connections at once (issue 46) filled both workers' connection
slots (gunicorn's ``worker_connections``, 1,000 each), after which the workers stopped
accepting: every later connection, health checks among them, waited in the kernel's accept
queue until the idle ones reached their header timeout (10 s), and 2 of 41 health checks timed
out. Now a worker at its cap (``web.max_connections``) goes on accepting and makes room by
closing the connection that has waited longest for a request head (a client that connected
and sent nothing or half a head, or a kept-alive connection between requests): a new client is
served, a stalled one loses its place. Connections that are sending a body or waiting for their
answer are never closed for this; a worker whose connections are all such stops accepting
until one ends, as before. The listen backlog is raised (``web.server``) so that a burst of
connections waits in the kernel rather than being refused.
"""

from __future__ import annotations

import asyncio
import resource
import time
from collections.abc import Callable, Iterator

Clock = Callable[[], float]
# descriptors beyond the connections: listeners, the database's, the index and log files
SPARE_FILES = 256


class IdleConnections:
    """The connections of a worker waiting for a request head, oldest first, and those closed
    to make room (their tasks still ending). Event-loop only."""

    def __init__(self, clock: Clock = time.monotonic) -> None:
        self.clock = clock
        self.waiting: dict[asyncio.Task[None], float] = {}
        self.closing: set[asyncio.Task[None]] = set()
        self.closed = 0  # closed to make room, since the worker started

    def __iter__(self) -> Iterator[asyncio.Task[None]]:
        return iter(list(self.waiting))

    def __len__(self) -> int:
        return len(self.waiting)

    def add(self, task: asyncio.Task[None]) -> None:
        """``task``'s connection waits for a request head from now on."""
        self.waiting[task] = self.clock()

    def discard(self, task: asyncio.Task[None]) -> None:
        """``task``'s connection is no longer waiting (a head arrived, or it ended)."""
        self.waiting.pop(task, None)

    def ended(self, task: asyncio.Task[None]) -> None:
        self.waiting.pop(task, None)
        self.closing.discard(task)

    def close_oldest(self) -> bool:
        """Close the connection that has waited longest; False when none waits."""
        if not self.waiting:
            return False
        task = next(iter(self.waiting))
        del self.waiting[task]
        task.cancel()
        self.closing.add(task)
        self.closed += 1
        return True


def raise_open_files_limit(connections: int) -> int:
    """Raise this process's soft limit on open files (often 1,024) towards its hard limit, so
    that ``connections`` sockets fit; the limit now in force."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    wanted = connections + SPARE_FILES
    if soft != resource.RLIM_INFINITY and soft < wanted:
        new = wanted if hard == resource.RLIM_INFINITY else min(wanted, hard)
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (new, hard))
        except (ValueError, OSError):
            return soft
        return new
    return soft
