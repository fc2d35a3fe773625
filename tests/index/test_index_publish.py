"""A reindex publishes every derived index; processes load the files instead of building, and a
process waiting for an index never holds up other writers."""

from __future__ import annotations

import fcntl
import time
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy.orm import Session, sessionmaker

from recengine.config import Settings
from recengine.derived.indexes import index_directory
from recengine.derived.registry import KINDS, followers
from recengine.index.container import load_arrays, save_arrays, saved_files
from recengine.pipeline.featurize import Featurizer
from recengine.pipeline.ingest.ingester import Ingester
from recengine.pipeline.reindex.full import reindex
from recengine.storage.db import transaction
from recengine.storage.rows.index_rows import SqlIndexRows
from tests.factories import javaguide_records
from tests.index.test_index_conformance import Worker
from tests.recommend.test_related import repost


def open_new(settings: Settings, factory: sessionmaker[Session], kind: str) -> Any:
    follower = followers(settings)[kind]
    with transaction(factory) as session:
        held = follower.sync(SqlIndexRows(session))
    assert held is not None
    return follower


@pytest.fixture
def records(data_dir: Path) -> list[dict[str, Any]]:
    return javaguide_records(data_dir, 60)


@pytest.mark.parametrize("kind", KINDS)
def test_a_reindex_from_python_publishes_every_index(
    settings: Settings,
    factory: sessionmaker[Session],
    featurizer: Featurizer,
    records: list[dict[str, Any]],
    kind: str,
) -> None:
    Ingester(factory, featurizer).ingest_records(records[:40])
    result = reindex(factory=factory, featurizer=featurizer)
    folder = index_directory(settings, kind)
    assert folder is not None
    files = saved_files(folder, kind, result.version)
    assert len(files) == 1, files  # published by the pipeline, not by a command
    header, _ = load_arrays(files[0])
    with transaction(factory) as session:
        seq, version, database = SqlIndexRows(session).position()
    assert (header.kind, header.version, header.database) == (kind, version, database)
    assert header.seq <= seq
    follower = open_new(settings, factory, kind)
    assert (follower.stats.loads, follower.stats.rebuilds) == (1, 0)


@pytest.mark.parametrize("kind", KINDS)
def test_a_file_that_lost_articles_is_rebuilt(
    settings: Settings,
    factory: sessionmaker[Session],
    featurizer: Featurizer,
    records: list[dict[str, Any]],
    kind: str,
) -> None:
    """The size check after a load, for every kind: a file claiming to be current but built
    before ten articles arrived is not trusted."""
    ingester = Ingester(factory, featurizer)
    ingester.ingest_records(records[:30])
    reindex(factory=factory, featurizer=featurizer)
    folder = index_directory(settings, kind)
    assert folder is not None
    old = saved_files(folder, kind)[0]
    header, arrays = load_arrays(old)
    arrays = {k: v.copy() for k, v in arrays.items()}
    ingester.ingest_records(records[30:40])
    with transaction(factory) as session:
        seq = SqlIndexRows(session).position()[0]
    lying = header.__class__(header.kind, header.database, header.version, seq, header.params)
    for f in saved_files(folder, kind):
        f.unlink()
    save_arrays(folder / f"{kind}-v{header.version:09d}-s{seq:015d}.idx", lying, arrays)
    follower = open_new(settings, factory, kind)
    assert follower.stats.rebuilds == 1 and follower.kind.size(follower.held.index) >= 40


@pytest.mark.slow
@pytest.mark.parametrize("database_url", ["sqlite"], indirect=True)
def test_after_a_reindex_a_worker_loads_the_file_and_writes_go_on_meanwhile(
    settings: Settings,
    factory: sessionmaker[Session],
    featurizer: Featurizer,
    records: list[dict[str, Any]],
) -> None:
    ingester = Ingester(factory, featurizer)
    ingester.ingest_records(records[:30])
    reindex(factory=factory, featurizer=featurizer)
    a, b = Worker(), Worker()
    for w in (a, b):
        w.open(settings, "neardup")
    try:
        for w in (a, b):  # both hold the near-duplicate index of the first model
            w("ingest", [repost(records[0], id(w))])
        before = b("stats")["neardup"]
        reindex(factory=factory, featurizer=featurizer)  # a new model: its file is published
        b("ingest", [repost(records[1], 1)])
        after = b("stats")["neardup"]
        assert after["loads"] == before["loads"] + 1  # the published file, loaded
        assert after["rebuilds"] == before["rebuilds"]  # not built again from SQL

        # Now a worker that must build (no file, another process building: the lock is held)
        # waits outside the writers' lock: the other worker's writes go on meanwhile.
        folder = index_directory(settings, "neardup")
        assert folder is not None
        reindex(factory=factory, featurizer=featurizer)
        b("ingest", [repost(records[2], 2)])  # b opens the newest version (loads its file)
        for f in saved_files(folder, "neardup"):
            f.unlink()
        with (folder / ".build.lock").open("a") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            a.send("ingest", [repost(records[3], 3)])  # a must build: it waits for the lock
            waits = []
            for n in range(5):
                start = time.monotonic()
                assert b("ingest", [repost(records[4 + n], 4)]) == 1
                waits.append(time.monotonic() - start)
            assert not a.conn.poll(0.1)  # a is still waiting for the index
            fcntl.flock(lock, fcntl.LOCK_UN)
        assert a.result("ingest") == 1
        assert max(waits) < 10, waits  # generous: each is one small write on a loaded machine
    finally:
        for w in (a, b):
            w.close()
            w.stop()
