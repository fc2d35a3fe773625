"""Engines and sessions. Built by the edges from settings; nothing is created at import time."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from sqlalchemy import Engine, create_engine, event
from sqlalchemy.engine import make_url
from sqlalchemy.orm import Session, sessionmaker

# SQLite: WAL lets readers (other gunicorn workers) read while one process writes;
# synchronous=FULL makes every acknowledged commit survive a crash of the process or the OS;
# busy_timeout makes a second writer wait for the lock instead of failing at once.
_SQLITE_PRAGMAS = (
    "PRAGMA journal_mode=WAL",
    "PRAGMA synchronous=FULL",
    "PRAGMA foreign_keys=ON",
    "PRAGMA busy_timeout=30000",
)


def make_engine(url: str, **kwargs: Any) -> Engine:
    """An engine for ``url``; for SQLite, its folder is created and pragmas set per connection."""
    parsed = make_url(url)
    if parsed.get_backend_name() == "sqlite":
        if parsed.database and parsed.database != ":memory:":
            Path(parsed.database).parent.mkdir(parents=True, exist_ok=True)
        engine = create_engine(url, **kwargs)
        event.listen(engine, "connect", _sqlite_on_connect)
        # pysqlite's own transaction handling would issue BEGIN too late (only before DML);
        # emit BEGIN ourselves so reads and writes of one session share a transaction.
        event.listen(engine, "begin", lambda conn: conn.exec_driver_sql("BEGIN"))
        return engine
    kwargs.setdefault("pool_pre_ping", True)
    return create_engine(url, **kwargs)


def _sqlite_on_connect(dbapi_connection: Any, _record: Any) -> None:
    dbapi_connection.isolation_level = None  # we emit BEGIN in the "begin" event
    cursor = dbapi_connection.cursor()
    for pragma in _SQLITE_PRAGMAS:
        cursor.execute(pragma)
    cursor.close()


def make_session_factory(engine: Engine) -> sessionmaker[Session]:
    return sessionmaker(bind=engine, expire_on_commit=False)


@contextmanager
def transaction(factory: sessionmaker[Session]) -> Iterator[Session]:
    """One session, one transaction: committed on success, rolled back on any exception."""
    with factory() as session, session.begin():
        yield session
