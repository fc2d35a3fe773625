"""Reader feedback: impressions and clicks of related lists, counted per day, list article,
variant and slot, cheaply and without losing what was acknowledged.

**Group commit.** :meth:`FeedbackCounter.submit` checks a request's events and queues them; a
thread of its own commits everything queued in one transaction every ``flush_interval_s``
(the events of many requests added up into one row per counter), then completes each
request's future. A request is answered once its events are committed, so an acknowledged
event survives a crash (``kill -9``) and a failed commit is reported to its requests (503),
never acknowledged. At 500 events/s and the default 200 ms window, that is 5 small
transactions a second per process instead of 500 (a commit's CPU, ~3 ms of Python on the
interpreter the related lists use too, is mostly fixed: fewer, larger commits cost less).

**Bounded.** Counters are per day (the server's UTC date at arrival), live article, configured
variant and slot ``< related.max_k``: a beacon cannot create a row for an unknown article or
variant, so the table grows by at most articles x variants x slots a day, whatever the
traffic. Requests are refused (``RateLimited``, 429) past a token bucket per client address
(``client_rate`` per second, ``client_burst`` at once), and (``Overloaded``, 503) while more
than ``max_pending`` events wait for a commit (a database that stalls cannot make memory grow).

**Items.** An event may name the ``item`` shown (or clicked) in its slot: it is then also
added to the engagement counters of that item in that list (``storage.rows.engagement``) with
its *examination*, the chance that a reader looked at its slot at all, by the stated model
:func:`examination` (``signals.examination_decay``), which ranking reads back as a
position-debiased click-through rate (``recommend.signals.engagement``). Bounded the same way:
a beacon cannot count an unknown item, each list article counts at most
``feedback.max_items_per_list`` items a day (per process: items past it still count in the
slot counters), and each process deletes the days past ``signals.engagement_days`` at its
first commit of a day.

**Private.** An event is a list article, a variant, a slot and an item: no cookie, no reader
id, no address is stored (addresses live in memory only, for rate limiting).
"""

from __future__ import annotations

import concurrent.futures
import logging
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, timedelta

from sqlalchemy.orm import Session, sessionmaker

from recengine.config import Settings
from recengine.errors import InvalidRequest, NotFound, Overloaded, RateLimited
from recengine.storage.db import transaction
from recengine.storage.rows.engagement import (
    PairCounts,
    PairKey,
    add_pair_counts,
    drop_pairs_before,
    items_listed,
)
from recengine.storage.rows.feedback import CountKey, add_counts, article_ids

log = logging.getLogger(__name__)

IMPRESSION, CLICK = "impression", "click"
TYPES = (IMPRESSION, CLICK)


@dataclass(frozen=True)
class Event:
    """One reader event: an ``impression`` (the list was seen, this slot shown) or a
    ``click`` on the item in ``slot`` of ``article``'s list, under ``variant``; ``item``: the
    article in that slot (None: not said, only the slot counters count it)."""

    type: str
    article: str
    variant: str
    slot: int
    item: str | None = None


def examination(slot: int, decay: float) -> float:
    """The stated position-bias model: the chance a reader looks at slot ``slot`` (0-based)
    of a list, relative to the first, ``(1 + slot) ** -decay`` (``signals.examination_decay``;
    0: every slot is looked at). A click is evidence of attraction only where the slot was
    looked at: clicks / sum of examinations estimates the rate at which an item is clicked
    when seen, wherever it was shown (Craswell et al. 2008, the position-based model)."""
    return float((1.0 + slot) ** -decay)


