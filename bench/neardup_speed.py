"""Near-duplicate index speed at 1M and 10M fingerprints: build, memory, queries, self-join.

Data: uniformly random 64-bit fingerprints plus planted near-duplicates (``--planted`` pairs
per million, each a copy of a random fingerprint with 1..k random bits flipped). Synthetic on
purpose: speed depends on how fingerprints spread over the tables, and uniform is the worst
case for bucket sizes of real simhashes (which are close to uniform). Quality is measured on
real text by bench/neardup_quality.py.

Compared side by side in this process:

* recengine ``NearDupIndex`` (FAISS IndexBinaryMultiHash, layout chosen for k and n);
* FAISS ``IndexBinaryFlat`` (exact brute force);
* with ``--passages``: the passage index (``recengine.index.neardup.passages``, the second candidate
  source: 8 uniform hashes per article, planted partial copies sharing 1..8 of them);
* with ``--leader``: the reindex's leader pass in rank blocks over the same fingerprints (the
  candidate work a recluster runs; a verification that always passes);
* the PyPI ``simhash`` package's ``SimhashIndex`` (pure Python; only at sizes where building
  it takes reasonable time, ``--simhash-max``, and radii where its k+1 blocks still make small
  buckets, ``--simhash-max-k``). It runs under numpy 2 here: only its fingerprint computation
  overflows with weights > 255 (DESIGN.md), not the index over given 64-bit values.

Single queries are timed one by one (half planted copies, half random); the batch figure is
``search_many`` over 20,000 stored fingerprints (FAISS spreads them over both cores). The
self-join is ``NearDupIndex.pairs()`` over every stored fingerprint; when the first chunk shows
it would exceed ``--join-budget`` seconds, the rest is extrapolated from the chunks done (marked).

Usage::

    python -m bench.neardup_speed [--sizes 1000000 10000000] [--k 8 3]
"""

from __future__ import annotations

import argparse
import gc
import os
import time
from collections.abc import Callable
from typing import TypeVar

import faiss
import numpy as np
import psutil

from bench.recluster import PeakRss
from recengine.index.neardup.passages import PassageIndex
from recengine.index.neardup.radius import NearDupIndex, Pairs, as_codes
from recengine.pipeline.clusters.leader_pass import leader_blocks
from recengine.pipeline.clusters.leader_rule import Edge

T = TypeVar("T")
QUERIES = 2_000
BATCH = 20_000
JOIN_CHUNK = 16_384


def rss() -> int:
    return int(psutil.Process(os.getpid()).memory_info().rss)


def data(n: int, k: int, planted_per_m: int, seed: int = 1) -> tuple[np.ndarray, np.ndarray]:
    """``n`` fingerprints whose last ``m`` are planted copies of random earlier ones."""
    rng = np.random.default_rng(seed)
    m = planted_per_m * n // 1_000_000
    fps = rng.integers(0, 2**64, size=n, dtype=np.uint64)
    src = rng.choice(n - m, size=m, replace=False)
    flips = np.zeros(m, np.uint64)
    for i, nbits in enumerate(rng.integers(1, k + 1, size=m)):
        for bit in rng.choice(64, size=nbits, replace=False):
            flips[i] |= np.uint64(1) << np.uint64(bit)
    fps[n - m :] = fps[src] ^ flips
    return fps, np.stack([src, np.arange(n - m, n)], axis=1)


def percentiles(times: list[float]) -> str:
    p50, p99 = np.percentile(np.array(times) * 1e3, [50, 99])
    return f"p50 {p50:.3f} ms  p99 {p99:.3f} ms"


def single_queries(search: object, queries: np.ndarray) -> list[float]:
    times = []
    for q in queries.tolist():
        start = time.perf_counter()
        search(q)  # type: ignore[operator]
        times.append(time.perf_counter() - start)
    return times


def self_join(index: NearDupIndex, fps: np.ndarray, budget: float) -> tuple[float, object, bool]:
    """Seconds for ``index.pairs()``, or an extrapolation from chunks when over budget."""
    chunk = JOIN_CHUNK
    start = time.perf_counter()
    index.search_many(fps[:chunk])
    first = time.perf_counter() - start
    if first * len(fps) / chunk <= budget:
        start = time.perf_counter()
        pairs = index.pairs()
        return time.perf_counter() - start, pairs, False
    done, spent = chunk, first
    while spent < budget / 2 and done < len(fps):
        start = time.perf_counter()
        index.search_many(fps[done : done + chunk])
        spent += time.perf_counter() - start
        done += chunk
    return spent * len(fps) / done, None, True


