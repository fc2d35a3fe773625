"""Where a full reindex's time goes: ``recengine reindex`` under cProfile, one process.

Usage::

    python -m bench.reindex_profile [--mb 15] [--workers 1] [--top 25]
    python -m bench.reindex_profile --resampled 30000

The corpus is ``bench.corpus.long_mix`` (real long articles' lengths and paragraphs, see
``bench.cli_run``), or with ``--resampled N`` the N articles of ``bench.reindex``'s
paragraph mix (``resample_mixed``: crowds of articles share passages, so the leader pass
verifies more pairs per article as N grows), ingested through the command line into a SQLite
database in a temporary directory; then ``recengine reindex --no-resume`` runs in a new
process under ``cProfile`` (``--workers 1``: everything in that process, so the profile sees
all of it). Printed: the wall seconds of the profiled reindex, the cumulative seconds of the
steps named below (those that exist in the profiled code), and the top functions by
cumulative time.
"""

from __future__ import annotations

import argparse
import os
import pstats
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench.cli_run import load, write_jsonl
from bench.corpus import long_mix, real_docs, resample_mixed

STEPS = (
    ("full.py", "_pass1"),
    ("full.py", "_pass2"),
    ("full.py", "_spooled_passages"),
    ("switch.py", "switch_to"),
    ("passages.py", "build"),
    ("upkeep.py", "_leaders"),
    ("featurize.py", "compared_of"),
    ("compare.py", "clean_parts"),
    ("compare.py", "compared"),
    ("compare.py", "clean_passages"),
    ("compare.py", "article_passages"),
    ("clean.py", "clean"),
)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--mb", type=float, default=15.0)
    parser.add_argument("--workers", type=int, default=1)
    parser.add_argument("--top", type=int, default=25)
    parser.add_argument(
        "--sort",
        default="cumulative",
        choices=["cumulative", "tottime"],
        help="order of the table (tottime: where the parent itself spends its time)",
    )
    parser.add_argument("--resampled", type=int, default=0, metavar="N")
    args = parser.parse_args()
    if args.resampled:
        docs = resample_mixed(real_docs(), args.resampled)
    else:
        docs = long_mix(int(args.mb * 1e6))
    recengine = str(Path(sys.executable).with_name("recengine"))
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        env = {
            **os.environ,
            "RECENGINE_DATA_DIR": str(root),
            "RECENGINE_DATABASE_URL": f"sqlite:///{root / 'bench.db'}",
        }
        data = write_jsonl(root / "corpus.jsonl", docs)
        for command in (["db", "upgrade"], ["ingest", str(data)]):
            subprocess.run([recengine, *command], env=env, check=True, capture_output=True)
        out = root / "reindex.prof"
        profiled = [sys.executable, "-m", "cProfile", "-o", str(out), recengine, "reindex"]
        before = load()
        start = time.perf_counter()
        subprocess.run(
            [*profiled, "--workers", str(args.workers), "--force", "--no-resume"],
            env=env,
            check=True,
            capture_output=True,
        )
        seconds = time.perf_counter() - start
        nbytes = sum(d.nbytes for d in docs)
        print(
            f"{len(docs)} articles, {nbytes / 1e6:.1f} MB; profiled reindex --workers "
            f"{args.workers}: {seconds:.1f} s wall, load {before} -> {load()}"
        )
        stats = pstats.Stats(str(out))
        table: dict[tuple[str, int, str], tuple[int, int, float, float, object]]
        table = stats.stats  # type: ignore[attr-defined]
        for file, name in STEPS:
            for (path, _, function), (_, calls, _, cumulative, _) in table.items():
                if function == name and path.endswith(file) and "recengine" in path:
                    print(f"  {file}:{name}: {cumulative:.2f} s cumulative, {calls} calls")
        stats.sort_stats(args.sort).print_stats(args.top)


if __name__ == "__main__":
    main()
