"""Engines and sessions. Built by the edges from settings; nothing is created at import time."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from functools import partial
from pathlib import Path
from typing import Any

from sqlalchemy import Engine, create_engine, event
from sqlalchemy.engine import make_url
from sqlalchemy.orm import Session, sessionmaker

# SQLite: WAL lets readers (other gunicorn workers) read while one process writes;
# synchronous=FULL makes every acknowledged commit survive a crash of the process or the OS;
# busy_timeout makes a second writer wait for the lock instead of failing at once: 30 s, or the
# URL's ``?timeout=<seconds>`` (the pysqlite parameter of the same meaning).
_SQLITE_PRAGMAS = (
    "PRAGMA journal_mode=WAL",
    "PRAGMA synchronous=FULL",
    "PRAGMA foreign_keys=ON",
)
_BUSY_TIMEOUT_MS = 30_000


def make_engine(url: str, **kwargs: Any) -> Engine:
    """An engine for ``url``; for SQLite, its folder is created and pragmas set per connection."""
    parsed = make_url(url)
    if parsed.get_backend_name() == "sqlite":
        if parsed.database and parsed.database != ":memory:":
            Path(parsed.database).parent.mkdir(parents=True, exist_ok=True)
        engine = create_engine(url, **kwargs)
        timeout = parsed.query.get("timeout")
        busy_ms = int(float(str(timeout)) * 1000) if timeout else _BUSY_TIMEOUT_MS
        event.listen(engine, "connect", partial(_sqlite_on_connect, busy_ms))
        # pysqlite's own transaction handling would issue BEGIN too late (only before DML);
        # emit BEGIN ourselves so reads and writes of one session share a transaction.
        event.listen(engine, "begin", lambda conn: conn.exec_driver_sql("BEGIN"))
        return engine
    kwargs.setdefault("pool_pre_ping", True)
    return create_engine(url, **kwargs)


def _sqlite_on_connect(busy_ms: int, dbapi_connection: Any, _record: Any) -> None:
    dbapi_connection.isolation_level = None  # we emit BEGIN in the "begin" event
    cursor = dbapi_connection.cursor()
    for pragma in (*_SQLITE_PRAGMAS, f"PRAGMA busy_timeout={busy_ms}"):
        cursor.execute(pragma)
    cursor.close()


# PostgreSQL conditions that mean "another transaction holds what this one needs": a lock not
# granted in time, a deadlock victim, a serialisation failure. Retrying later succeeds.
_BUSY_SQLSTATES = frozenset({"55P03", "40P01", "40001"})
_SQLITE_BUSY, _SQLITE_LOCKED = 5, 6


def is_busy(exc: BaseException) -> bool:
    """Whether a database error means *busy* (locked by another writer; retry) rather than
    unreachable or broken: SQLite's ``SQLITE_BUSY`` / ``SQLITE_LOCKED`` ("database is locked",
    after ``busy_timeout``), PostgreSQL's lock, deadlock and serialisation failures."""
    orig = getattr(exc, "orig", exc)
    code = getattr(orig, "sqlite_errorcode", None)
    if isinstance(code, int):
        return code & 0xFF in (_SQLITE_BUSY, _SQLITE_LOCKED)
    if getattr(orig, "sqlstate", None) in _BUSY_SQLSTATES:
        return True
    return "database is locked" in str(orig)


def make_session_factory(engine: Engine) -> sessionmaker[Session]:
    return sessionmaker(bind=engine, expire_on_commit=False)


@contextmanager
def transaction(factory: sessionmaker[Session]) -> Iterator[Session]:
    """One session, one transaction: committed on success, rolled back on any exception."""
    with factory() as session, session.begin():
        yield session
