"""The reindex's full recluster with a templated clique: time and peak memory (issue 13.1).

Data (SQLite, default settings): ``--real`` real inews articles, a reindex (the first model),
then ``--clique`` templated weather pages (``bench.cluster_upkeep``'s: one page type, every page
within the radius of every other, all one cluster) ingested in batches. The reference, in the
same process: the same real articles without the pages, same steps.

Figures, for each database: seconds of ``Deduplicator.cluster_all`` on the active version (what
``recengine reindex`` runs before its switch: candidates, verification in rank order, rows
written), the process's peak resident memory during it above its resident memory before it
(``VmRSS`` sampled every 5 ms), the member rows and a digest of them (to
compare the clusters of two code versions), and the candidate pairs of the self-join
(``--pairs``: counted after the timed part).

Usage::

    python -m bench.recluster [--real 5000] [--clique 10000] [--folder DIR] [--pairs]

With ``--folder`` the databases are kept there and reused by the next run (the same data for
two code versions: build once, then run each version's code on it).
"""

from __future__ import annotations

import argparse
import hashlib
import os
import random
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from sqlalchemy import select

from bench.cluster_upkeep import templated
from bench.corpus import inews_docs
from bench.store import sqlite_store
from recengine.index.neardup.candidates import Candidates
from recengine.pipeline.clusters.upkeep import Deduplicator
from recengine.pipeline.featurize import Featurizer
from recengine.pipeline.ingest.ingester import Ingester
from recengine.pipeline.reindex.full import reindex
from recengine.storage.db import transaction
from recengine.storage.models import ClusterMember
from recengine.storage.state import read_state


def build(folder: Path, real: list[dict[str, Any]], clique: int) -> None:
    """The database: the real articles, a reindex, then the templated pages in batches."""
    settings, engine, factory = sqlite_store(folder)
    featurizer = Featurizer(settings)
    ingester = Ingester(factory, featurizer)
    ingester.ingest_records(real)
    reindex(factory=factory, featurizer=featurizer)
    rnd = random.Random(5)
    for start in range(0, clique, 1_000):
        ingester.ingest_records(templated(min(1_000, clique - start), rnd, start))
    engine.dispose()


def _rss() -> int:
    """The process's resident memory in bytes (``VmRSS``)."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    raise KeyError("VmRSS")


class PeakRss:
    """The highest resident memory seen while it runs (sampled every 5 ms by a thread)."""

    def __enter__(self) -> PeakRss:
        self.peak = self.start = _rss()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._sample, daemon=True)
        self._thread.start()
        return self

    def _sample(self) -> None:
        while not self._stop.wait(0.005):
            self.peak = max(self.peak, _rss())

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()
        self.peak = max(self.peak, _rss())


def measure(folder: Path, count_pairs: bool) -> dict[str, Any]:
    """Time and peak memory of one full recluster of the active version."""
    settings, engine, factory = sqlite_store(folder)
    dedup = Deduplicator(settings)
    dedup.prepare(factory)
    with transaction(factory) as session:
        synced = dedup.synced(session)
        version = read_state(session=session).active_model_version
    assert version is not None
    index = Candidates(synced.radius, synced.passages)  # what a reindex passes
    with PeakRss() as rss:
        start = time.perf_counter()
        rows = dedup.cluster_all(factory, version, index)
        seconds = time.perf_counter() - start
    peak = rss.peak - rss.start
    with transaction(factory) as session:
        found = session.execute(
            select(
                ClusterMember.article_id,
                ClusterMember.canonical_id,
                ClusterMember.distance,
                ClusterMember.score,
                ClusterMember.rule,
            )
            .where(ClusterMember.model_version == version)
            .order_by(ClusterMember.article_id)
        ).all()
    digest = hashlib.sha256(
        "\n".join(f"{a} {c} {d} {s:.6f} {r}" for a, c, d, s, r in found).encode()
    ).hexdigest()[:16]
    pairs = len(index.pairs()) if count_pairs else None
    engine.dispose()
    return {
        "articles": len(index.radius),
        "seconds": seconds,
        "peak": peak,
        "rows": rows,
        "digest": digest,
        "pairs": pairs,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--real", type=int, default=5_000)
    parser.add_argument("--clique", type=int, default=10_000)
    parser.add_argument("--folder", type=Path, default=None)
    parser.add_argument("--pairs", action="store_true", help="count the self-join's pairs")
    args = parser.parse_args()
    rnd = random.Random(5)
    unique = [d.record() for d in inews_docs() if len(d.content) > 400]
    rnd.shuffle(unique)
    real = unique[: args.real]
    with tempfile.TemporaryDirectory() as tmp:
        root = args.folder or Path(tmp)
        folders = {"real only": root / "real", f"real + {args.clique:,} templated": root / "clique"}
        for name, folder in folders.items():
            if not (folder / "bench.db").exists():
                folder.mkdir(parents=True, exist_ok=True)
                start = time.perf_counter()
                build(folder, real, 0 if name == "real only" else args.clique)
                print(f"built {name} in {time.perf_counter() - start:.1f} s", flush=True)
        print(f"load average {os.getloadavg()[0]:.2f}", flush=True)
        print(
            f"{'database':<28} {'articles':>9} {'recluster s':>12} {'peak MiB':>9} "
            f"{'rows':>7} {'digest':>17} {'pairs':>11}"
        )
        results = {}
        for name, folder in folders.items():
            r = results[name] = measure(folder, args.pairs)
            pairs = f"{r['pairs']:,}" if r["pairs"] is not None else "-"
            print(
                f"{name:<28} {r['articles']:>9,} {r['seconds']:>12.2f} "
                f"{r['peak'] / 2**20:>9.1f} {r['rows']:>7,} {r['digest']:>17} {pairs:>11}",
                flush=True,
            )
        first, second = results.values()
        print(
            f"clique / reference: time {second['seconds'] / first['seconds']:.2f}x, "
            f"load average {os.getloadavg()[0]:.2f}"
        )


if __name__ == "__main__":
    main()
