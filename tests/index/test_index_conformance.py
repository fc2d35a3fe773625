"""Every kind of derived index follows SQL the same way (``index.follower``): one test for all.

Two real processes each hold a follower of every kind, as a server process does. A random
sequence of ingests, edits, deletes, reindexes and rolled-back writes goes through either of
them; afterwards, for each kind, each process's index, a load of the saved file (caught up) and
a fresh build from SQL are identical. (The kinds had a test each, 6 times the same writes for
the same checks: the writes, not the followers, were most of each test's time.)
"""

from __future__ import annotations

import multiprocessing
import random
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy.orm import Session, sessionmaker

from recengine.config import Settings
from recengine.derived.registry import KINDS, followers
from recengine.storage.db import transaction
from recengine.storage.rows.index_rows import SqlIndexRows
from tests import index_worker
from tests.conftest import make_settings
from tests.factories import javaguide_records
from tests.recommend.test_related import repost

# the dense kind fits a model from 10 articles on (the shipped rule waits for 100)
DENSE = {"min_articles": 10, "dims": 8}


class Worker:
    """One process of :mod:`tests.index_worker`: it serves one test after another, each
    test's followers opened in it anew (``open``) and released at the end (``close``); the
    answers of ``sync``, ``rollback`` and ``stats`` are by kind."""

    def __init__(self) -> None:
        context = multiprocessing.get_context("spawn")
        self.conn, child = context.Pipe()
        self.proc = context.Process(target=index_worker.serve, args=(child,))
        self.proc.start()
        child.close()
        self.opened = False

    def open(self, settings: Settings, *kinds: str) -> None:
        overrides = {
            "data_dir": str(settings.data_dir),
            "database_url": settings.database_url,
            "dense": DENSE,
        }
        self.send("open", overrides, kinds)
        self.opened = True

    def __call__(self, op: str, *args: Any, timeout: float = 600) -> Any:
        self.send(op, *args)
        return self.result(op, timeout)

    def send(self, op: str, *args: Any) -> None:
        self.conn.send((op, *args))

    def result(self, op: str, timeout: float = 600) -> Any:
        assert self.conn.poll(timeout), f"worker gave no answer to {op}"
        status, value = self.conn.recv()
        assert status == "ok", f"{op} failed in the worker: {value}"
        return value

    def close(self) -> None:
        """Release the test's follower, ingester and engine (answered once done)."""
        self.opened = False
        assert self("close", timeout=60) is None

    def stop(self) -> None:
        self.conn.send(("stop",))
        self.proc.join(60)
        assert self.proc.exitcode == 0


@pytest.fixture
def settings(tmp_path: Path, database_url: str) -> Settings:
    return make_settings(tmp_path, database_url, dense=DENSE)


@pytest.fixture(scope="module")
def processes() -> Iterator[list[Worker]]:
    """The module's two worker processes, started on first use (``workers``)."""
    pair: list[Worker] = []
    yield pair
    for w in pair:
        if w.proc.is_alive():
            w.stop()


@pytest.fixture
def workers(processes: list[Worker], settings: Settings) -> Iterator[list[Worker]]:
    """Two processes, each holding a new follower of every kind on this test's database. A
    process left in doubt by a failed test (an answer missing or unread) is ended and a new
    one started for the next test."""
    while len(processes) < 2:
        processes.append(Worker())
    for n, w in enumerate(processes):
        if not w.proc.is_alive():
            processes[n] = Worker()
    for w in processes:
        w.open(settings, *KINDS)
    yield list(processes)
    for w in processes:
        if w.opened:
            try:
                w.close()
            except (AssertionError, OSError, EOFError):
                w.proc.kill()
                w.proc.join(10)


def steps(rng: random.Random, pool: list[dict[str, Any]], n: int) -> Iterator[tuple[Any, ...]]:
    """A random sequence of operations over real articles (and reposts of them)."""
    stored: list[dict[str, Any]] = []
    fresh = list(pool)
    for _ in range(n):
        op = rng.choice(["ingest", "ingest", "edit", "delete", "reindex", "rollback"])
        if op == "ingest" or not stored:
            batch = [fresh.pop() for _ in range(min(len(fresh), rng.randint(1, 6)))]
            if stored and rng.random() < 0.5:
                batch.append(repost(rng.choice(stored), rng.randint(0, 10**6)))
            stored += batch
            yield ("ingest", batch)
        elif op == "edit":
            victim = rng.choice(stored)
            other = rng.choice(pool)
            stored.remove(victim)
            edited = {**victim, "content": other["content"], "title": other["title"]}
            stored.append(edited)
            yield ("ingest", [edited])
        elif op == "delete":
            victim = stored.pop(rng.randrange(len(stored)))
            yield ("delete", [victim["id"]])
        elif op == "reindex":
            yield ("reindex",)
        else:
            yield ("rollback", rng.choice(stored)["id"])


def index_of(settings: Settings, factory: sessionmaker[Session], kind: str, persist: bool) -> Any:
    """A new follower's index: loaded from the saved file (and caught up), or built from SQL."""
    if not persist:
        settings = settings.model_copy(
            update={"index": settings.index.model_copy(update={"persist": False})}
        )
    follower = followers(settings)[kind]
    with transaction(factory) as session:
        assert follower.sync(SqlIndexRows(session)) is not None
    if persist:
        assert follower.stats.loads == 1 and follower.stats.rebuilds == 0, "not a file load"
    else:
        assert follower.stats.rebuilds == 1
    return index_worker.canonical(follower)


@pytest.mark.slow
@pytest.mark.parametrize("seed", [11, 29])
def test_two_processes_a_saved_file_and_a_fresh_build_agree(
    workers: list[Worker],
    settings: Settings,
    factory: sessionmaker[Session],
    data_dir: Path,
    seed: int,
) -> None:
    rng = random.Random(seed)
    records = javaguide_records(data_dir, 60)
    a, b = workers
    a("ingest", records[:20])
    a("reindex")
    for step in steps(rng, records[20:], 16):
        worker = rng.choice(workers)
        result = worker(*step)
        if step[0] == "rollback":  # the process forgot the uncommitted change, in every kind
            assert result == dict.fromkeys(KINDS, True)
        if rng.random() < 0.5:  # the other process reads meanwhile (or not: it catches up later)
            rng.choice(workers)("sync")
    synced, other = a("sync"), b("sync")
    assert synced.keys() == other.keys() == set(KINDS)
    for kind, first in synced.items():
        assert other[kind] == first, kind
        assert index_of(settings, factory, kind, persist=True) == first, kind
        assert index_of(settings, factory, kind, persist=False) == first, kind
        assert int(first["size"]) > 20, kind
    dense = synced["dense"]  # a real dense part was followed, not an empty one
    assert dense["vectors"].endswith(b"float32") and len(dense["model.components"]) > 100
    for w in workers:
        w.close()