def _recengine(fps: np.ndarray, k: int) -> NearDupIndex:
    index = NearDupIndex(k)
    index.add(np.arange(len(fps)), fps)
    return index


def run_recengine(fps: np.ndarray, planted: np.ndarray, k: int, budget: float) -> None:
    index, build, grown = measured(lambda: _recengine(fps, k))
    rng = np.random.default_rng(2)
    queries = np.concatenate(
        [
            fps[planted[rng.choice(len(planted), QUERIES // 2), 1]],
            rng.integers(0, 2**64, QUERIES // 2, dtype=np.uint64),
        ]
    )
    times = single_queries(lambda q: index.search(q), queries)
    start = time.perf_counter()
    index.search_many(fps[:BATCH])
    batch = BATCH / (time.perf_counter() - start)
    join, pairs, extrapolated = self_join(index, fps, budget)
    found = "n/a (extrapolated)"
    if pairs is not None:
        got = set(zip(pairs.a.tolist(), pairs.b.tolist(), strict=True))  # type: ignore[attr-defined]
        hit = sum((int(a), int(b)) in got for a, b in planted)
        found = f"{hit}/{len(planted)} = {hit / len(planted):.4f}"
    print(
        f"  recengine k={k} {index.layout}: build {build:.1f} s, memory +{grown / 2**30:.2f} GiB "
        f"(estimate {index.memory_bytes() / 2**30:.2f} GiB)"
    )
    print(f"    single query {percentiles(times)}; batch {batch:,.0f} queries/s")
    print(
        f"    self-join {join:.1f} s{' (EXTRAPOLATED)' if extrapolated else ''}; "
        f"planted pairs found {found}"
    )


def run_leader(fps: np.ndarray, planted: np.ndarray, k: int) -> None:
    """What ``recengine reindex`` runs for radius candidates: the leader pass in rank blocks
    over every fingerprint (:func:`recengine.pipeline.clusters.leader_pass.leader_blocks`, positions
    as ids and rank order, so planted copies rank after their sources), with a verification that
    always passes and no passage pairs: the candidate work alone, no SQL, no texts."""
    none = Pairs(np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros(0, np.uint8))

    def verify(a: int, c: int) -> Edge:
        return Edge(min(a, c), max(a, c), int(fps[a] ^ fps[c]).bit_count(), 1.0, "bench")

    ids = np.arange(len(fps), dtype=np.int64)
    with PeakRss() as rss:
        start = time.perf_counter()
        members = leader_blocks(ids, fps, k, none, verify)
        seconds = time.perf_counter() - start
    joined = np.zeros(len(fps), bool)
    joined[[m.article_id for m in members]] = True
    hit = int(joined[planted[:, 1]].sum())
    print(
        f"  leader pass in rank blocks (block tables): {seconds:.1f} s, peak memory "
        f"+{(rss.peak - rss.start) / 2**30:.2f} GiB; {len(members):,} members; "
        f"planted copies in a cluster {hit}/{len(planted)} = {hit / len(planted):.4f}"
    )


def passage_data(n: int, planted_per_m: int, seed: int = 3) -> tuple[np.ndarray, np.ndarray]:
    """``n`` articles' 8 passage hashes (uniform: each text's bottom-8 sketch is); the last
    ``m`` are partial copies of random earlier ones, keeping 1..8 of their hashes."""
    rng = np.random.default_rng(seed)
    m = planted_per_m * n // 1_000_000
    rows = rng.integers(0, 2**64, size=(n, 8), dtype=np.uint64)
    src = rng.choice(n - m, size=m, replace=False)
    keep = rng.integers(1, 9, size=m)
    mask = np.arange(8)[None, :] < keep[:, None]
    rows[n - m :][mask] = rows[src][mask]
    return rows, np.stack([src, np.arange(n - m, n)], axis=1)


def _passages(rows: np.ndarray, stop_df: int) -> PassageIndex:
    index = PassageIndex(stop_df=stop_df)
    index.add_rows(np.arange(len(rows), dtype=np.int64), rows, np.full(len(rows), 8, np.int16))
    index.pairs()  # folds the tail in: the state a query sees after a build from SQL
    return index


def run_passages(n: int, planted_per_m: int, stop_df: int) -> None:
    """The passage index (second candidate source): build, memory, queries, self-join."""
    rows, planted = passage_data(n, planted_per_m)
    index, build, grown = measured(lambda: _passages(rows, stop_df))
    rng = np.random.default_rng(4)
    picks = np.concatenate(
        [planted[rng.choice(len(planted), QUERIES // 2), 1], rng.choice(n, QUERIES // 2)]
    )
    times = single_queries(lambda i: index.query(rows[i], exclude=i), picks)
    start = time.perf_counter()
    pairs = index.pairs()
    join = time.perf_counter() - start
    got = set(zip(pairs.a.tolist(), pairs.b.tolist(), strict=True))
    hit = sum((int(a), int(b)) in got for a, b in planted)
    print(f"\n{n:,} articles x 8 passages ({len(planted):,} planted partial copies)")
    print(f"  passage index: build {build:.1f} s, memory +{grown / 2**30:.2f} GiB")
    print(f"    single query {percentiles(times)}")
    print(f"    self-join {join:.1f} s; planted pairs found {hit}/{len(planted)}")


def measured(build: Callable[[], T]) -> tuple[T, float, int]:
    """``build()``'s result, seconds and resident memory growth (bytes)."""
    gc.collect()
    before = rss()
    start = time.perf_counter()
    result = build()
    return result, time.perf_counter() - start, rss() - before


def _flat(fps: np.ndarray) -> faiss.IndexBinaryFlat:
    flat = faiss.IndexBinaryFlat(64)
    flat.add(as_codes(fps))
    return flat


def run_flat(fps: np.ndarray, k: int) -> None:
    flat, build, grown = measured(lambda: _flat(fps))
    queries = fps[:200]
    times = single_queries(
        lambda q: flat.range_search(as_codes(np.array([q], np.uint64)), k + 1), queries
    )
    start = time.perf_counter()
    flat.range_search(as_codes(fps[:2_000]), k + 1)
    batch = 2_000 / (time.perf_counter() - start)
    print(f"  IndexBinaryFlat (brute force): build {build:.1f} s, memory +{grown / 2**30:.2f} GiB")
    print(
        f"    single query {percentiles(times)}; batch {batch:,.0f} queries/s; self-join "
        f"{len(fps) / batch:.0f} s (EXTRAPOLATED from the batch rate)"
    )


def run_pypi(fps: np.ndarray, k: int) -> None:
    import logging

    from simhash import Simhash, SimhashIndex

    logging.getLogger().setLevel(logging.ERROR)  # it logs every bucket over 200 entries

    index, build, grown = measured(
        lambda: SimhashIndex([(str(i), Simhash(int(v))) for i, v in enumerate(fps.tolist())], k=k)
    )
    times = single_queries(lambda q: index.get_near_dups(Simhash(q)), fps[:200])
    print(f"  PyPI simhash SimhashIndex: build {build:.1f} s, memory +{grown / 2**30:.2f} GiB")
    print(f"    single query {percentiles(times)}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[1_000_000, 10_000_000])
    parser.add_argument("--k", type=int, nargs="+", default=[8, 3])
    parser.add_argument("--planted", type=int, default=10_000, help="planted pairs per million")
    parser.add_argument("--join-budget", type=float, default=600.0)
    parser.add_argument("--simhash-max", type=int, default=1_000_000)
    parser.add_argument(
        "--simhash-max-k",
        type=int,
        default=4,
        help="its index cuts k+1 blocks: at k=8, 7-bit blocks make every bucket huge",
    )
    parser.add_argument("--no-flat", action="store_true")
    parser.add_argument("--leader", action="store_true", help="also the reindex's leader pass")
    parser.add_argument("--passages", action="store_true", help="also the passage index")
    parser.add_argument("--stop-df", type=int, default=200)
    args = parser.parse_args()
    print(
        f"faiss {faiss.__version__}, {faiss.omp_get_max_threads()} threads; "
        f"load average {os.getloadavg()}"
    )
    for n in args.sizes:
        for k in args.k:
            fps, planted = data(n, k, args.planted)
            print(f"\n{n:,} fingerprints ({len(planted):,} planted pairs within {k} bits), k={k}")
            run_recengine(fps, planted, k, args.join_budget)
            if args.leader:
                run_leader(fps, planted, k)
            if not args.no_flat:
                run_flat(fps, k)
            if n <= args.simhash_max and k <= args.simhash_max_k:
                run_pypi(fps, k)
            del fps, planted
        if args.passages:
            run_passages(n, args.planted, args.stop_df)
    print(f"\nload average at the end {os.getloadavg()}")


if __name__ == "__main__":
    main()
