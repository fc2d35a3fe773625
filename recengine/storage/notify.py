"""Change notifications between processes and nodes on one PostgreSQL (``LISTEN/NOTIFY``).

Every write transaction sends ``NOTIFY recengine_changes`` (:func:`announce`, from
``storage.state.begin_write``); PostgreSQL delivers it to every listening connection when the
transaction commits, and drops it if it rolls back. A server worker keeps one listening
connection (:class:`ChangeListener`, a daemon thread) and tells its index followers that the
position moved (``Follower.notified``), so an idle worker learns of a change without reading
the position on every request, and a busy one reads it only after something changed.

SQLite has no such channel; its workers look at the WAL-index header instead
(:mod:`recengine.storage.walwatch`), through the same ``Follower.notified``.

**Fallback.** While the listener is not connected (a lost connection, PostgreSQL
restarting) the followers read the position before every answer as without it
(``index.sync_interval_s``); after it (re)connects it reports a change at once (what committed
while it was away is then read). A connected listener also pings the server every
``PING_EVERY_S``, so a connection that died silently is noticed; and followers re-read the
position at least every ``index.listen_interval_s`` anyway.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from typing import Any

from sqlalchemy import text
from sqlalchemy.engine import make_url
from sqlalchemy.orm import Session

log = logging.getLogger(__name__)

CHANNEL = "recengine_changes"
PING_EVERY_S = 2.0
RETRY_S = (0.1, 0.5, 1.0, 2.0, 5.0)  # waits between connection attempts, the last repeats


def announce(session: Session) -> None:
    """Queue the change notification in the caller's write transaction (PostgreSQL only)."""
    if session.get_bind().dialect.name == "postgresql":
        session.execute(text(f"NOTIFY {CHANNEL}"))


def listens(url: str) -> bool:
    """Whether change notifications exist for this database URL (PostgreSQL)."""
    return make_url(url).get_backend_name() == "postgresql"


def conninfo(url: str) -> str:
    """The SQLAlchemy URL as a libpq URI (psycopg's), password kept."""
    return make_url(url).set(drivername="postgresql").render_as_string(hide_password=False)


class ChangeListener:
    """One listening connection and the thread that waits on it (see the module docstring).

    Args:
        url: the database (SQLAlchemy URL, PostgreSQL).
        on_change: called (in the listener's thread) for every notification, and once after
            each (re)connection; keep it short.
        on_state: called with True when listening starts, False when it stops.
    """

    def __init__(
        self,
        url: str,
        on_change: Callable[[], None],
        on_state: Callable[[bool], None] | None = None,
    ) -> None:
        self.url = url
        self.on_change = on_change
        self.on_state = on_state
        self.received = 0
        self._live = False
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._connection: Any = None

    @property
    def live(self) -> bool:
        """Connected and listening: notifications will arrive."""
        return self._live

    def start(self) -> ChangeListener:
        self._thread = threading.Thread(target=self._run, name="recengine-listen", daemon=True)
        self._thread.start()
        return self

    def close(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=PING_EVERY_S + 5)
        self._live = False

    def _run(self) -> None:
        failures = 0
        while not self._stop.is_set():
            try:
                self._listen()
                failures = 0
            except Exception as exc:
                if self._stop.is_set():
                    break
                wait = RETRY_S[min(failures, len(RETRY_S) - 1)]
                failures += 1
                level = logging.WARNING if failures in (1, 10) else logging.DEBUG
                log.log(level, "change notifications lost (%s); retrying in %g s", exc, wait)
                self._stop.wait(wait)
            finally:
                self._set_live(False)

    def _set_live(self, live: bool) -> None:
        changed, self._live = self._live != live, live
        if changed and self.on_state is not None:
            self.on_state(live)

    def _listen(self) -> None:
        import psycopg

        with psycopg.connect(conninfo(self.url), autocommit=True, connect_timeout=5) as conn:
            conn.execute(f"LISTEN {CHANNEL}")
            self._set_live(True)
            self.on_change()  # whatever committed while not listening
            while not self._stop.is_set():
                for _ in conn.notifies(timeout=PING_EVERY_S):
                    self.received += 1
                    self.on_change()
                    if self._stop.is_set():
                        return
                conn.execute("SELECT 1")  # a dead connection raises here
