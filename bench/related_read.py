"""The read path of a related list in one process, as a serving worker answers: latency, CPU and
the SQL statements per list, on a database made by README's commands.

``python -m bench.related_read DATA_DIR [--queries 1000] [--seed 1] [--database DB]``:
``DATA_DIR`` holds ``recengine.db`` (SQLite; or ``--database``, e.g. ``bench.related_speed``'s
1M synthetic database) and the index files the reindex published (e.g. ``recengine ingest``
of ``bench.peers``' corpus into an empty database). The index follows the database's changes as
a worker does (``LiveIndex.follow_changes``: the WAL header, no position query while nothing
changes); the native libraries on one thread (``web.native_threads``). After ``--warm`` lists,
``--queries`` random articles' lists (k = 10) in a fresh ORM session each, as a web request
has: wall and CPU p50 / p99, and the statements SQLite ran, by kind. ``--stages``: the CPU
of each stage of a list (the thread's CPU inside each step, nested steps indented, means per
list): where the time goes without a profiler's per-call cost, which inflates the many small
Python steps against the few large native ones.

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
    parser.add_argument("--stages", action="store_true")
    parser.add_argument("--database", type=Path, default=None)
    args = parser.parse_args()
    spent = timed_stages() if args.stages else {}
    url = f"sqlite:///{args.database or args.data_dir / 'recengine.db'}"
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
    spent.update(dict.fromkeys(spent, 0.0))  # the warm-up's left out
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
    if spent:
        print(f"  CPU per list by stage (mean of {n}; the whole list {np.mean(c):.2f} ms):")
        for label, seconds in spent.items():
            print(f"    {label:32s} {seconds / n * 1e3:6.3f} ms")


# (module, attribute, label): a list's stages, outermost first; nested ones indented
STAGES = (
    ("recengine.recommend.live:LiveIndex", "current", "index position and snapshot"),
    ("recengine.recommend.related", "load_query", "query article"),
    ("recengine.recommend.signals.scoring:Signals", "of_list", "readers' signals read"),
    ("recengine.recommend.related", "ranked", "candidates, exactly scored"),
    ("recengine.index.related.view:IndexView", "search", "  TF-IDF postings + scores"),
    ("recengine.index.dense:DenseIndex", "search", "  dense scan + exact scores"),
    ("recengine.recommend.lists.blend", "blended", "  blend of both parts"),
    ("recengine.recommend.signals.scoring:Signals", "rescore", "readers' signals applied"),
    ("recengine.recommend.related:RelatedArticles", "_pick", "suppression"),
    ("recengine.recommend.lists.suppress", "may_duplicate", "  who may duplicate (pairs)"),
    ("recengine.recommend.lists.suppress", "closest_duplicate", "  the criterion per item"),
    ("recengine.recommend.lists.listing:Texts", "__call__", "    texts compared"),
    ("recengine.recommend.related:RelatedArticles", "_body", "items and explanations"),
)


def timed_stages() -> dict[str, float]:
    """Wrap each of :data:`STAGES` (where its callers look it up) to add the thread's CPU time
    inside it to the returned dict, by label; cleared after the warm-up by the caller."""
    import importlib

    spent = dict.fromkeys((label for *_, label in STAGES), 0.0)

    def timed(function: Any, label: str) -> Any:
        def inner(*args: Any, **kwargs: Any) -> Any:
            start = time.thread_time()
            try:
                return function(*args, **kwargs)
            finally:
                spent[label] += time.thread_time() - start

        return inner

    for where, name, label in STAGES:
        module_name, _, owner = where.partition(":")
        target = importlib.import_module(module_name)
        holder = getattr(target, owner) if owner else target
        setattr(holder, name, timed(getattr(holder, name), label))
    return spent


if __name__ == "__main__":
    main()
