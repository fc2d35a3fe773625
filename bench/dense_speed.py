"""Dense (LSA) candidates at scale: FAISS search time and memory per article (issue 15).

Data: ``--n`` synthetic unit vectors of ``--dims`` float32 (a mixture of 256 Gaussian topics,
so that neighbourhoods exist as in real LSA vectors; quality is measured on real text in
bench/related_parts.py). Indexes: ``IndexFlatIP`` (exact) and ``IndexIVFFlat`` (inner product,
``nlist`` lists, ``nprobe`` probed), each asked ``--queries`` single queries for their top
``--top`` (the dense candidate source's share of the exact ranking's candidates). Reported:
build time, bytes per article, single-query p50 / p99, and the IVF index's recall of the flat
index's top 10. The load average is printed beside the figures.

Usage: ``python -m bench.dense_speed [--n 1000000 --dims 64 --queries 2000]``
"""

from __future__ import annotations

import argparse
import os
import time
from typing import Any

import numpy as np


def vectors(n: int, dims: int, seed: int = 0) -> np.ndarray[Any, Any]:
    rng = np.random.default_rng(seed)
    centres = rng.standard_normal((256, dims)).astype(np.float32)
    x = centres[rng.integers(0, 256, n)] + 0.8 * rng.standard_normal((n, dims)).astype(np.float32)
    x /= np.linalg.norm(x, axis=1, keepdims=True)
    return x


def timed(index: Any, queries: np.ndarray[Any, Any], top: int) -> tuple[list[float], Any]:
    times, found = [], []
    for q in queries:
        start = time.perf_counter()
        _, ids = index.search(q[None, :], top)
        times.append(time.perf_counter() - start)
        found.append(ids[0])
    return times, np.array(found)


def main() -> None:
    import faiss

    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--n", type=int, default=1_000_000)
    p.add_argument("--dims", type=int, default=64)
    p.add_argument("--queries", type=int, default=2_000)
    p.add_argument("--top", type=int, default=100)
    p.add_argument("--nlist", type=int, default=1024)
    p.add_argument("--nprobe", type=int, default=16)
    p.add_argument(
        "--threads", type=int, default=1, help="OpenMP threads (1: per query, as a server)"
    )
    args = p.parse_args()
    faiss.omp_set_num_threads(args.threads)
    print(
        f"load average at start {os.getloadavg()}; faiss {faiss.__version__}, "
        f"{faiss.omp_get_max_threads()} threads"
    )
    x = vectors(args.n, args.dims)
    queries = x[np.random.default_rng(1).integers(0, args.n, args.queries)]
    rows = []
    start = time.perf_counter()
    flat = faiss.IndexFlatIP(args.dims)
    flat.add(x)
    rows.append(("IndexFlatIP (exact)", flat, time.perf_counter() - start))
    start = time.perf_counter()
    ivf = faiss.IndexIVFFlat(
        faiss.IndexFlatIP(args.dims), args.dims, args.nlist, faiss.METRIC_INNER_PRODUCT
    )
    ivf.train(x[np.random.default_rng(2).choice(args.n, min(args.n, 100 * args.nlist), False)])
    ivf.add(x)
    ivf.nprobe = args.nprobe
    rows.append(
        (f"IndexIVFFlat nlist={args.nlist} nprobe={args.nprobe}", ivf, time.perf_counter() - start)
    )
    reference = None
    print(
        f"{args.n:,} vectors x {args.dims} float32 = {4 * args.dims} bytes per article "
        f"(vectors alone); top {args.top} per query"
    )
    for name, index, build in rows:
        times, found = timed(index, queries, args.top)
        ms = 1e3 * np.array(times)
        if reference is None:
            reference = found
            recall = 1.0
        else:
            recall = float(
                np.mean(
                    [
                        len(set(a[:10]) & set(b[:10])) / 10
                        for a, b in zip(found, reference, strict=True)
                    ]
                )
            )
        per = index.ntotal * 4 * args.dims + (8 * index.ntotal if "IVF" in name else 0)
        print(
            f"  {name:<36} build {build:6.1f} s  {per / index.ntotal:5.0f} B/article  "
            f"p50 {np.percentile(ms, 50):6.2f} ms  p99 {np.percentile(ms, 99):6.2f} ms  "
            f"recall@10 vs flat {recall:.3f}"
        )
    print(f"load average at end {os.getloadavg()}")


if __name__ == "__main__":
    main()
