"""A writer in its own process at a steady rate: one-article ingests, each one's duration kept.

What an API worker does under a steady trickle of posts, without HTTP: each write is an
``Ingester.ingest_records`` of one new article (tokenize, features, the write transaction with
its cluster update). Writes are due every ``1 / rate`` seconds; one that is late starts at once.
A write that waits for a lock (a reindex's switch, SQLite's single writer) shows as a long
duration; the time each write spent waiting for the writers' lock itself (its
``state.begin_write``, which blocks while another transaction holds the lock) is kept apart as
its *wait*: what a reindex can block a writer for, without the writer's own work (tokenizing,
or opening the new model version's index after a switch, outside the lock). Used by
``bench.reindex_under_writes`` and ``tests/reindex/test_reindex_under_writes.py``.
"""

from __future__ import annotations

import multiprocessing
import statistics
import time
from dataclasses import dataclass, field
from multiprocessing.connection import Connection
from typing import Any


@dataclass
class Writes:
    """Durations (seconds) of the writes made, their waits for the writers' lock, and the
    errors met."""

    durations: list[float] = field(default_factory=list)
    waits: list[float] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    started: list[float] = field(default_factory=list)  # time.time() of each write's start

    def summary(self) -> str:
        d = sorted(self.durations)
        if not d:
            return "no writes"
        p99 = d[min(len(d) - 1, int(0.99 * len(d)))]
        w = sorted(self.waits) or [0.0]
        return (
            f"{len(d)} writes, p50 {statistics.median(d) * 1e3:.0f} ms, "
            f"p99 {p99 * 1e3:.0f} ms, max {d[-1] * 1e3:.0f} ms; lock wait p50 "
            f"{statistics.median(w) * 1e3:.0f} ms, max {w[-1] * 1e3:.0f} ms; "
            f"{len(self.errors)} errors"
        )


def _timed_lock(waited: list[float]) -> None:
    """Make this process's ingest time its ``begin_write`` calls into ``waited``."""
    from recengine.pipeline.ingest import ingester as ingest

    begin_write = ingest.begin_write

    def timed(**kwargs: Any) -> Any:
        began = time.monotonic()
        try:
            return begin_write(**kwargs)
        finally:
            waited.append(time.monotonic() - began)

    ingest.begin_write = timed  # type: ignore[assignment]


def _write_loop(
    conn: Connection, overrides: dict[str, Any], records: list[Any], rate: float
) -> None:
    from recengine.config import load_settings
    from recengine.pipeline.featurize import Featurizer
    from recengine.pipeline.ingest.ingester import Ingester
    from recengine.storage.db import make_engine, make_session_factory

    settings = load_settings(overrides)
    engine = make_engine(settings.resolved_database_url)
    factory = make_session_factory(engine)
    writes, waited = Writes(), []
    _timed_lock(waited)
    with Ingester(factory, Featurizer(settings)) as ingester:
        ingester.ingest_records([{**records[0], "id": "paced-warm-up"}])  # dictionary, index
        conn.send("ready")
        start, n = time.monotonic(), 0
        while not conn.poll():
            wait = start + n / rate - time.monotonic()
            if wait > 0:
                time.sleep(min(wait, 0.05))
                continue
            record = {**records[n % len(records)], "id": f"paced-{n}"}
            began = time.monotonic()
            writes.started.append(time.time())
            waited.clear()
            try:
                ingester.ingest_records([record])
            except Exception as exc:  # reported to the parent, which decides
                writes.errors.append(f"{type(exc).__name__}: {exc}")
            writes.durations.append(time.monotonic() - began)
            writes.waits.append(sum(waited))
            n += 1
    engine.dispose()
    conn.send(writes)


class PacedWriter:
    """Starts the writer process; :meth:`stop` ends it and returns its :class:`Writes`.

    Args:
        overrides: settings of the writer (``database_url``, ``data_dir``, ...).
        records: article records to write (cycled; each write gets a new id).
        rate: writes per second.
    """

    def __init__(self, overrides: dict[str, Any], records: list[Any], rate: float) -> None:
        context = multiprocessing.get_context("spawn")
        self.conn, child = context.Pipe()
        self.proc = context.Process(target=_write_loop, args=(child, overrides, records, rate))
        self.proc.start()
        child.close()
        if not self.conn.poll(300) or self.conn.recv() != "ready":
            self.proc.kill()
            raise RuntimeError("the writer process did not start")

    def stop(self) -> Writes:
        self.conn.send("stop")
        if not self.conn.poll(300):
            self.proc.kill()
            raise RuntimeError("the writer process did not stop")
        writes: Writes = self.conn.recv()
        self.proc.join(60)
        return writes
