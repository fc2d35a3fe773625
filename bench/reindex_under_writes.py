"""A full reindex beside a steady writer on SQLite: does it complete, and how long do writes wait?

The reported failure (issue 13): ``recengine reindex`` died with "database is locked" while the
API took 2-8 writes/s, and the recluster inside the switch held the write lock for as long as it
took. Here a writer process (``bench.paced_writer``) posts one real article at a time at
``--rate`` writes/s, first alone for ``--alone`` seconds (the reference: what a write costs on
this machine right now), then during a full reindex of ``--docs`` articles: real titles and
bodies resampled from the real corpora (``bench.corpus.resample_mixed``) with reposts of 10% of
them (so the recluster has clusters to form). Printed: whether the reindex completed, its time,
the write p50 / p99 / max in both phases and their ratios, the reindex's phases (when each
began) and the slowest writes with the phase they fell in, and the load average. The reindex
runs in this process (``reindex()`` with a pool of ``--workers`` processes), so that its phases
can be timed; the writer is another process.

Usage::

    python -m bench.reindex_under_writes [--docs 20000] [--rate 8] [--alone 20] [--workers 2]
"""

from __future__ import annotations

import argparse
import bisect
import os
import tempfile
import time
from pathlib import Path

from bench.corpus import real_docs, resample_mixed
from bench.paced_writer import PacedWriter, Writes
from bench.store import sqlite_store
from recengine.pipeline.featurize import Featurizer
from recengine.pipeline.ingest.ingester import Ingester
from recengine.pipeline.reindex.full import reindex
from recengine.pipeline.reindex.pool import AnalysisPool
from recengine.pipeline.reindex.versions import ReindexResult


class Phases:
    """A progress receiver that notes when each phase of the reindex began (``time.time()``)."""

    def __init__(self) -> None:
        self.began: list[tuple[float, str]] = []

    def start(self, phase: str, total: int | None, done: int = 0) -> None:
        self.began.append((time.time(), phase))

    def update(self, n: int) -> None:
        pass

    def at(self, when: float) -> str:
        i = bisect.bisect_right([t for t, _ in self.began], when) - 1
        return self.began[i][1] if i >= 0 else "before"


def quantile(values: list[float], q: float) -> float:
    d = sorted(values)
    return d[min(len(d) - 1, int(q * len(d)))] if d else float("nan")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--docs", type=int, default=20_000)
    parser.add_argument("--rate", type=float, default=8.0)
    parser.add_argument("--alone", type=float, default=20.0)
    parser.add_argument("--workers", type=int, default=2)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="reindex-writes-") as tmp:
        folder = Path(tmp)
        settings, _, factory = sqlite_store(folder)
        records = corpus(args.docs)
        featurizer = Featurizer(settings)
        with Ingester(factory, featurizer) as ingester:
            ingester.ingest_records(records)
        reindex(factory=factory, featurizer=featurizer)
        print(f"{len(records)} articles stored and indexed; load {os.getloadavg()[0]:.1f}")
        overrides = {"database_url": settings.resolved_database_url, "data_dir": str(folder)}
        writer = PacedWriter(overrides, records[:500], args.rate)
        time.sleep(args.alone)
        alone = writer.stop()
        writer = PacedWriter(overrides, records[500:1000], args.rate)
        phases, began = Phases(), time.time()
        try:
            with AnalysisPool(settings, workers=args.workers, featurizer=featurizer) as pool:
                result = reindex(factory=factory, featurizer=featurizer, pool=pool, progress=phases)
        finally:
            during = writer.stop()
        report(result, time.time() - began, alone, during)
        timeline(phases, began, during)


def corpus(n: int) -> list[dict[str, object]]:
    """``n`` resampled real articles, plus a repost of every tenth (clusters to form)."""
    records = [d.record() for d in resample_mixed(real_docs(), n, seed=7)]
    reposts = [
        {**r, "id": f"repost-{r['id']}", "content": f"{r['content']}\n\n转载请注明出处"}
        for r in records[::10]
    ]
    return records + reposts


def report(result: ReindexResult, seconds: float, alone: Writes, during: Writes) -> None:
    print(
        f"reindex completed in {seconds:.1f} s: {result.n_docs} articles, model version "
        f"{result.version}, {result.caught_up} written meanwhile caught up"
    )
    print(f"writes alone:          {alone.summary()}")
    print(f"writes beside reindex: {during.summary()}")
    for name, q in (("p50", 0.5), ("p99", 0.99), ("max", 1.0)):
        a, d = quantile(alone.durations, q), quantile(during.durations, q)
        print(f"  {name}: {d * 1e3:.0f} ms beside / {a * 1e3:.0f} ms alone = {d / a:.2f}x")
    print(f"load average {os.getloadavg()[0]:.1f} {os.getloadavg()[1]:.1f}")


def timeline(phases: Phases, began: float, during: Writes) -> None:
    """When each phase began, and the slowest writes with the phase they fell in."""
    print("phases (s after the start):", ", ".join(f"{p} {t - began:.1f}" for t, p in phases.began))
    slowest = sorted(zip(during.durations, during.started, strict=True), reverse=True)[:8]
    where = [f"{d * 1e3:.0f} ms at {t - began:.1f} s ({phases.at(t)})" for d, t in slowest]
    print("slowest writes:", ", ".join(where))


if __name__ == "__main__":
    main()
