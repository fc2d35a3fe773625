"""Readers' data: a reader's history shown and erased on request, and the retention applied.

What a site owes its readers for their reading history (``storage.rows.events``, the one table that
holds a reader's id):

* **Access**: :meth:`ReaderData.history` lists every stored event of a reader, deleted
  articles included (``GET /api/v1/users/<user>/events``, ``recengine reader show``).
* **Erasure**: :meth:`ReaderData.erase` deletes every event of a reader in one transaction
  (``DELETE /api/v1/users/<user>``, ``recengine reader delete``). Nothing else in the
  database is keyed by reader: feedback counts are per list article, variant and slot, and an
  A/B variant is a hash of the reader's id, stored nowhere. (Logs are the operator's: the
  access log, off by default, names the paths requested, reader ids included.)
* **Retention**: events older than ``events.retention_days`` are left out of every feed and
  history at once (:func:`cutoff`), refused when sent (``recommend.feed``), and deleted by
  :meth:`ReaderData.expire`, which servers run at most once an hour per worker
  (:class:`Expiry`).

None of this takes a change sequence number: related lists and clusters do not depend on
events, so no cached answer is dropped. Each write takes the writers' lock first (on SQLite a
transaction that reads before it writes must, ``state.lock_writers``).
"""

from __future__ import annotations

import logging
import threading
import time
from datetime import UTC, datetime, timedelta
from typing import Any

from sqlalchemy.orm import Session, sessionmaker

from recengine.config import Settings
from recengine.recommend.lists.params import check_id
from recengine.storage.db import transaction
from recengine.storage.rows.events import (
    any_event_before,
    delete_events_before,
    delete_reader_events,
    events_of,
)
from recengine.storage.state import lock_writers

log = logging.getLogger(__name__)

EXPIRE_EVERY_S = 3_600.0  # how often a server worker deletes expired events
EXPIRE_BATCH = 5_000  # events per delete transaction (each holds the writers' lock briefly)


def cutoff(settings: Settings, now: datetime | None = None) -> datetime | None:
    """The oldest time an event may have under ``events.retention_days`` (None: kept forever)."""
    days = settings.events.retention_days
    return None if days == 0 else (now or datetime.now(UTC)) - timedelta(days=days)


class ReaderData:
    """Access, erasure and retention of readers' events. One per process; thread-safe.

    Args:
        settings: ``events.retention_days``.
        factory: sessions; :meth:`erase` and :meth:`expire` commit transactions of their own.
    """

    def __init__(self, settings: Settings, factory: sessionmaker[Session]) -> None:
        self.settings = settings
        self.factory = factory

    def history(
        self, user_id: str, *, session: Session, after_id: int = 0, limit: int = 1_000
    ) -> dict[str, Any]:
        """Every stored event of ``user_id``, oldest stored first, paged by event id.

        Returns:
            ``{"user", "events": [{"id", "article", "title", "kind", "at", "deleted"}],
            "next_after": id or None}`` (``next_after``: pass it as ``after_id`` for the next
            page; None on the last one).

        Raises:
            InvalidRequest: a bad reader id.
        """
        user_id = check_id(user_id, "user id")
        rows = events_of(session=session, user_id=user_id, after_id=after_id, limit=limit)
        events = [
            {
                "id": r.id,
                "article": r.external_id,
                "title": r.title,
                "kind": r.kind,
                "at": r.at.isoformat(),
                "deleted": r.deleted_at is not None,
            }
            for r in rows
        ]
        full = len(rows) == limit
        return {"user": user_id, "events": events, "next_after": rows[-1].id if full else None}

    def erase(self, user_id: str) -> dict[str, Any]:
        """Delete every event of ``user_id`` and commit: ``{"user", "erased": n}`` (0 for a
        reader with none: erasing is idempotent).

        Raises:
            InvalidRequest: a bad reader id.
        """
        user_id = check_id(user_id, "user id")
        with transaction(self.factory) as session:
            lock_writers(session=session)
            erased = delete_reader_events(session=session, user_id=user_id)
        return {"user": user_id, "erased": erased}

    def expire(self, now: datetime | None = None) -> int:
        """Delete the events older than the retention, in batches of :data:`EXPIRE_BATCH`, one
        transaction each; returns how many (0 when events are kept forever). While none is
        expired, it only reads (one indexed look-up): no write, no lock taken."""
        oldest = cutoff(self.settings, now)
        if oldest is None:
            return 0
        total = 0
        while True:
            with self.factory() as session:
                if not any_event_before(session=session, cutoff=oldest):
                    return total
            with transaction(self.factory) as session:
                lock_writers(session=session)
                done = delete_events_before(session=session, cutoff=oldest, limit=EXPIRE_BATCH)
            total += done
            if done < EXPIRE_BATCH:
                return total


class Expiry:
    """Runs :meth:`ReaderData.expire` in a thread of its own at most every ``every_s`` seconds
    in this process: :meth:`tick` is cheap enough for every request (a clock read while not
    due), so a serving worker applies the retention from its first request on."""

    def __init__(self, readers: ReaderData, every_s: float = EXPIRE_EVERY_S) -> None:
        self.readers = readers
        self.every_s = every_s
        self.expired = 0  # events deleted so far by this process
        self._due = 0.0
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()

    def tick(self) -> bool:
        """Start a run when one is due (and none is running); True when one was started."""
        if self.readers.settings.events.retention_days == 0 or time.monotonic() < self._due:
            return False
        with self._lock:
            now = time.monotonic()
            if now < self._due or (self._thread is not None and self._thread.is_alive()):
                return False
            self._due = now + self.every_s
            self._thread = threading.Thread(target=self._run, name="recengine-expiry", daemon=True)
            self._thread.start()
        return True

    def join(self, timeout: float | None = None) -> None:
        """Wait for the current run, if any (tests, shutdown)."""
        thread = self._thread
        if thread is not None:
            thread.join(timeout)

    def _run(self) -> None:
        try:
            done = self.readers.expire()
        except Exception:  # the next run tries again; the request that started it is not hurt
            log.exception("deleting reader events past events.retention_days failed")
            return
        self.expired += done
        if done:
            log.info("deleted %d reader event(s) older than events.retention_days", done)
