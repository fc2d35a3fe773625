"""Steady-state ingest in one process, beside bare rjieba on the same texts: the per-article
work of a write once a model exists (tokens, features, passages, clusters), without the CLI's
start-up or a pool.

Usage::

    python -m bench.ingest_steady [--runs 2] [--profile N]

Data: the real long articles (``bench.corpus.long_docs``: 1,044 articles, 18.7 MB at their real
lengths) ingested into a SQLite database whose IDF model was fitted on the other real articles
(``bench.corpus.real_docs`` without them), as a site's new posts arrive. Each run builds that
database afresh in a temporary directory and times ``Ingester.ingest_records`` of the long
articles (wall and this process's CPU); bare rjieba (``cut`` of title + content) runs on the
same texts just before, so the ratio is taken at the same load. ``--profile N``: the last run
under cProfile, its top N functions by cumulative time.
"""

from __future__ import annotations

import argparse
import cProfile
import os
import pstats
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

import rjieba

from bench.corpus import Doc, long_docs, real_docs
from recengine.config import load_settings
from recengine.pipeline.featurize import Featurizer
from recengine.pipeline.ingest.ingester import Ingester
from recengine.pipeline.reindex.full import reindex
from recengine.storage.db import make_engine, make_session_factory
from recengine.storage.migrate import upgrade


def records(docs: list[Doc]) -> list[dict[str, Any]]:
    return [{"id": d.id, "title": d.title, "content": d.content} for d in docs]


def one_run(directory: Path, base: list[Doc], longs: list[Doc], profile: int) -> dict[str, float]:
    db = directory / "steady.db"
    settings = load_settings(
        {"database_url": f"sqlite:///{db}", "data_dir": str(directory / "data")}
        | {"ingest": {"workers": 1}}
    )
    engine = make_engine(settings.resolved_database_url)
    upgrade(engine)
    factory = make_session_factory(engine)
    featurizer = Featurizer(settings)
    Ingester(factory, featurizer).ingest_records(records(base))
    reindex(factory=factory, featurizer=featurizer)
    ingester = Ingester(factory, featurizer)
    todo = records(longs)
    texts = [d.title + "\n" + d.content for d in longs]
    t0 = time.perf_counter()
    for text in texts:
        rjieba.cut(text)
    bare = time.perf_counter() - t0
    profiler = cProfile.Profile() if profile else None
    c0, t0 = time.process_time(), time.perf_counter()
    if profiler is not None:
        profiler.enable()
    ingester.ingest_records(todo)
    if profiler is not None:
        profiler.disable()
    wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    engine.dispose()
    if profiler is not None:
        pstats.Stats(profiler).sort_stats("cumulative").print_stats(profile)
    return {"wall_s": wall, "cpu_s": cpu, "rjieba_s": bare, "ratio": bare / wall}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=2)
    parser.add_argument("--profile", type=int, default=0, help="profile the last run: top N")
    args = parser.parse_args()
    longs = long_docs()
    held = {d.id for d in longs}
    base = [d for d in real_docs() if d.id not in held]
    mb = sum(len(d.title.encode()) + len(d.content.encode()) for d in longs) / 1e6
    found = []
    for n in range(args.runs):
        with tempfile.TemporaryDirectory() as directory:
            last = n == args.runs - 1
            found.append(one_run(Path(directory), base, longs, args.profile if last else 0))
        r = found[-1]
        print(
            f"run {n + 1}: {len(longs)} articles, {mb:.1f} MB: steady ingest {r['wall_s']:.2f} s "
            f"wall, {r['cpu_s']:.2f} s CPU; bare rjieba {r['rjieba_s']:.2f} s: "
            f"{r['ratio']:.3f}x; load {os.getloadavg()[0]:.2f}",
            flush=True,
        )
    print(
        f"median: {statistics.median(r['wall_s'] for r in found):.2f} s, "
        f"{mb / statistics.median(r['wall_s'] for r in found):.2f} MB/s, "
        f"{statistics.median(r['ratio'] for r in found):.3f}x bare rjieba"
    )


if __name__ == "__main__":
    main()
