"""The read path of a related list in one process, as a serving worker answers: latency, CPU and
the SQL statements per list, on a database made by README's commands.

``python -m bench.related_read DATA_DIR [--queries 1000] [--seed 1]``: ``DATA_DIR`` holds
``recengine.db`` (SQLite) and the index files the reindex published (e.g. ``recengine ingest``
of ``bench.peers``' corpus into an empty database). The index follows the database's changes as
a worker does (``LiveIndex.follow_changes``: the WAL header, no position query while nothing
changes); the native libraries on one thread (``web.native_threads``). After ``--warm`` lists,
``--queries`` random articles' lists (k = 10) in a fresh ORM session each, as a web request
has: wall and CPU p50 / p99, and the statements SQLite ran, by kind.

Run it on two checkouts in turn (``PYTHONPATH=<checkout>``) for a before and after of the same
database in the same minutes; the load is printed (2 shared cores: wall clock follows the load,
CPU time much less).
"""

from __future__ import annotations

import argparse
import collections
import os
import random
import time
from pathlib import Path
from typing import Any

for _name in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_name, "1")  # as web.native_threads = 1 (before numpy loads)

import numpy as np  # noqa: E402
from sqlalchemy import event, select  # noqa: E402

import recengine  # noqa: E402
from recengine.config import load_settings  # noqa: E402
from recengine.recommend.live import LiveIndex  # noqa: E402
from recengine.recommend.related import RelatedArticles  # noqa: E402
from recengine.storage.db import make_engine, make_session_factory  # noqa: E402
from recengine.storage.models import Article  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("data_dir", type=Path)
    parser.add_argument("--queries", type=int, default=1_000)
    parser.add_argument("--warm", type=int, default=200)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    url = f"sqlite:///{args.data_dir / 'recengine.db'}"
    settings = load_settings({"data_dir": str(args.data_dir), "database_url": url})
    engine = make_engine(url)
    factory = make_session_factory(engine)
    index = LiveIndex(settings, factory, background=False)
    follows = getattr(index, "follow_changes", None)  # (a checkout before it: position reads)
    if follows is not None:
        follows()
    service = RelatedArticles(settings, index)
    with factory() as session:
        ids = [r for (r,) in session.execute(select(Article.external_id)).all()]
    picks = random.Random(args.seed).sample(ids, min(len(ids), args.warm + args.queries))
    for article in picks[: args.warm]:
        with factory() as session:
            service.related(article, session=session, k=10)
    statements: collections.Counter[str] = collections.Counter()

    def seen(conn: Any, cursor: Any, statement: str, *rest: Any) -> None:
        words = statement.split()
        statements[" ".join(words[: 6 if words[0] == "SELECT" else 2])] += 1

    event.listen(engine, "before_cursor_execute", seen)
    wall, cpu = [], []
    for article in picks[args.warm :]:
        start, used = time.perf_counter(), time.process_time()
        with factory() as session:
            service.related(article, session=session, k=10)
        wall.append(time.perf_counter() - start)
        cpu.append(time.process_time() - used)
    w, c = np.array(wall) * 1e3, np.array(cpu) * 1e3
    n = len(wall)
    print(
        f"{Path(recengine.__file__).parent.parent}: {n} lists of {len(ids)} articles: wall p50 "
        f"{np.percentile(w, 50):.2f} p99 {np.percentile(w, 99):.2f} ms, CPU p50 "
        f"{np.percentile(c, 50):.2f} p99 {np.percentile(c, 99):.2f} ms; "
        f"SQL statements per list {sum(statements.values()) / n:.2f}; load {os.getloadavg()[0]:.1f}"
    )
    for text, count in statements.most_common(6):
        print(f"    {count / n:6.3f} per list: {text} ...")


if __name__ == "__main__":
    main()
