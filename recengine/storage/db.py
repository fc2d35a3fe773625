"""Engines and sessions. Built by the edges from settings; nothing is created at import time."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from functools import partial
from pathlib import Path
from typing import Any

from sqlalchemy import URL, Engine, Executable, Result, create_engine, event
from sqlalchemy.engine import make_url
from sqlalchemy.exc import ArgumentError, NoSuchModuleError
from sqlalchemy.orm import Session, sessionmaker

from recengine.errors import ConfigError, SchemaOutOfDate

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


SUPPORTED = "sqlite:///path/to/recengine.db or postgresql+psycopg://user:password@host/database"


def make_engine(url: str, *, create: bool = True, **kwargs: Any) -> Engine:
    """An engine for ``url``; for SQLite, pragmas are set on every connection.

    Args:
        url: a SQLAlchemy URL (SQLite or PostgreSQL).
        create: for SQLite, create the file (and its folder) when missing. False for everything
            that only uses an existing database: a command run in the wrong folder then says so
            instead of leaving an empty ``recengine-data/recengine.db`` behind.

    Raises:
        ConfigError: the URL cannot be parsed, names an unknown database, or its driver is not
            installed (the message says what to install or write instead).
        SchemaOutOfDate: ``create`` is False and the SQLite file does not exist.
    """
    try:
        parsed = make_url(url)
    except ArgumentError:
        raise ConfigError(f"database_url is not a database URL: use {SUPPORTED}") from None
    if parsed.get_backend_name() == "sqlite":
        _sqlite_file(parsed, create)
    else:
        kwargs.setdefault("pool_pre_ping", True)
    try:
        engine = create_engine(url, **kwargs)
    except NoSuchModuleError:
        raise ConfigError(_unknown_database(parsed)) from None
    except ImportError as exc:
        raise ConfigError(_missing_driver(parsed, exc.name or "?")) from None
    if parsed.get_backend_name() == "sqlite":
        timeout = parsed.query.get("timeout")
        busy_ms = int(float(str(timeout)) * 1000) if timeout else _BUSY_TIMEOUT_MS
        event.listen(engine, "connect", partial(_sqlite_on_connect, busy_ms))
        # pysqlite's own transaction handling would issue BEGIN too late (only before DML);
        # emit BEGIN ourselves so reads and writes of one session share a transaction.
        event.listen(engine, "begin", lambda conn: conn.exec_driver_sql("BEGIN"))
    return engine


def describe_url(url: str | URL) -> str:
    """The URL to show a person: password hidden; for SQLite, the file's absolute path."""
    parsed = make_url(url) if isinstance(url, str) else url
    if parsed.get_backend_name() == "sqlite" and parsed.database not in (None, "", ":memory:"):
        return f"{parsed.drivername}:///{Path(parsed.database or '').resolve()}"
    return parsed.render_as_string(hide_password=True)


def sqlite_path(url: str | URL) -> Path | None:
    """The file of a SQLite database URL, as given (None: not SQLite, in memory, or a
    ``file:`` URI, whose path SQLite resolves itself)."""
    parsed = make_url(url) if isinstance(url, str) else url
    name = parsed.database
    if parsed.get_backend_name() != "sqlite" or not name or name == ":memory:":
        return None
    return None if name.startswith("file:") else Path(name)


def _sqlite_file(parsed: URL, create: bool) -> None:
    path = sqlite_path(parsed)
    if path is None:
        return
    if create:
        path.parent.mkdir(parents=True, exist_ok=True)
    elif not path.exists():
        raise SchemaOutOfDate(
            f"no database at {path.resolve()}: run `recengine db upgrade` to create it, or run "
            "where it is (the path comes from RECENGINE_DATABASE_URL, else RECENGINE_DATA_DIR, "
            "default ./recengine-data)"
        )


def _unknown_database(parsed: URL) -> str:
    name = parsed.drivername
    if parsed.get_backend_name() in ("postgres", "pgsql"):
        return f"database_url {name}:// is not a URL scheme SQLAlchemy knows: use postgresql+psycopg://"
    return f"database_url {name}:// is not a database recengine can use: use {SUPPORTED}"


def _missing_driver(parsed: URL, module: str) -> str:
    name = parsed.drivername
    if parsed.get_backend_name() == "postgresql":
        fix = "pip install 'recengine[postgres]'"
        if parsed.get_driver_name() != "psycopg":
            fix += ", and write postgresql+psycopg:// (psycopg 3, the driver recengine installs)"
        return f"database_url {name}:// needs the Python module {module}, not installed: {fix}"
    return (
        f"database_url {name}:// needs the Python module {module}, not installed; recengine "
        f"supports SQLite and PostgreSQL: {SUPPORTED} (pip install 'recengine[postgres]')"
    )


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


def read_core(
    session: Session, statement: Executable, params: dict[str, Any] | None = None
) -> Result[Any]:
    """Run a read on the session's connection, in its transaction, without the ORM's execution
    layer (no autoflush, no ORM result setup): for the few statements every related list runs,
    whose columns are plain columns, that layer costs ~40-100 us each, more than SQLite takes
    to run them. Only for reads that depend on nothing the session may hold unflushed."""
    return session.connection().execute(statement, params)


def make_session_factory(engine: Engine) -> sessionmaker[Session]:
    return sessionmaker(bind=engine, expire_on_commit=False)


@contextmanager
def transaction(factory: sessionmaker[Session]) -> Iterator[Session]:
    """One session, one transaction: committed on success, rolled back on any exception."""
    with factory() as session, session.begin():
        yield session
