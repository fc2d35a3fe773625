"""Copies of a built SQLite test state: the database file and the data directory.

For tests that start from the same expensive state (real corpora ingested and indexed): the
first test builds it and saves a snapshot, each later test of the module gets a copy, the
same bytes the build would have written. The database is copied with SQLite's backup API, not
as a file: rows still in the write-ahead log count too.
"""

from __future__ import annotations

import shutil
import sqlite3
from contextlib import closing
from pathlib import Path

from sqlalchemy import Engine
from sqlalchemy.engine import make_url

from recengine.config import Settings


def sqlite_path(settings: Settings) -> Path | None:
    """The database file of SQLite settings; None for another database."""
    url = make_url(settings.resolved_database_url)
    return Path(url.database) if url.get_backend_name() == "sqlite" and url.database else None


def _copy_database(src: Path, dst: Path) -> None:
    with closing(sqlite3.connect(src)) as source, closing(sqlite3.connect(dst)) as target:
        source.backup(target)


def save(settings: Settings, snapshot: Path) -> None:
    """Copy the SQLite database and ``data_dir`` of ``settings`` into ``snapshot`` (a new
    directory). Call it with no write under way (background index work included)."""
    database = sqlite_path(settings)
    if database is None:
        raise ValueError("snapshots are of SQLite databases")
    snapshot.mkdir(parents=True)
    _copy_database(database, snapshot / "db.sqlite")
    if settings.data_dir.exists():
        shutil.copytree(settings.data_dir, snapshot / "data")


def restore(snapshot: Path, settings: Settings, engine: Engine) -> None:
    """Replace the database and ``data_dir`` of ``settings`` by the snapshot's. ``engine``
    (on that database) has its pooled connections closed first; it reconnects on next use."""
    database = sqlite_path(settings)
    if database is None:
        raise ValueError("snapshots are of SQLite databases")
    engine.dispose()
    _copy_database(snapshot / "db.sqlite", database)
    shutil.rmtree(settings.data_dir, ignore_errors=True)
    if (snapshot / "data").exists():
        shutil.copytree(snapshot / "data", settings.data_dir)
