"""Before / after: the CPU of one related list, for several source trees, alternated.

``bench.related_speed`` builds its index from SQL in every run (six minutes at 1M), which is
too slow to alternate two versions of the code often enough to see past this shared machine's
drift. Here each tree (a directory holding a ``recengine`` package, e.g. ``git archive <commit>
| tar -x -C /tmp/before``) answers the same related lists in a process of its own, one tree
after the other, ``--rounds`` times; every process opens the index files saved in
``--data-dir`` (the first run builds them), so a round costs seconds. Data: the synthetic
database of ``bench.related_speed`` (``bench/results/related-synthetic-<n>.db``, built by it;
its dense model fitted by it too).

Per run: the thread's CPU time and wall-clock, p50 / p99, of ``--queries`` related lists
(Python API, k = 10, a fresh session per list, after 20 lists of warm-up), then the median of
each tree's rounds and their ratio to the first tree's.

Usage: ``python -m bench.related_ab --size 1000000 --data-dir /tmp/ab-data TREE [TREE ...]``
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

RESULTS = Path(__file__).resolve().parent / "results"

_CHILD = """
import json, sys, time
tree, n, queries, data, db = sys.argv[1:6]
sys.path.insert(0, tree)
import numpy as np
import recengine
assert recengine.__file__.startswith(tree), recengine.__file__
from recengine.config import load_settings
from recengine.recommend.live import LiveIndex
from recengine.recommend.related import RelatedArticles
from recengine.storage.db import make_engine, make_session_factory
n, queries = int(n), int(queries)
settings = load_settings({"data_dir": data, "database_url": f"sqlite:///{db}"})
factory = make_session_factory(make_engine(settings.resolved_database_url))
index = LiveIndex(settings, factory, background=False)
with factory() as session:
    index.current(session=session)
service = RelatedArticles(settings, index)
picks = np.random.default_rng(1).choice(n, queries + 20, replace=False)
cpu, wall = [], []
for j, i in enumerate(picks):
    w, c = time.perf_counter(), time.thread_time()
    with factory() as session:
        service.related(f"s{i}", session=session, k=10)
    if j >= 20:
        cpu.append(time.thread_time() - c)
        wall.append(time.perf_counter() - w)
print(json.dumps({"cpu": cpu, "wall": wall}))
"""


def run(tree: Path, n: int, queries: int, data: Path, db: Path) -> dict[str, float]:
    """One tree's lists in a fresh process: p50 / p99 of CPU and wall-clock, in ms."""
    out = subprocess.run(
        [sys.executable, "-c", _CHILD, str(tree), str(n), str(queries), str(data), str(db)],
        check=True,
        capture_output=True,
        text=True,
        cwd="/",
    ).stdout
    times = json.loads(out.strip().splitlines()[-1])
    figures = {}
    for name in ("cpu", "wall"):
        ms = sorted(t * 1e3 for t in times[name])
        figures[f"{name}_p50"] = statistics.median(ms)
        figures[f"{name}_p99"] = ms[min(len(ms) - 1, int(0.99 * len(ms)))]
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("trees", type=Path, nargs="+")
    parser.add_argument("--size", type=int, default=1_000_000)
    parser.add_argument("--queries", type=int, default=1_000)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--data-dir", type=Path, required=True)
    args = parser.parse_args()
    db = RESULTS / f"related-synthetic-{args.size}.db"
    if not db.exists():
        raise SystemExit(
            f"{db} is missing: run `python -m bench.related_speed --sizes {args.size}`"
        )
    trees = [t.resolve() for t in args.trees]
    print(f"load average before: {os.getloadavg()}", flush=True)
    runs: dict[Path, list[dict[str, float]]] = {t: [] for t in trees}
    for r in range(args.rounds):
        for tree in trees:
            f = run(tree, args.size, args.queries, args.data_dir, db)
            runs[tree].append(f)
            print(
                f"round {r + 1} {tree}: CPU p50 {f['cpu_p50']:.2f} / p99 {f['cpu_p99']:.2f} ms,"
                f" wall p50 {f['wall_p50']:.2f} / p99 {f['wall_p99']:.2f} ms",
                flush=True,
            )
    first = statistics.median(f["cpu_p50"] for f in runs[trees[0]])
    for tree in trees:
        p50 = statistics.median(f["cpu_p50"] for f in runs[tree])
        p99 = statistics.median(f["cpu_p99"] for f in runs[tree])
        print(f"median of rounds, {tree}: CPU p50 {p50:.2f} ms ({p50 / first:.2f}x), p99 {p99:.2f}")
    print(f"load average after: {os.getloadavg()}")


if __name__ == "__main__":
    main()
