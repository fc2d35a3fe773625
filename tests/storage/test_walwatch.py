"""SQLite's change watch (the WAL-index header) and how index followers use it.

On real SQLite files: a commit in another process moves the header, a read or a rolled-back
write does not; a follower watching it reads the position only after a commit, and falls back
to the per-read check while there is nothing to watch.
"""

from __future__ import annotations

import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest
from sqlalchemy import text
from sqlalchemy.orm import Session, sessionmaker

from recengine.config import Settings
from recengine.pipeline.featurize import Featurizer
from recengine.pipeline.ingest.ingester import Ingester
from recengine.storage.db import transaction
from recengine.storage.state import begin_write
from recengine.storage.walwatch import WalWatch, watched_file
from tests.storage.test_notify import followed_index

ON_SQLITE = pytest.mark.parametrize("database_url", ["sqlite"], indirect=True)


class Counter:
    def __init__(self) -> None:
        self.changes = 0

    def __call__(self) -> None:
        self.changes += 1


def test_the_watched_file_of_a_url(tmp_path: Path) -> None:
    db = tmp_path / "a.db"
    assert watched_file(f"sqlite:///{db}") == tmp_path / "a.db-shm"
    for url in ("sqlite://", "sqlite:///:memory:", "postgresql+psycopg://u@h/d"):
        assert watched_file(url) is None


def commit_elsewhere(db: Path) -> None:
    """A write committed by another process, as a second worker or a CLI ingest would."""
    script = (
        "import sqlite3, sys; c = sqlite3.connect(sys.argv[1]); c.execute('PRAGMA"
        " journal_mode=WAL'); c.execute('CREATE TABLE IF NOT EXISTS t (x)');"
        " c.execute('INSERT INTO t VALUES (1)'); c.commit()"
    )
    subprocess.run([sys.executable, "-c", script, str(db)], check=True, timeout=60)


def test_commits_move_the_header_and_reads_and_rollbacks_do_not(tmp_path: Path) -> None:
    db = tmp_path / "w.db"
    seen = Counter()
    watch = WalWatch(watched_file(f"sqlite:///{db}") or Path(), seen)
    assert not watch.look() and seen.changes == 1  # no database yet: nothing to watch
    held = sqlite3.connect(db)  # a worker's own connection keeps the -shm file
    held.execute("PRAGMA journal_mode=WAL")
    held.execute("CREATE TABLE t (x)")
    held.commit()
    assert watch.look() and seen.changes == 2  # first sight of a header
    assert watch.look() and seen.changes == 2  # nothing committed since
    commit_elsewhere(db)
    assert watch.look() and seen.changes == 3
    assert watch.look() and seen.changes == 3
    assert held.execute("SELECT count(*) FROM t").fetchone() == (1,)  # a read
    held.execute("INSERT INTO t VALUES (2)")
    held.rollback()  # a write rolled back
    assert watch.look() and seen.changes == 3
    held.execute("INSERT INTO t VALUES (3)")
    held.commit()
    assert watch.look() and seen.changes == 4
    held.close()
    watch.close()
    assert not watch.live


@ON_SQLITE
def test_a_follower_reads_the_position_only_after_a_commit(
    settings: Settings,
    factory: sessionmaker[Session],
    featurizer: Featurizer,
    data_dir: Path,
) -> None:
    index, records, current_seq = followed_index(settings, factory, featurizer, data_dir)
    follower = index.follower
    shm = watched_file(settings.resolved_database_url)
    assert shm is not None
    watch = WalWatch(shm, lambda: (follower.notified(), index.dense.notified()))
    follower.follow_notifications(watch.look, 3600.0)
    index.dense.follow_notifications(watch.look, 3600.0)

    first = current_seq()
    assert current_seq() == first  # the watch's first look: a change, so a check
    reads = follower.position_reads
    for _ in range(5):
        assert current_seq() == first
    assert follower.position_reads == reads  # watched, nothing committed: no query
    Ingester(factory, featurizer).ingest_records(records[10:])  # a write, no one told
    second = current_seq()
    assert second > first and follower.position_reads == reads + 1
    assert current_seq() == second and follower.position_reads == reads + 1
    with transaction(factory) as session:  # a commit that changes no article
        begin_write(session=session)
    assert current_seq() > second and follower.position_reads == reads + 2
    with factory() as session:  # a read transaction
        session.execute(text("SELECT count(*) FROM articles")).one()
    current_seq()
    assert follower.position_reads == reads + 2
    shm.unlink()  # nothing to watch (as before the first connection): back to the check
    current_seq()
    current_seq()
    assert follower.position_reads == reads + 4


def header(counter: int, *, torn: bool = False, init: int = 1) -> bytes:
    """Two copies of a 48-byte WAL-index header (only what the watch reads matters: the
    bytes, and isInit at offset 12); ``torn``: a writer caught between the two copies."""
    one = bytearray(48)
    one[8:12] = counter.to_bytes(4, "little")  # iChange
    one[12] = init
    other = bytearray(one)
    if torn:
        other[8:12] = (counter + 1).to_bytes(4, "little")
    return bytes(one) + bytes(other) + bytes(40)


def test_a_torn_or_uninitialised_header_and_a_replaced_file_count_as_changes(
    tmp_path: Path,
) -> None:
    shm = tmp_path / "x.db-shm"
    seen = Counter()
    watch = WalWatch(shm, seen)
    shm.write_bytes(header(1))
    assert watch.look() and seen.changes == 1
    assert watch.look() and seen.changes == 1
    shm.write_bytes(header(1, torn=True))  # same inode, copies disagree: do not trust it
    assert not watch.look() and seen.changes == 2
    shm.write_bytes(header(1))  # settled again: differs from "unreadable", so one more check
    assert watch.look() and seen.changes == 3
    shm.write_bytes(header(1, init=0))  # not initialised
    assert not watch.look() and seen.changes == 4
    replacement = tmp_path / "new"
    replacement.write_bytes(header(1))
    replacement.replace(shm)  # another file under the name: read afresh
    assert watch.look() and seen.changes == 5
    assert watch.look() and seen.changes == 5
    shm.write_bytes(header(2))
    assert watch.look() and seen.changes == 6
