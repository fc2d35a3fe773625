"""Related-articles speed at 100k and 1M articles: build, load, memory, p50/p99 of one query.

Data: synthetic articles resampled from the tokens of the real corpora (``bench.related_synthetic``
says how), written once into a SQLite database under ``bench/results/`` and reused.

For each size, in one process (single-threaded, as a server worker answers one request):

* index build from SQL (``LiveIndex`` first use: read every article's features, build the
  segment, save it) and load of the saved file by a second process-like instance;
* memory: the segment's arrays, and the process's resident size before and after the build;
* the dense part's model fitted as a reindex fits it (``pipeline.reindex.dense_fit.fit_dense``; the
  synthetic database is written without a reindex), its fit time and bytes per article;
* one related query through the Python API (``RelatedArticles.related``, k = 10: engine state
  check, SQL look-ups, sparse and dense candidates, exact blended score, suppression,
  explanations), a fresh session per query as a web request has, p50 / p99 over ``--queries``
  random articles; the same with the dense part off (``related.dense_weight = 0``) alternating
  with it;
* the index search alone for the same queries;
* the reference side by side: exact whole-corpus cosine (scipy sparse product with every stored
  vector, the full scan the index avoids) on ``--exact-queries`` of them, and the recall@10 of
  the index's candidates against it.

Usage: ``python -m bench.related_speed [--sizes 100000 1000000] [--queries 1000]``
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np
import scipy.sparse as sp

from bench.related_synthetic import write_database
from recengine.config import load_settings
from recengine.index.related.view import RowFilter, SearchParams
from recengine.pipeline.reindex.dense_fit import fit_dense
from recengine.recommend.live import LiveIndex, search_params
from recengine.recommend.related import RelatedArticles
from recengine.storage.db import make_engine, make_session_factory
from recengine.storage.state import read_state

RESULTS = Path(__file__).resolve().parent / "results"


def rss_mb() -> float:
    import psutil

    return float(psutil.Process().memory_info().rss) / 1e6


def percentiles(seconds: list[float], cpu: list[float] | None = None) -> str:
    """Wall-clock p50 / p99, and the same of the thread's CPU time when given.

    The machine is shared: wall-clock includes waiting for a core; CPU time is what the query
    itself costs (on an idle core the two agree, give or take cache effects).
    """
    ms = np.array(seconds) * 1e3
    out = f"p50 {np.percentile(ms, 50):7.2f} ms   p99 {np.percentile(ms, 99):7.2f} ms"
    if cpu is not None:
        c = np.array(cpu) * 1e3
        out += f"   (CPU: p50 {np.percentile(c, 50):6.2f} ms, p99 {np.percentile(c, 99):6.2f} ms)"
    return out


class Clock:
    """Wall-clock and this thread's CPU time of a block."""

    def __init__(self) -> None:
        self.wall: list[float] = []
        self.cpu: list[float] = []

    def __enter__(self) -> Clock:
        self._w, self._c = time.perf_counter(), time.thread_time()
        return self

    def __exit__(self, *_: object) -> None:
        self.wall.append(time.perf_counter() - self._w)
        self.cpu.append(time.thread_time() - self._c)


def run_size(n: int, queries: int, exact_queries: int) -> None:
    RESULTS.mkdir(exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="recengine-speed-") as tmp:
        settings = load_settings({"data_dir": tmp, "database_url": "sqlite://"})
        # one database per size and encoder (the shipped "auto" resolves to one of them)
        suffix = "-use" if settings.dense.encoder == "use" else ""
        db = RESULTS / f"related-synthetic-{n}{suffix}.db"
        settings = load_settings({"data_dir": tmp, "database_url": f"sqlite:///{db}"})
        if not db.exists():
            print(f"building {db} (once)")
            write_database(db, settings, n)
        factory = make_session_factory(make_engine(settings.resolved_database_url))
        fit = fit_dense_part(settings, factory)
        before = rss_mb()
        index = LiveIndex(settings, factory, background=False)
        start = time.perf_counter()
        with factory() as session:
            snap = index.current(session=session)
        build = time.perf_counter() - start
        seg = snap.parts[0].segment
        files = list((Path(tmp) / "index" / "related").glob("*.idx"))
        start = time.perf_counter()
        with factory() as session:
            LiveIndex(settings, factory, background=False).current(session=session)
        load = time.perf_counter() - start
        print(f"\n{n:,} articles (synthetic, resampled real tokens), {len(seg.terms):,} terms")
        print(
            f"  build from SQL + save: {build:6.1f} s    "
            f"load saved file (CRC checked): {load:5.1f} s"
        )
        print(
            f"  segment arrays: {seg.nbytes / 1e6:7.0f} MB   "
            f"file: {files[0].stat().st_size / 1e6:.0f} MB"
            f"   process RSS {before:.0f} -> {rss_mb():.0f} MB"
        )
        dense = index.dense_stats()
        ivf = n >= settings.dense.ivf_min
        per = 4 * dense["dims"] + (2 * dense["dims"] + 8 if ivf and settings.dense.ivf_half else 0)
        print(
            f"  dense part (encoder {settings.dense.encoder}): fit {fit:.1f} s, dims "
            f"{dense['dims']}, {per} bytes per article in memory (float32 rows"
            f"{', float16 IVF lists and ids' if ivf else ''}; {'IVF' if ivf else 'flat'} FAISS"
            f" index), index arrays {dense.get('bytes', 0) / n:.0f} B per article"
            + (
                f", SQL + {2 * 512} B per article (the stored encoder vector)"
                if settings.dense.encoder == "use"
                else ""
            )
        )
        measure_queries(settings, index, factory, snap, n, queries, exact_queries)


