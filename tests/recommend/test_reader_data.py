"""Readers' data (``reader_events``): each event stored once, reads in the future refused, a
reader's history shown and erased on request, old events expired; on SQLite and PostgreSQL."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from click.testing import CliRunner
from sqlalchemy import event, insert, select
from sqlalchemy.orm import Session, sessionmaker

from recengine.cli import main
from recengine.cli.context import CliContext
from recengine.config import Settings
from recengine.recommend.feeds.retention import ReaderData
from recengine.storage.db import make_engine, make_session_factory
from recengine.storage.migrate import upgrade
from recengine.storage.models import Article, ReaderEvent


def _article(session: Session, external_id: str) -> int:
    """An article row in a database at an older revision: only the columns every revision has
    (the ORM would name columns later migrations add)."""
    now = datetime.now(UTC)
    values = {"record_hash": "", "text_hash": "", "created_at": now, "updated_at": now, "seq": 1}
    inserted = session.execute(
        insert(Article.__table__)
        .values(external_id=external_id, title="", content="", tags=[], **values)
        .returning(Article.__table__.c.id)
    )
    return int(inserted.scalar_one())


def test_the_migration_keeps_one_of_each_repeated_event(database_url: str) -> None:
    """0008: events stored twice before (retried requests) are kept once, the first of each."""
    engine = make_engine(database_url)
    upgrade(engine, "0007")
    at = datetime(2026, 11, 30, 8, tzinfo=UTC)
    factory = make_session_factory(engine)
    with factory() as session, session.begin():
        a, b = _article(session, "a"), _article(session, "b")
        rows = [(a, at), (a, at), (b, at), (a, at + timedelta(seconds=1)), (a, at)]
        for article, when in rows:
            session.execute(
                insert(ReaderEvent).values(user_id="r", article_id=article, kind="read", at=when)
            )
        session.execute(
            insert(ReaderEvent).values(user_id="other", article_id=a, kind="read", at=at)
        )
    upgrade(engine)
    with factory() as session:
        kept = session.execute(
            select(
                ReaderEvent.id, ReaderEvent.user_id, ReaderEvent.article_id, ReaderEvent.at
            ).order_by(ReaderEvent.id)
        ).all()
    assert [(r.id, r.user_id, r.article_id) for r in kept] == [
        (1, "r", a),
        (3, "r", b),
        (4, "r", a),
        (6, "other", a),
    ]
    engine.dispose()


def test_the_command_line_refuses_a_read_in_the_future(
    settings: Settings, factory: sessionmaker[Session]
) -> None:
    with factory() as session, session.begin():
        _article(session, "x")
    done = CliRunner().invoke(
        main, ["events", "carol", "x", "--at", "2099-01-01"], obj=CliContext(settings)
    )
    assert done.exit_code == 2, done.output
    assert "at: 2099-01-01T00:00:00+00:00 is in the future" in done.output
    with factory() as session:
        assert session.scalars(select(ReaderEvent)).all() == []
    today = CliRunner().invoke(main, ["events", "carol", "x"], obj=CliContext(settings))
    assert today.exit_code == 0 and "recorded 1" in today.output


def test_reader_show_and_delete_on_the_command_line(
    settings: Settings, factory: sessionmaker[Session]
) -> None:
    with factory() as session, session.begin():
        _article(session, "x")
        _article(session, "y")
    cli = CliRunner()

    def run(*args: str) -> Any:
        return cli.invoke(main, list(args), obj=CliContext(settings))

    assert run("events", "bob", "x", "y").exit_code == 0
    assert run("events", "ann", "x").exit_code == 0
    text = run("reader", "show", "bob")
    assert text.exit_code == 0, text.output
    assert text.output.splitlines()[0] == "reader bob: 2 event(s) stored"
    assert "  read  x  " in text.output and "  read  y  " in text.output
    body = json.loads(run("reader", "show", "bob", "--format", "json").output)
    assert [e["article"] for e in body["events"]] == ["x", "y"] and body["next_after"] is None
    gone = run("reader", "delete", "bob")
    assert gone.exit_code == 0 and "erased reader bob: 2 event(s) deleted" in gone.output
    assert json.loads(run("reader", "show", "bob", "--format", "json").output)["events"] == []
    assert "1 event(s)" in run("reader", "show", "ann").output
    bad = run("reader", "delete", "")
    assert bad.exit_code == 2 and "user id" in bad.output


def test_expiry_deletes_in_short_batches_until_none_is_left(
    settings: Settings, factory: sessionmaker[Session], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("recengine.recommend.feeds.retention.EXPIRE_BATCH", 2)
    now = datetime.now(UTC)
    with factory() as session, session.begin():
        article = _article(session, "x")
        for days in (400, 380, 370, 366, 364, 1):
            session.execute(
                insert(ReaderEvent).values(
                    user_id="r", article_id=article, kind="read", at=now - timedelta(days=days)
                )
            )
    assert ReaderData(settings, factory).expire(now) == 4
    with factory() as session:
        assert len(session.scalars(select(ReaderEvent)).all()) == 2
    written: list[str] = []
    engine = factory.kw["bind"]

    def spy(_conn: Any, _cursor: Any, statement: str, *_: Any) -> None:
        if statement.lstrip().upper().startswith(("UPDATE", "DELETE", "INSERT")):
            written.append(statement)

    event.listen(engine, "before_cursor_execute", spy)
    try:
        assert ReaderData(settings, factory).expire(now) == 0
    finally:
        event.remove(engine, "before_cursor_execute", spy)
    assert written == []  # nothing expired: one look-up, no lock taken, nothing written
