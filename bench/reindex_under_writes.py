"""A full reindex beside a steady writer on SQLite: does it complete, and how long do writes wait?

The reported failure (issue 13): ``recengine reindex`` died with "database is locked" while the
API took 2-8 writes/s, and the recluster inside the switch held the write lock for as long as it
took. Here a writer process (``bench.paced_writer``) posts one real article at a time at
``--rate`` writes/s, first alone for ``--alone`` seconds (the reference: what a write costs on
this machine right now), then during a full reindex (``recengine reindex``, the command, in its
own process with ``--workers`` tokenizing processes) of ``--docs`` articles: real titles and
bodies resampled from ../shared/data (``bench.corpus.resample_mixed``) with reposts of 10% of
them (so the recluster has clusters to form). Printed: whether the reindex completed, its time,
the write p50 / p99 / max in both phases and their ratios, and the load average.

Usage::

    python -m bench.reindex_under_writes [--docs 20000] [--rate 8] [--alone 20] [--workers 2]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench.corpus import real_docs, resample_mixed
from bench.paced_writer import PacedWriter, Writes
from bench.store import sqlite_store
from recengine.pipeline.featurize import Featurizer
from recengine.pipeline.ingest import Ingester
from recengine.pipeline.reindex import reindex


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
        docs = resample_mixed(real_docs(), args.docs, seed=7)
        records = [d.record() for d in docs]
        records += [
            {**r, "id": f"repost-{r['id']}", "content": r["content"] + "\n\n转载请注明出处"}
            for r in records[::10]
        ]
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
        env = {
            **os.environ,
            "RECENGINE_DATABASE_URL": settings.resolved_database_url,
            "RECENGINE_DATA_DIR": str(folder),
            "RECENGINE_REINDEX__WORKERS": str(args.workers),
        }
        command = [str(Path(sys.executable).with_name("recengine")), "reindex"]
        start = time.perf_counter()
        try:
            done = subprocess.run(command, env=env, capture_output=True, text=True)
        finally:
            during = writer.stop()
        seconds = time.perf_counter() - start
        report(done, seconds, alone, during)


def report(
    done: subprocess.CompletedProcess[str], seconds: float, alone: Writes, during: Writes
) -> None:
    status = "completed" if done.returncode == 0 else f"FAILED (exit {done.returncode})"
    print(
        f"reindex {status} in {seconds:.1f} s: {done.stdout.strip()} {done.stderr.strip()[-300:]}"
    )
    print(f"writes alone:          {alone.summary()}")
    print(f"writes beside reindex: {during.summary()}")
    for name, q in (("p50", 0.5), ("p99", 0.99), ("max", 1.0)):
        a, d = quantile(alone.durations, q), quantile(during.durations, q)
        print(f"  {name}: {d * 1e3:.0f} ms beside / {a * 1e3:.0f} ms alone = {d / a:.2f}x")
    print(f"load average {os.getloadavg()[0]:.1f} {os.getloadavg()[1]:.1f}")


if __name__ == "__main__":
    main()
