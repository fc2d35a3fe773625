"""Totals over a window of days: the past built once a day (again when late rows arrive),
today's refreshed by the clock; in servers, refreshed in a thread of its own."""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator
from datetime import UTC, date, datetime, timedelta
from typing import Any

from recengine.recommend.signals.window import Window

T0 = datetime(2026, 12, 1, 10, 0, tzinfo=UTC)


class Clock:
    def __init__(self) -> None:
        self.now = T0

    def __call__(self) -> datetime:
        return self.now


class Builds:
    """A fake summary: which days it was built for, counted."""

    def __init__(self) -> None:
        self.calls: list[tuple[date, date, bool]] = []
        self.started = threading.Event()
        self.go = threading.Event()
        self.go.set()

    def __call__(self, session: Any, first: date, last: date, past: bool) -> tuple[date, date]:
        self.started.set()
        self.go.wait()
        self.calls.append((first, last, past))
        return first, last


class Watch:
    def __init__(self) -> None:
        self.late = False
        self.marks = 0

    def mark(self, session: Any) -> None:
        self.marks += 1

    def moved(self, session: Any, today: date) -> bool:
        late, self.late = self.late, False
        return late


def test_the_past_is_built_once_a_day_and_today_every_refresh() -> None:
    clock, builds, watch = Clock(), Builds(), Watch()
    window = Window(builds, (None, None), 7, 60.0, clock, watch)
    first = window.current(None)  # type: ignore[arg-type]
    day = T0.date()
    assert first.past == (day - timedelta(days=6), day - timedelta(days=1))
    assert first.today == (day, day) and watch.marks == 1
    clock.now += timedelta(seconds=59)
    assert window.current(None) is first and len(builds.calls) == 2  # type: ignore[arg-type]
    clock.now += timedelta(seconds=1)
    window.current(None)  # type: ignore[arg-type]
    assert [c[2] for c in builds.calls] == [True, False, False]  # today again, not the past
    watch.late = True  # a read stamped yesterday arrived
    clock.now += timedelta(seconds=60)
    window.current(None)  # type: ignore[arg-type]
    assert [c[2] for c in builds.calls][-2:] == [True, False] and watch.marks == 2
    clock.now = T0 + timedelta(days=1)  # a new day: both again, the window moved
    moved = window.current(None)  # type: ignore[arg-type]
    assert moved.past == (day - timedelta(days=5), day) and moved.day == day + timedelta(days=1)


def test_a_window_of_one_day_has_no_past() -> None:
    builds = Builds()
    found = Window(builds, "empty", 1, 60.0, Clock()).current(None)  # type: ignore[arg-type]
    assert found.past == "empty" and [c[2] for c in builds.calls] == [False]


@contextlib.contextmanager
def no_session() -> Iterator[None]:
    yield None


def test_servers_refresh_in_a_thread_of_their_own_and_never_wait() -> None:
    clock, builds = Clock(), Builds()
    window = Window(builds, "empty", 7, 60.0, clock, factory=no_session)  # type: ignore[arg-type]
    builds.go.clear()  # the build blocks until told to go
    first = window.current(None)  # type: ignore[arg-type]
    assert first.past == first.today == "empty"  # not built yet: the caller did not wait
    assert builds.started.wait(timeout=60)
    assert window.current(None).today == "empty"  # type: ignore[arg-type]  # still building
    builds.go.set()
    with window._lock:  # the refreshing thread holds it until it is done
        pass
    built = window.current(None)  # type: ignore[arg-type]
    assert built.today == (T0.date(), T0.date()) and len(builds.calls) == 2
