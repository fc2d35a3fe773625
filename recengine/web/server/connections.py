"""How a worker accepts connections: a cap on those it holds, the idle ones closed first.

A flood of ~4,300 idle or slow connections at once (issue 46) filled both workers' connection
slots (gunicorn's ``worker_connections``, 1,000 each), after which the workers stopped
accepting: every later connection, health checks among them, waited in the kernel's accept
queue until the idle ones reached their header timeout (10 s), and 2 of 41 health checks timed
out. Now a worker at its cap (``web.max_connections``) goes on accepting and makes room by
closing the connection that has waited longest for a request head (a client that connected
and sent nothing or half a head, or a kept-alive connection between requests): a new client is
served, a stalled one loses its place. Connections that are sending a body or waiting for their
answer are never closed for this; a worker whose connections are all such stops accepting
until one ends, as before. The listen backlog is raised (``web.server.settings``) so that a burst of
connections waits in the kernel rather than being refused.
"""

from __future__ import annotations

import asyncio
import resource
import time
from collections.abc import Callable, Coroutine, Iterator
from typing import Any

Clock = Callable[[], float]
ACCEPT_DELAY_PER_CONNECTION = 0.0005
ACCEPT_DELAY_MAX = 0.005
# Connections taken per wake-up: with every worker busy the delay above must not cap the rate
# of accepts (one per 5 ms would be 200/s per worker), so a worker takes what is waiting.
ACCEPT_BATCH = 8
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


def accept_delay(connections: int, parked: int) -> float:
    """Seconds a worker holding ``connections`` waits before accepting another (module
    docstring): the ``parked`` ones, beacons waiting for their group commit, do not count."""
    return min(ACCEPT_DELAY_PER_CONNECTION * max(0, connections - parked), ACCEPT_DELAY_MAX)


class Acceptor:
    """How recengine's worker (:class:`recengine.web.server.worker.Worker`) accepts connections: a
    little later the more it holds (the worker's module docstring), at once while more wait
    than a batch takes, and at its cap by closing the oldest idle connection. The worker
    provides the state below and :meth:`_connection`."""

    loop: asyncio.AbstractEventLoop
    sockets: list[Any]
    alive: bool
    connections: int
    parked: int
    idle: IdleConnections
    max_connections: int
    accepting: bool
    backlogged: bool
    names: dict[Any, Any]
    tasks: set[asyncio.Task[None]]

    def _connection(self, sock: Any, client: Any, server: Any) -> Coroutine[Any, Any, None]:
        raise NotImplementedError

    def _accepting(self, on: bool) -> None:
        if on == self.accepting:
            return
        self.accepting = on
        for listener in self.sockets:
            if on:
                listener.setblocking(False)
                self.loop.add_reader(listener.fileno(), self._readable, listener)
            else:
                self.loop.remove_reader(listener.fileno())

    def _readable(self, listener: Any) -> None:
        """A connection is waiting: take it now if idle (or more were waiting than the last
        batch took), else after the others had a chance."""
        delay = 0.0 if self.backlogged else accept_delay(self.connections, self.parked)
        if delay <= 0:
            self._accept(listener)
            return
        self._accepting(False)
        self.loop.call_later(delay, self._accept, listener)

    def _name(self, listener: Any) -> Any:
        """A listener's address (asked once: a system call per connection otherwise)."""
        name = self.names.get(listener)
        if name is None:
            name = self.names[listener] = listener.getsockname()
        return name

    def _full(self) -> bool:
        """At the connection cap (those being closed to make room do not count)."""
        return self.connections - len(self.idle.closing) >= self.max_connections

    def _accept(self, listener: Any) -> None:
        """Take up to ACCEPT_BATCH connections; at the cap, each closes the one that has
        waited longest for a request head (:mod:`recengine.web.server.connections`)."""
        if not self.alive:
            return  # stopping: the listener is closed, or about to be
        taken = 0
        while taken < ACCEPT_BATCH and (not self._full() or len(self.idle)):
            try:
                sock, client = listener.accept()
            except (BlockingIOError, InterruptedError, ConnectionAbortedError):
                break  # none left (another worker took it)
            if self._full():
                self.idle.close_oldest()
            taken += 1
            self.connections += 1  # (asyncio makes the socket non-blocking)
            task = self.loop.create_task(self._connection(sock, client, self._name(listener)))
            self.tasks.add(task)
            task.add_done_callback(self.tasks.discard)
        self.backlogged = taken == ACCEPT_BATCH
        self._accepting(self.alive and (not self._full() or len(self.idle) > 0))
