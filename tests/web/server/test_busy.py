"""A locked database is *busy* (retry), not *unreachable*: in the CLI and over HTTP.

A real SQLite database whose write lock another connection holds (``BEGIN IMMEDIATE``), with the
wait for it shortened to half a second through the URL; and a real PostgreSQL lock timeout.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest
from click.testing import CliRunner
from sqlalchemy import text
from sqlalchemy.exc import OperationalError

from recengine.cli import main
from recengine.cli.context import CliContext
from recengine.storage.db import is_busy, make_engine
from recengine.web import create_app
from tests.conftest import make_settings
from tests.factories import record, write_jsonl
from tests.templates import migrate_cloned
from tests.web.conftest import AUTH, KEY


def test_a_locked_sqlite_database_is_reported_busy(tmp_path: Path) -> None:
    path = tmp_path / "busy.db"
    url = f"sqlite:///{path}?timeout=0.5"
    settings = make_settings(tmp_path, url, api_key=KEY)
    engine = make_engine(url)
    migrate_cloned(engine)
    engine.dispose()
    holder = sqlite3.connect(path, isolation_level=None)
    holder.execute("BEGIN IMMEDIATE")  # another writer holds the write lock
    try:
        data = write_jsonl(tmp_path / "a.jsonl", [record(1)])
        cli = CliRunner().invoke(
            main, ["ingest", str(data), "--no-reindex"], obj=CliContext(settings)
        )
        assert cli.exit_code == 75, cli.output
        assert "database is busy" in cli.output and "try again" in cli.output
        assert "cannot" not in cli.output and "Traceback" not in cli.output

        client = create_app(settings).test_client()
        response = client.post("/api/v1/articles", json=record(2), headers=AUTH)
        assert response.status_code == 503
        assert response.headers["Retry-After"] == "1"
        error = response.get_json()["error"]
        assert error["code"] == "busy" and "retry" in error["message"]
        assert "cannot be reached" not in error["message"]
    finally:
        holder.rollback()
        holder.close()
    # once the lock is released the same write goes through: nothing was half-written before
    assert client.post("/api/v1/articles", json=record(2), headers=AUTH).status_code in (200, 201)


@pytest.mark.postgres
@pytest.mark.parametrize("database_url", ["postgresql"], indirect=True)
def test_a_postgresql_lock_timeout_is_busy(database_url: str) -> None:
    engine = make_engine(database_url)
    migrate_cloned(engine)
    with engine.connect() as holder, engine.connect() as waiter:
        holder.execute(text("UPDATE engine_state SET seq = seq WHERE id = 1"))  # row locked
        waiter.execute(text("SET lock_timeout = '200ms'"))
        with pytest.raises(OperationalError) as caught:
            waiter.execute(text("UPDATE engine_state SET seq = seq + 1 WHERE id = 1"))
        assert is_busy(caught.value)
    engine.dispose()
    bad = make_engine(database_url.rsplit("/", 1)[0] + "/no_such_database_here")
    with pytest.raises(OperationalError) as unreachable:
        bad.connect()
    assert not is_busy(unreachable.value)