class TokenBuckets:
    """Per-client token buckets: ``rate`` tokens a second up to ``burst``; thread-safe.

    At most ``max_clients`` buckets are kept: past that, the oldest half is forgotten (a
    forgotten client starts again with a full bucket).
    """

    def __init__(self, rate: float, burst: int, max_clients: int) -> None:
        self.rate, self.burst, self.max_clients = rate, float(burst), max_clients
        self._buckets: dict[str, tuple[float, float]] = {}  # client -> (tokens, when)
        self._lock = threading.Lock()

    def take(self, client: str, n: int, now: float) -> bool:
        """Take ``n`` tokens of ``client``'s bucket: False (nothing taken) when it lacks them."""
        with self._lock:
            tokens, when = self._buckets.pop(client, (self.burst, now))
            tokens = min(self.burst, tokens + (now - when) * self.rate)
            ok = tokens >= n
            self._buckets[client] = (tokens - n if ok else tokens, now)  # newest last
            if len(self._buckets) > self.max_clients:
                for old in list(self._buckets)[: len(self._buckets) // 2]:
                    del self._buckets[old]
            return ok


@dataclass
class _Request:
    day: date
    events: Sequence[Event]
    done: concurrent.futures.Future[int] = field(default_factory=concurrent.futures.Future)


class FeedbackCounter:
    """Counts the events of one process (see the module docstring). Thread-safe.

    Args:
        settings: ``feedback`` settings and ``related.max_k`` (slots).
        factory: sessions of the database.
        variants: the variant names events may carry.
        clock: monotonic seconds (tests pass their own).
    """

    def __init__(
        self,
        settings: Settings,
        factory: sessionmaker[Session],
        variants: Iterable[str],
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        f = settings.feedback
        self.settings = f
        self.factory = factory
        self.variants = frozenset(variants)
        self.slots = settings.related.max_k
        self.cap = f.max_items_per_list
        self.decay = settings.signals.examination_decay
        self.keep_days = settings.signals.engagement_days
        self._expired_on: date | None = None
        self.clock = clock
        self.limits = TokenBuckets(f.client_rate, f.client_burst, f.max_clients)
        self._queued: list[_Request] = []
        self._pending = 0
        self._lock = threading.Condition()
        self._thread: threading.Thread | None = None
        self._closed = False
        self.committed = 0  # events counted since start (health, tests)

    def check(self, events: Sequence[Event]) -> None:
        """Raise ``InvalidRequest`` unless every event can be counted."""
        if not events or len(events) > self.settings.max_events:
            raise InvalidRequest(f"send 1 to {self.settings.max_events} events")
        for e in events:
            if e.type not in TYPES:
                raise InvalidRequest(f"type must be impression or click, got {e.type!r}")
            if e.variant not in self.variants:
                known = ", ".join(sorted(self.variants))
                raise InvalidRequest(f"unknown variant {e.variant!r} (known: {known})")
            if not 0 <= e.slot < self.slots:
                raise InvalidRequest(f"slot must be from 0 to {self.slots - 1}, got {e.slot}")

    def submit(self, events: Sequence[Event], client: str) -> concurrent.futures.Future[int]:
        """Queue ``events`` from ``client`` (an address); the future completes with the number
        of events counted once they are committed, or with the error that kept them out
        (``NotFound``: an unknown article; a database error).

        Raises:
            InvalidRequest: see :meth:`check`. RateLimited: the client's bucket is empty.
            Overloaded: too many events wait for a commit.
        """
        self.check(events)
        if not self.limits.take(client, len(events), self.clock()):
            raise RateLimited("too many feedback events from this client: slow down")
        request = _Request(datetime.now(UTC).date(), list(events))
        with self._lock:
            if self._pending + len(events) > self.settings.max_pending:
                raise Overloaded("too many feedback events are waiting: try again shortly")
            first = not self._queued
            self._queued.append(request)
            self._pending += len(events)
            if self._thread is None:
                self._thread = threading.Thread(
                    target=self._run, name="recengine-feedback", daemon=True
                )
                self._thread.start()
            if first:  # the thread waits for a first request; within a window it waits it out
                self._lock.notify()
        return request.done

    def commit(self, events: Sequence[Event], day: date) -> int:
        """Count ``events`` as of ``day`` now, in the calling thread, without the queue and
        the rate limits (imports of past counts, the click simulator ``bench/clicks.py``).

        Raises:
            InvalidRequest: see :meth:`check`. NotFound: an unknown article or item.
        """
        self.check(events)
        request = _Request(day, list(events))
        self._flush([request])
        return request.done.result()

    def close(self) -> None:
        """Commit what is queued and stop the thread."""
        with self._lock:
            self._closed = True
            self._lock.notify()
            thread = self._thread
        if thread is not None:
            thread.join()

    def _run(self) -> None:
        while True:
            with self._lock:
                while not self._queued and not self._closed:
                    self._lock.wait()
                if not self._queued:
                    return
                # the window: more requests join this commit (close() cuts it short)
                deadline = time.monotonic() + self.settings.flush_interval_s
                while not self._closed and (left := deadline - time.monotonic()) > 0:
                    self._lock.wait(left)
                batch, self._queued, self._pending = self._queued, [], 0
            self._flush(batch)

    def _flush(self, batch: list[_Request]) -> None:
        try:
            counted, known = self._write(batch)
        except Exception as exc:  # the database: every request of the batch hears of it
            log.warning("feedback: could not commit %d requests: %s", len(batch), exc)
            for r in batch:
                r.done.set_exception(exc)
            return
        for r, n in zip(batch, counted, strict=True):
            if n < 0:
                names = (n for e in r.events for n in (e.article, e.item) if n)
                missing = next(n for n in names if n not in known)
                r.done.set_exception(NotFound(f"no article with id {missing!r}"))
            else:
                self.committed += n
                r.done.set_result(n)

    def _write(self, batch: list[_Request]) -> tuple[list[int], dict[str, int]]:
        """Commit the batch's counts; per request, the events counted (-1: unknown article),
        and the live articles' internal ids.

        The ids are read in a transaction of their own and the counts written in another that
        only writes: on SQLite a transaction that reads and then writes fails at once with
        "database is locked" when another process (another worker's counter) committed in
        between, where a write-only one waits its turn.
        """
        names = sorted({n for r in batch for e in r.events for n in (e.article, e.item) if n})
        with transaction(self.factory) as session:
            known = article_ids(session=session, external_ids=names)
            pairs = _Pairs(self.cap, self.decay, self._listed(session, batch, known))
        counts: dict[CountKey, tuple[int, int]] = {}
        out = []
        for r in batch:
            if any(n not in known for e in r.events for n in (e.article, e.item) if n):
                out.append(-1)  # nothing of it is counted
                continue
            for e in r.events:
                key = (r.day, known[e.article], e.variant, e.slot)
                shown, clicked = counts.get(key, (0, 0))
                counts[key] = (shown + (e.type == IMPRESSION), clicked + (e.type == CLICK))
                if e.item is not None:
                    pairs.add(r.day, known[e.article], known[e.item], e)
            out.append(len(r.events))
        if counts:
            with transaction(self.factory) as session:
                add_counts(session=session, counts=counts)
                add_pair_counts(session=session, counts=pairs.counts)
                self._expire(session, batch[0].day)
        return out, known

    def _listed(
        self, session: Session, batch: list[_Request], known: dict[str, int]
    ) -> dict[tuple[date, int], set[int]]:
        """The items each list article of the batch has counted already on its day."""
        wanted: dict[date, set[int]] = {}
        for r in batch:
            for e in r.events:
                if e.item is not None and e.article in known:
                    wanted.setdefault(r.day, set()).add(known[e.article])
        listed: dict[tuple[date, int], set[int]] = {}
        for day, sources in wanted.items():
            found = items_listed(session=session, day=day, sources=sorted(sources))
            listed.update({(day, s): items for s, items in found.items()})
        return listed

    def _expire(self, session: Session, day: date) -> None:
        """At the first commit of a day: delete the engagement counters past every window."""
        if self._expired_on == day:
            return
        drop_pairs_before(session=session, day=day - timedelta(days=self.keep_days))
        self._expired_on = day


@dataclass
class _Pairs:
    """The engagement counts of one commit, each list article held to ``cap`` items a day."""

    cap: int
    decay: float
    listed: dict[tuple[date, int], set[int]]
    counts: dict[PairKey, PairCounts] = field(default_factory=dict)

    def add(self, day: date, source: int, item: int, event: Event) -> None:
        if item == source:  # no list holds its own article
            return
        items = self.listed.setdefault((day, source), set())
        if item not in items:
            if len(items) >= self.cap:
                return
            items.add(item)
        shown = event.type == IMPRESSION
        n, c, x = self.counts.get((day, source, item), (0, 0, 0.0))
        seen = examination(event.slot, self.decay) if shown else 0.0
        self.counts[(day, source, item)] = (n + shown, c + (event.type == CLICK), x + seen)
