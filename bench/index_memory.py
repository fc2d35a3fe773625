"""Memory per article of every derived index, and the per-process overhead, on a stored corpus.

Opens every index kind a deployment keeps (``derived.registry.followers``: related lists,
near-duplicate fingerprints, passages) the way a server worker does (the saved file,
memory-mapped, or a build from SQL) in this process and prints, per kind: articles, the bytes
the index holds (``IndexKind.nbytes``: its arrays, mapped pages included, and the tables
FAISS rebuilds on load), bytes per article, the size of its file, and the growth of this
process's resident memory while it opened (RSS counts mapped pages only once touched; the
arrays' bytes are the upper figure). The reference beside them: the SQL database's size per
article. The figures scale linearly with the article count (every structure is per article
or per posting, and postings per article are capped by ``related.index_terms``, passages per
article by ``PASSAGES_KEPT``), which is what the scale plan in README.md uses.

Usage::

    python -m bench.index_memory --db bench/results/api_load_synthetic_100000.db
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path
from typing import Any

import psutil

from recengine.config import load_settings
from recengine.derived.registry import followers
from recengine.storage.db import make_engine, make_session_factory
from recengine.storage.rows.index_rows import SqlIndexRows

SYNTHETIC = {"features": {"simhash_top_n": 100_000}}  # as bench.api_load builds its corpus


def measure(db: Path) -> list[dict[str, Any]]:
    settings = load_settings(
        {"database_url": f"sqlite:///{db}", "data_dir": str(db.parent / f"{db.stem}.data")}
        | SYNTHETIC
    )
    factory = make_session_factory(make_engine(settings.resolved_database_url))
    process = psutil.Process()
    rows = []
    for follower in followers(settings).values():
        before = process.memory_info().rss
        with factory() as session:
            held = follower.sync(SqlIndexRows(session))
        assert held is not None, "no model: reindex first"
        kind = follower.kind
        n = kind.size(held.index)
        nbytes = kind.nbytes(held.index)
        directory = follower.directory
        files = sorted(directory.glob("*")) if directory and directory.is_dir() else []
        newest = max(files, key=lambda p: p.stat().st_mtime) if files else None
        rows.append(
            {
                "kind": kind.name,
                "articles": n,
                "bytes": nbytes,
                "per_article": nbytes / n,
                "file_bytes": newest.stat().st_size if newest else 0,
                "rss_growth": process.memory_info().rss - before,
                "stats": follower.stats.__dict__,
            }
        )
    rows.append(
        {"kind": "sql database", "articles": rows[0]["articles"], "bytes": db.stat().st_size}
    )
    rows[-1]["per_article"] = rows[-1]["bytes"] / rows[-1]["articles"]
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--db", type=Path, required=True)
    args = parser.parse_args()
    print(f"{'index':14} {'articles':>9} {'MB':>9} {'B/article':>10} {'file MB':>8} {'RSS +MB':>8}")
    for r in measure(args.db.resolve()):
        print(
            f"{r['kind']:14} {r['articles']:9d} {r['bytes'] / 1e6:9.1f} {r['per_article']:10.0f} "
            f"{r.get('file_bytes', 0) / 1e6:8.1f} {r.get('rss_growth', 0) / 1e6:8.1f}"
        )
    la = os.getloadavg()
    print(f"load average: {la[0]:.2f} {la[1]:.2f} {la[2]:.2f}")


if __name__ == "__main__":
    main()
