"""Totals over a window of days, kept in memory and brought up to date cheaply: the days
before today change no more, today's do.

Readers' signals are counted per day (engagement counters) or stamped with their time (reads),
and a ranking reads their totals over the last ``days`` days. A :class:`Window` holds two
summaries built by the same function: ``past``, the days before today (built when the day
changes, once a day), and ``today`` (built again when older than ``refresh_s``); lookups add
the two. So a refresh reads only today's rows, whatever the window's length, and a new click
or read is in the lists within ``refresh_s``; everything is rebuilt from SQL (the source of
truth) at least once a day and after every restart.

Thread-safe: one thread refreshes at a time while the others keep the summaries they have. In
servers the refresh runs in a thread of its own (a request never waits for one; until a
process's first build is done its summaries are empty); elsewhere in the calling thread.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta
from typing import Generic, Protocol, TypeVar

from sqlalchemy.orm import Session, sessionmaker

log = logging.getLogger(__name__)
T = TypeVar("T")

# (session, first day, last day, whether they are the past half) -> a summary of those days
Build = Callable[[Session, date, date, bool], T]


def utc_now() -> datetime:
    return datetime.now(UTC)


class PastWatch(Protocol):
    """Says whether rows of the days before today arrived since the past half was built (a
    signal whose rows may come late: reads stamped with their own time)."""

    def mark(self, session: Session) -> None:
        """Called just before the past half is built: what is stored now is in it."""
        ...

    def moved(self, session: Session, today: date) -> bool:
        """Whether rows stamped before ``today`` arrived since the last mark or look."""
        ...


@dataclass(frozen=True)
class Halves(Generic[T]):
    """The two summaries of a window: the days before today, and today."""

    past: T
    today: T
    day: date


class Window(Generic[T]):
    """The last ``days`` days of a signal, today included (see the module docstring).

    Args:
        build: a summary of a range of days, read in the session given.
        empty: the summary of no days at all (before the first build).
        days: the window's length in days, today included.
        refresh_s: seconds today's summary is used before it is built again (0: every call).
        clock: the time now (tests and the click simulator pass their own).
        watch: for a signal whose past days can still change, what says they did (the past
            half is then built again at the next refresh).
        factory: sessions to refresh with in a thread of its own (servers: a request never
            waits for a refresh); None: in the calling thread, with its session (tests,
            benchmarks, the command line: results never lag).
    """

    def __init__(
        self,
        build: Build[T],
        empty: T,
        days: int,
        refresh_s: float,
        clock: Callable[[], datetime] = utc_now,
        watch: PastWatch | None = None,
        factory: sessionmaker[Session] | None = None,
    ) -> None:
        self.build, self.days, self.refresh_s, self.clock = build, days, refresh_s, clock
        self.watch, self.factory = watch, factory
        self._halves: Halves[T] | None = None
        self._empty = empty
        self._built_at = -float("inf")  # clock time (Unix seconds) of today's last build
        self._lock = threading.Lock()

    def current(self, session: Session) -> Halves[T]:
        """The summaries, refreshed first when due: in the calling thread (with ``session``),
        or, with a ``factory``, in a thread of its own while the caller goes on with the
        summaries there are (empty until the first build is done)."""
        halves = self._halves
        if halves is not None and not self._due(halves):
            return halves
        if self.factory is not None:
            self._in_background(self.factory)
            return halves if halves is not None else self.empty()
        if not self._lock.acquire(blocking=halves is None):
            assert halves is not None
            return halves
        try:
            halves = self._halves
            if halves is None or self._due(halves):
                halves = self._refresh(session, halves)
            return halves
        finally:
            self._lock.release()

    def _in_background(self, factory: sessionmaker[Session]) -> None:
        if not self._lock.acquire(blocking=False):
            return  # another thread is at it

        def run() -> None:
            try:
                with factory() as session:
                    self._refresh(session, self._halves)
            except Exception:  # SQL down...: the summaries there are stay; tried again later
                log.exception("readers' signals: could not refresh their totals")
            finally:
                self._lock.release()

        threading.Thread(target=run, name="recengine-signals", daemon=True).start()

    def _due(self, halves: Halves[T]) -> bool:
        now = self.clock()
        return halves.day != now.date() or now.timestamp() - self._built_at >= self.refresh_s

    def _refresh(self, session: Session, halves: Halves[T] | None) -> Halves[T]:
        now = self.clock()
        today = now.date()
        watch = self.watch
        if (
            halves is not None
            and halves.day == today
            and not (watch and watch.moved(session, today))
        ):
            past = halves.past
        elif self.days > 1:
            if watch is not None:
                watch.mark(session)
            first = today - timedelta(days=self.days - 1)
            past = self.build(session, first, today - timedelta(days=1), True)
        else:
            past = self._empty
        self._halves = Halves(past, self.build(session, today, today, False), today)
        self._built_at = now.timestamp()
        return self._halves

    def empty(self) -> Halves[T]:
        """No signal at all (a list ranked without this window's signal)."""
        return Halves(self._empty, self._empty, self.clock().date())