def fit_dense_part(settings: Any, factory: Any) -> float:
    """The dense part's model fitted as a reindex fits it (the synthetic database is written
    without a reindex); returns the seconds it took."""
    with factory() as session:
        version = read_state(session=session).active_model_version
    assert version is not None
    start = time.perf_counter()
    fit_dense(factory, settings.dense, version)
    return time.perf_counter() - start


def measure_queries(
    settings: Any,
    index: LiveIndex,
    factory: Any,
    snap: Any,
    n: int,
    queries: int,
    exact_queries: int,
) -> None:
    rng = np.random.default_rng(1)
    picks = rng.choice(n, min(queries, n), replace=False)
    service = RelatedArticles(settings, index)
    sparse = settings.model_copy(
        update={"related": settings.related.model_copy(update={"dense_weight": 0.0})}
    )
    no_dense = RelatedArticles(sparse, index)
    api, plain, alone = Clock(), Clock(), Clock()
    for i in picks:
        with api, factory() as session:
            service.related(f"s{i}", session=session, k=10)
        with plain, factory() as session:
            no_dense.related(f"s{i}", session=session, k=10)
    params = search_params(settings)
    seg = snap.parts[0].segment
    for i in picks:
        h, w = snap.view.vector(0, int(i))
        with alone:
            snap.view.search(h, w, params, RowFilter(exclude_ids=seg.ids[[i]]), int(seg.ids[i]))
    print(f"  related query, Python API (k=10):  {percentiles(api.wall, api.cpu)}")
    print(f"  the same, dense part off (w = 0):  {percentiles(plain.wall, plain.cpu)}")
    print(f"  index search alone:                {percentiles(alone.wall, alone.cpu)}")
    exact_reference(snap, params, picks[:exact_queries], statistics.median(alone.cpu))


def exact_reference(snap: Any, params: SearchParams, picks: Any, median_alone: float) -> None:
    seg = snap.parts[0].segment
    matrix = sp.csr_matrix(
        (seg.vec_weights.astype(np.float64), seg.vec_cols, seg.vec_indptr),
        shape=(len(seg), len(seg.terms)),
    )
    clock, recall, profile = Clock(), [], []
    for i in picks:
        with clock:
            scores = (matrix @ matrix[int(i)].T).toarray().ravel()
            scores[i] = -np.inf
            top = np.argpartition(-scores, 10)[:11]
            top = top[np.lexsort((top, -scores[top]))][:10]
        want = {int(j) for j in top if scores[j] > 0}
        profile.append(np.sort(scores[np.argpartition(-scores, 100)[:100]])[::-1][[0, 9, 99]])
        h, w = snap.view.vector(0, int(i))
        hits = snap.view.search(h, w, params, RowFilter(exclude_ids=seg.ids[[i]]), int(seg.ids[i]))
        got = {int(j) for j in seg.find(hits.ids[:10])}
        recall.append(len(got & want) / len(want) if want else 1.0)
    print(
        f"  reference, exact full scan:        {percentiles(clock.wall, clock.cpu)}"
        f"   ({statistics.median(clock.cpu) / median_alone:.0f}x the index search's CPU)"
    )
    print(f"  candidate recall@10 vs exact ({len(picks)} queries): {np.mean(recall):.4f}")
    first, tenth, hundredth = np.median(np.array(profile), axis=0)
    print(
        f"  median cosine of the 1st / 10th / 100th nearest neighbour: "
        f"{first:.3f} / {tenth:.3f} / {hundredth:.3f}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[100_000, 1_000_000])
    parser.add_argument("--queries", type=int, default=1_000)
    parser.add_argument("--exact-queries", type=int, default=100)
    args = parser.parse_args()
    print(f"load average before: {os.getloadavg()}")
    for n in args.sizes:
        run_size(n, args.queries, args.exact_queries)
    print(f"\nload average after: {os.getloadavg()}")


if __name__ == "__main__":
    main()
