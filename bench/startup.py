"""Start-up time of the command line: ``recengine --help``, a command's ``--help`` and two
light commands on a small database, and of a reindex's pool of two workers (a process that
starts one and waits for its first result: what every reindex and bulk ingest pays), beside a
bare ``python -c pass`` in the same run (what no Python program can beat).

Usage::

    python -m bench.startup [--runs 20] [--tree DIR]

Each command runs ``--runs`` times as a new process; the median and the 90th percentile of the
wall-clock time, and the median CPU seconds (user + system: steadier than wall on a shared
machine), are printed with the load average. The light commands, ``recengine related ID`` and
``recengine duplicates``, run on a SQLite database of 30 real JavaGuide articles
(``tests/data``) ingested and reindexed through the command line in a temporary directory
(also every command's working directory). ``--tree`` runs the code of another checkout
(``git archive <commit> | tar -x -C DIR``) through ``PYTHONPATH``, to compare two versions in
one run.
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

# Starts the pool a reindex starts, and waits for its workers' first result (their CPU is in the
# figure: the children are reaped).
POOL = (
    "from recengine.config import load_settings\n"
    "from recengine.pipeline.reindex.pool import AnalysisPool\n"
    "with AnalysisPool(load_settings(), workers=2) as pool:\n"
    "    pool.count_texts(['今天 天气 很好', '明天 下雨'] * 4)\n"
)


def timings(
    command: list[str], runs: int, env: dict[str, str] | None = None, cwd: Path | None = None
) -> tuple[list[float], list[float]]:
    """Sorted wall seconds and CPU seconds (user + system) of ``runs`` runs of ``command``
    (in ``cwd``: ``python -c`` puts its folder first on the path, before ``PYTHONPATH``)."""
    walls, cpus = [], []
    for _ in range(runs):
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        start = time.perf_counter()
        subprocess.run(
            command,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            check=True,
            env=env,
            cwd=cwd,
        )
        walls.append(time.perf_counter() - start)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpus.append(after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime)
    return sorted(walls), sorted(cpus)


def small_database(folder: Path, cli: list[str], env: dict[str, str]) -> str:
    """30 real JavaGuide articles ingested and reindexed by the command line (the state of a
    site after its first reindex); the id of the first."""
    source = Path(__file__).resolve().parents[1] / "tests" / "data" / "javaguide"
    rows = [json.loads(line) for line in (source / "javaguide.jsonl").open(encoding="utf-8")]
    records = [{"id": r["id"], "title": r["title"], "content": r["body"]} for r in rows[:30]]
    path = folder / "articles.jsonl"
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records))
    for args in (["db", "upgrade"], ["ingest", str(path)], ["reindex"]):
        subprocess.run([*cli, *args], env=env, check=True, capture_output=True, cwd=folder)
    return str(records[0]["id"])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--tree", type=Path, help="run the code of this checkout instead")
    args = parser.parse_args()
    env = dict(os.environ)
    if args.tree is not None:
        env["PYTHONPATH"] = str(args.tree.resolve())
    cli = [sys.executable, "-c", "from recengine.cli import main; main()"]
    with tempfile.TemporaryDirectory() as tmp:
        env["RECENGINE_DATA_DIR"] = str(Path(tmp) / "data")
        first = small_database(Path(tmp), cli, env)
        commands = {
            "python -c pass (reference)": [sys.executable, "-c", "pass"],
            "recengine --help": [*cli, "--help"],
            "recengine ingest --help": [*cli, "ingest", "--help"],
            "recengine related --help": [*cli, "related", "--help"],
            "recengine related ID (30 articles)": [*cli, "related", first],
            "recengine duplicates (30 articles)": [*cli, "duplicates"],
            "a pool of 2 workers, first result": [sys.executable, "-c", POOL],
        }
        print(f"load {os.getloadavg()[0]:.2f} (1 min) on {os.cpu_count()} cores; {args.runs} runs")
        for name, command in commands.items():
            walls, cpus = timings(command, args.runs, env, Path(tmp))
            p90 = walls[int(0.9 * (len(walls) - 1))]
            print(
                f"{name:<38} median {statistics.median(walls) * 1e3:7.1f} ms   "
                f"p90 {p90 * 1e3:7.1f} ms   CPU {statistics.median(cpus) * 1e3:7.1f} ms"
            )
    print(f"load after: {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
