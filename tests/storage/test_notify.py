"""Change notifications (PostgreSQL LISTEN/NOTIFY) and how index followers use them.

On the real PostgreSQL: a committed write notifies a listener, a rolled-back one does not; a
follower that follows notifications reads the position only after one arrived, and falls back
to the per-read check while its listener is not connected.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy.orm import Session, sessionmaker

from recengine.config import Settings
from recengine.pipeline.featurize import Featurizer
from recengine.pipeline.ingest.ingester import Ingester
from recengine.recommend.live import LiveIndex
from recengine.storage.db import transaction
from recengine.storage.notify import ChangeListener, conninfo, listens
from recengine.storage.state import begin_write
from tests.factories import javaguide_records
from tests.templates import load

# Notifications are PostgreSQL's (SQLite's WAL watch: tests/storage/test_walwatch.py).
ON_POSTGRES = pytest.mark.parametrize("database_url", ["postgresql"], indirect=True)
WAIT_S = 30.0  # a bound for a loaded machine, not a delay: events end the waits


class Recorder:
    def __init__(self) -> None:
        self.changes = 0
        self.changed = threading.Event()
        self.states: list[bool] = []
        self.up = threading.Event()

    def on_change(self) -> None:
        self.changes += 1
        self.changed.set()

    def on_state(self, live: bool) -> None:
        self.states.append(live)
        if live:
            self.up.set()


def test_urls() -> None:
    assert listens("postgresql+psycopg://u:p@h:5/db") and not listens("sqlite:///x.db")
    assert conninfo("postgresql+psycopg://u:p@h:5/db?sslmode=require") == (
        "postgresql://u:p@h:5/db?sslmode=require"
    )


@pytest.mark.postgres
@ON_POSTGRES
def test_a_commit_notifies_and_a_rollback_does_not(
    settings: Settings, factory: sessionmaker[Session]
) -> None:
    seen = Recorder()
    listener = ChangeListener(settings.resolved_database_url, seen.on_change, seen.on_state)
    listener.start()
    try:
        assert seen.up.wait(WAIT_S) and listener.live
        assert seen.changed.wait(WAIT_S) and seen.changes == 1  # the one on connecting
        seen.changed.clear()
        with pytest.raises(RuntimeError), transaction(factory) as session:
            begin_write(session=session)
            raise RuntimeError("roll back")
        with transaction(factory) as session:  # committed after the rolled-back one
            begin_write(session=session)
        assert seen.changed.wait(WAIT_S)
        assert listener.received == 1 and seen.changes == 2
    finally:
        listener.close()
    assert not listener.live and seen.states == [True, False]


def followed_index(
    settings: Settings, factory: sessionmaker[Session], featurizer: Featurizer, data_dir: Path
) -> tuple[LiveIndex, list[dict[str, Any]], Callable[[], int]]:
    """A process's index over 10 JavaGuide articles, the 12 records (the last two: a later
    write), and a read of the sequence its answers reflect."""
    records: list[dict[str, Any]] = javaguide_records(data_dir, 12)
    load(factory, featurizer, records[:10])
    index = LiveIndex(settings, factory, background=False)

    def current_seq() -> int:
        with factory() as session:
            return index.current(session=session).seq

    return index, records, current_seq


@pytest.mark.postgres
@ON_POSTGRES
def test_a_follower_reads_the_position_only_after_a_notification(
    settings: Settings,
    factory: sessionmaker[Session],
    featurizer: Featurizer,
    data_dir: Path,
) -> None:
    index, records, current_seq = followed_index(settings, factory, featurizer, data_dir)
    follower = index.follower
    live = [False]
    follower.follow_notifications(lambda: live[0], 3600.0)

    first = current_seq()
    reads = follower.position_reads
    current_seq()
    assert follower.position_reads == reads + 1  # not listening: every read checks
    live[0] = True
    follower.notified()  # what a listener does on connecting
    current_seq()
    reads = follower.position_reads
    for _ in range(5):
        assert current_seq() == first
    assert follower.position_reads == reads  # listening, nothing changed: no query
    Ingester(factory, featurizer).ingest_records(records[10:])  # a write: a listener is told
    assert current_seq() == first  # not told yet: the held index answers
    follower.notified()
    assert current_seq() > first and follower.position_reads == reads + 1
    live[0] = False  # the connection is lost: back to the per-read check
    current_seq()
    assert follower.position_reads == reads + 2
