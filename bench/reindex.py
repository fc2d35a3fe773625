"""Full reindex throughput: the local engine with 1 and 2 processes, Spark local[1] and local[2].

Data: the 2,529 real documents of ../shared/data (CSDN blogs, JavaGuide, CSL abstracts),
**resampled** to ``--docs`` documents (100,000 by default) by ``bench.corpus.resample_mixed``:
real titles, and bodies of real paragraphs drawn from the whole corpus to each title's original
length (plain resampling would make every document one of ~40 identical copies, a crowd of
exact duplicates no site has); ingested once into a SQLite database (no model yet, so ingest
does not tokenize). Every run is a full reindex of that
same database (pass 1, IDF fit, pass 2, switch); MB are UTF-8 bytes of title + content as
stored. The runs are side by side in one process, in the same state of the machine.

Extrapolation to 1M articles: the local 2-process reindex is also timed at ``--small`` documents
(a prefix of the same corpus) and a line ``t(n) = a + b * n`` is fitted through the two points
(``a`` = fixed costs: pool start-up, dictionary loads; ``b`` = cost per article; every stage is
linear in n: keyset-paged reads, tokenization, spool, batched writes). ``t(1M) = a + b * 1e6``.

Usage::

    python -m bench.reindex [--docs 100000] [--small 25000] [--no-spark] [--ingest-docs 20000]
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from bench.corpus import Doc, real_docs, resample_mixed
from bench.store import sqlite_store
from recengine.config import Settings
from recengine.pipeline.featurize import Featurizer
from recengine.pipeline.ingest.ingester import Ingester
from recengine.pipeline.reindex.full import reindex
from recengine.pipeline.reindex.pool import AnalysisPool


def database(folder: Path, docs: list[Doc], **overrides: Any) -> tuple[Settings, Any]:
    """A SQLite database in ``folder`` holding ``docs`` (ingested without features)."""
    settings, _, factory = sqlite_store(folder, **overrides)
    with Ingester(factory, Featurizer(settings)) as ingester:
        summary = ingester.ingest_records(d.record() for d in docs)
    assert summary.inserted == len(docs), summary.as_dict()
    return settings, factory


def cpu_seconds() -> float:
    """CPU time (user + system) of this process and every descendant, live or finished.

    Live descendants are read through psutil (the Spark JVM and its Python workers live until
    the end); finished ones are in each process's ``children_*`` times.
    """
    import psutil

    total = 0.0
    me = psutil.Process()
    for proc in [me, *me.children(recursive=True)]:
        try:
            t = proc.cpu_times()
        except psutil.Error:
            continue
        total += t.user + t.system + t.children_user + t.children_system
    return total


CPU: dict[str, float] = {}


def local_run(settings: Settings, factory: Any, workers: int) -> float:
    featurizer = Featurizer(settings)
    start, cpu = time.perf_counter(), cpu_seconds()
    with AnalysisPool(settings, workers=workers, featurizer=featurizer) as pool:
        result = reindex(factory=factory, featurizer=featurizer, pool=pool, resume=False)
    seconds = time.perf_counter() - start
    used = CPU[f"local{workers}-{result.n_docs}"] = cpu_seconds() - cpu
    print(
        f"  local, {workers} process(es): {seconds:.1f} s, CPU {used:.1f} s ({result.n_docs} docs)"
        f", load {os.getloadavg()[0]:.1f}",
        flush=True,
    )
    return seconds


def spark_reindexed(settings: Settings, factory: Any, master: str) -> tuple[Any, float, float]:
    """A full reindex on Spark ``master`` (JVM start included): ``(result, wall seconds, CPU
    seconds of this process tree, the JVM and its workers included)``."""
    from recengine.pipeline.reindex.spark.job import spark_reindex
    from recengine.pipeline.reindex.spark.session import spark_session

    start, cpu = time.perf_counter(), cpu_seconds()
    spark, _ = spark_session(settings.spark, master)
    try:
        result = spark_reindex(
            spark=spark,
            factory=factory,
            featurizer=Featurizer(settings),
            url=settings.resolved_database_url,
        )
        used = cpu_seconds() - cpu  # the JVM and workers are still alive
    finally:
        spark.stop()
    return result, time.perf_counter() - start, used


def spark_run(settings: Settings, factory: Any, master: str) -> float:
    result, seconds, used = spark_reindexed(settings, factory, master)
    CPU[f"spark {master}"] = used
    print(
        f"  spark {master}: {seconds:.1f} s, JVM start included, CPU {used:.1f}"
        f" s ({result.n_docs} docs), load {os.getloadavg()[0]:.1f}",
        flush=True,
    )
    return seconds


def ingest_run(folder: Path, docs: list[Doc], workers: int) -> tuple[float, int, float]:
    """``(seconds, docs, CPU seconds)`` to ingest ``docs`` (all new) with an active model,
    ``ingest.workers = workers``."""
    settings, engine, factory = sqlite_store(folder, "ingest.db", ingest={"workers": workers})
    featurizer = Featurizer(settings)
    with Ingester(factory, featurizer) as ingester:
        ingester.ingest_records(d.record() for d in docs[:2000])
        reindex(factory=factory, featurizer=featurizer, resume=False)
        start, cpu = time.perf_counter(), cpu_seconds()
        ingester.ingest_records({**d.record(), "id": f"x/{d.id}"} for d in docs)
        seconds = time.perf_counter() - start
    used = cpu_seconds() - cpu  # after close(): finished workers are counted
    engine.dispose()
    return seconds, len(docs), used


def table(rows: list[tuple[str, float, int, int, float]]) -> None:
    print(f"\n{'run':<44} {'seconds':>8} {'docs/s':>8} {'MB/s':>6} {'CPU s':>7}")
    for name, seconds, n, nbytes, cpu in rows:
        print(
            f"{name:<44} {seconds:>8.1f} {n / seconds:>8.0f} {nbytes / seconds / 1e6:>6.2f} "
            f"{cpu:>7.1f}"
        )


def timed(fn: Callable[[], float], repeat: int) -> float:
    return statistics.median(fn() for _ in range(repeat))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--docs", type=int, default=100_000)
    parser.add_argument("--small", type=int, default=25_000)
    parser.add_argument("--repeat", type=int, default=1)
    parser.add_argument("--no-spark", action="store_true")
    parser.add_argument("--ingest-docs", type=int, default=20_000)
    args = parser.parse_args()

    real = real_docs()
    docs = resample_mixed(real, args.docs)
    nbytes = sum(d.nbytes for d in docs)
    small_bytes = sum(d.nbytes for d in docs[: args.small])
    print(
        f"corpus: {len(real)} real documents of ../shared/data resampled (paragraph mix) to "
        f"{len(docs)} "
        f"({nbytes / 1e6:.1f} MB title + content, {nbytes / len(docs):.0f} B/article); "
        f"load: {os.getloadavg()[0]:.2f} (1 min) on {os.cpu_count()} cores",
        flush=True,
    )
    rows: list[tuple[str, float, int, int, float]] = []
    n = len(docs)
    with tempfile.TemporaryDirectory() as tmp:
        settings, factory = database(Path(tmp) / "small", docs[: args.small])
        small2 = timed(lambda: local_run(settings, factory, 2), args.repeat)
        rows.append(
            (
                f"local, 2 processes ({args.small} docs)",
                small2,
                args.small,
                small_bytes,
                CPU[f"local2-{args.small}"],
            )
        )
        settings, factory = database(Path(tmp) / "full", docs)
        one = timed(lambda: local_run(settings, factory, 1), args.repeat)
        two = timed(lambda: local_run(settings, factory, 2), args.repeat)
        rows += [("local, 1 process", one, n, nbytes, CPU[f"local1-{n}"])]
        rows += [("local, 2 processes", two, n, nbytes, CPU[f"local2-{n}"])]
        if not args.no_spark:
            s1 = timed(lambda: spark_run(settings, factory, "local[1]"), args.repeat)
            s2 = timed(lambda: spark_run(settings, factory, "local[2]"), args.repeat)
            rows += [("spark local[1]", s1, n, nbytes, CPU["spark local[1]"])]
            rows += [("spark local[2]", s2, n, nbytes, CPU["spark local[2]"])]
        ingest = docs[: args.ingest_docs]
        i1 = ingest_run(Path(tmp) / "i1", ingest, 1)
        i2 = ingest_run(Path(tmp) / "i2", ingest, 2)
    print(f"load after the runs: {os.getloadavg()[0]:.2f} (1 min)")
    ingest_bytes = sum(d.nbytes for d in ingest)
    for workers, (sec, count, cpu) in ((1, i1), (2, i2)):
        rows += [
            (f"ingest, ingest.workers={workers} ({count} docs)", sec, count, ingest_bytes, cpu)
        ]
    table(rows)
    per_doc = (two - small2) / (len(docs) - args.small)
    fixed = two - per_doc * len(docs)
    million = fixed + per_doc * 1e6
    print(f"\nlocal 2 processes vs 1: {one / two:.2f}x   (issue 14: >= 1.8x)")
    if not args.no_spark:
        print(f"spark local[2] vs local[1]: {s1 / s2:.2f}x   (target >= 1.6x)")
    print(
        f"local 1M-article full reindex, 2 processes: {fixed:.1f} s + {per_doc * 1e3:.3f} ms x "
        f"1e6 = {million / 60:.1f} min   (issue 14: <= 5 min)"
    )
    print(f"1 process, same per-article scaling: {one * 1e6 / len(docs) / 60:.1f} min")
    print(f"ingest.workers=2 vs 1: {i1[0] / i2[0]:.2f}x")
    cpu1, cpu2 = CPU[f"local1-{n}"], CPU[f"local2-{n}"]
    print(
        f"CPU per article: 1 process {cpu1 / n * 1e3:.2f} ms, 2 processes {cpu2 / n * 1e3:.2f} ms"
        f" (with 2 idle cores, 2 processes can reach at most {2 * cpu1 / cpu2:.2f}x)"
    )


if __name__ == "__main__":
    main()
