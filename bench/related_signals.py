"""The signals of issue 49 (freshness, diversity, fallback) on the labelled real corpora.

Each part on its own over the shipped defaults, every article a query once, k = 10, the
product end to end (``RelatedArticles.related``): precision@10 of "related" (same category;
a shared tag on csdn-blog-100; precision divides by 10 even when a list is shorter), on the
queries of each half of ``bench.related_parts`` (seed 11: "tuning" chooses, "held out" is
reported), near-duplicate pairs inside the lists (query and items, ``Stored.duplicate_pairs``),
the mean list length and the intra-list similarity (mean pairwise cosine of the items' stored
vectors: what diversity lowers).

Dates: only csdn-blog-100 has them (2000-2004, its TSV's unix time); javaguide and csl-papers
have none, so freshness cannot act there (an undated article's list does not decay) and its
rows equal the default's. The fallback fills from the article's category, which is what
"related" means on the two categorised corpora: its precision there counts same-category
filler as related, an upper bound of what a reader gains. ``most_clicked`` needs feedback
counters, which no corpus has (it would fill as ``newest`` does).

Native pools (OpenBLAS) are held to one thread, as in recengine's server worker
(``web.native_threads``): the times are one request's on one core.

Usage: ``python -m bench.related_signals [--only csdn-blog-100] [--sweep] [--speed]``
"""

from __future__ import annotations

import argparse
import csv
import os
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np
from threadpoolctl import threadpool_limits

from bench.corpus import Doc, shared_data
from bench.related_common import Stored, labelled, related, with_reposts
from bench.related_parts import half_of
from bench.store import sqlite_store
from recengine.config import Settings
from recengine.features.neardup import NearDupCriterion
from recengine.pipeline.featurize import Featurizer
from recengine.pipeline.ingest.ingester import Ingester
from recengine.pipeline.reindex.full import reindex
from recengine.recommend.live import LiveIndex
from recengine.recommend.related import RelatedArticles

K = 10
PARTS: dict[str, dict[str, Any]] = {
    "recengine (default)": {},
    "  + freshness (half_life_days=365)": {"half_life_days": 365.0},
    "  + diversity (MMR, diversity=0.3)": {"diversity": 0.3},
    "  + fallback (min_items=5, newest)": {"min_items": 5},
}
SWEEP: dict[str, dict[str, Any]] = {
    **{f"  half_life_days={h:g}": {"half_life_days": h} for h in (30, 180, 365, 730, 1460)},
    **{f"  diversity={d:g}": {"diversity": d} for d in (0.1, 0.2, 0.3, 0.5, 0.7)},
    **{f"  min_items={m}": {"min_items": m} for m in (3, 5, 10)},
    # lists are nearly always full at the shipped floor: a stricter one leaves short lists
    "  min_score=0.15": {"min_score": 0.15},
    **{f"  min_score=0.15, min_items={m}": {"min_score": 0.15, "min_items": m} for m in (5, 10)},
}
# the fallback against planted reposts (the newest articles, by id, on undated corpora)
PLANTED: dict[str, dict[str, Any]] = {
    "  min_score=0.15": {"min_score": 0.15},
    "  min_score=0.15, min_items=10": {"min_score": 0.15, "min_items": 10},
}


@dataclass(frozen=True)
class DatedDoc(Doc):
    published_at: str | None = None

    def record(self) -> dict[str, Any]:
        return {**super().record(), "published_at": self.published_at}


def dated(docs: list[Doc], data: Path) -> list[Doc]:
    """csdn-blog-100 with its publication times (the TSV's 4th column, unix seconds)."""
    csv.field_size_limit(1 << 30)
    with (data / "csdn-blog-100" / "csdn_blog_100.tsv").open(encoding="utf-8") as handle:
        when = {
            f"csdn/{r[0]}": datetime.fromtimestamp(int(r[3]), UTC).isoformat()
            for r in csv.reader(handle, delimiter="\t")
        }
    return [DatedDoc(d.id, d.title, d.content, d.category, d.tags, when.get(d.id)) for d in docs]


@contextmanager
def database(docs: list[Doc]) -> Iterator[tuple[Settings, Any]]:
    """A temporary SQLite database holding ``docs`` (their dates too), ingested, reindexed."""
    with tempfile.TemporaryDirectory(prefix="recengine-signals-") as tmp:
        settings, engine, factory = sqlite_store(Path(tmp), "s.db")
        featurizer = Featurizer(settings)
        Ingester(factory, featurizer).ingest_records(d.record() for d in docs)
        reindex(factory=factory, featurizer=featurizer)
        try:
            yield settings, factory
        finally:
            engine.dispose()


def evaluate(
    docs: list[Doc], parts: dict[str, dict[str, Any]], queries: list[Doc] | None = None
) -> dict[str, dict[str, float]]:
    """Each part's lists for every query (default: every article), and their figures (see the
    module docstring)."""
    by_id = {d.id: d for d in docs}
    queries = docs if queries is None else queries
    held = [half_of(d.id) == "held-out" for d in queries]
    out: dict[str, dict[str, float]] = {}
    with database(docs) as (settings, factory):
        stored = Stored.read(factory)
        row = {e: i for i, e in enumerate(stored.external)}
        live = LiveIndex(settings, factory, background=False)
        featurizer = Featurizer(settings)
        texts = [featurizer.compared(by_id[e].title, by_id[e].content) for e in stored.external]
        judge = NearDupCriterion.from_settings(settings)
        for name, values in parts.items():
            changed = settings.related.model_copy(update=values)
            service = RelatedArticles(settings.model_copy(update={"related": changed}), live)
            lists, times = [], []
            with factory() as session:
                for d in queries:
                    start = time.perf_counter()
                    body = service.related(d.id, session=session, k=K)
                    times.append(time.perf_counter() - start)
                    lists.append([row[i["id"]] for i in body["items"]])
            out[name] = figures(docs, queries, lists, held, stored, row)
            out[name]["dup_pairs"] = sum(
                stored.duplicate_pairs([row[d.id], *r], judge, texts)
                for d, r in zip(queries, lists, strict=True)
            )
            out[name]["p50_ms"] = 1e3 * float(np.median(times))
    return out


def figures(
    docs: list[Doc],
    queries: list[Doc],
    lists: list[list[int]],
    held: list[bool],
    stored: Stored,
    row: dict[str, int],
) -> dict[str, float]:
    by_row = {row[d.id]: d for d in docs}
    p = [sum(related(q, by_row[j]) for j in r[:K]) / K for q, r in zip(queries, lists, strict=True)]
    ils = []
    for r in lists:
        if len(r) > 1:
            sub = stored.matrix[r]
            gram = (sub @ sub.T).toarray()
            ils.append(float(gram[np.triu_indices(len(r), 1)].mean()))
    return {
        "p@10": float(np.mean(p)),
        "tuning": float(np.mean([x for x, h in zip(p, held, strict=True) if not h])),
        "held": float(np.mean([x for x, h in zip(p, held, strict=True) if h])),
        "mean_len": float(np.mean([len(r) for r in lists])),
        "ils": float(np.mean(ils)) if ils else 0.0,
    }


def speed(docs: list[Doc], parts: dict[str, dict[str, Any]], rounds: int = 3) -> None:
    """CPU of one list per part, the parts alternated query by query (each query asked of
    every part in turn, ``rounds`` times, after one warm-up): medians and p90 of the
    process's CPU time, and each part's median ratio to the default's on the same queries."""
    with database(docs) as (settings, factory):
        live = LiveIndex(settings, factory, background=False)
        services = {
            n: RelatedArticles(
                settings.model_copy(update={"related": settings.related.model_copy(update=values)}),
                live,
            )
            for n, values in parts.items()
        }
        times: dict[str, list[float]] = {n: [] for n in parts}
        with factory() as session:
            for d in docs[:50]:
                for s in services.values():
                    s.related(d.id, session=session, k=K)
            for _ in range(rounds):
                for d in docs:
                    for n, s in services.items():
                        start = time.process_time()
                        s.related(d.id, session=session, k=K)
                        times[n].append(time.process_time() - start)
    base = np.array(times[next(iter(parts))])
    print(f"  {'part':<38} {'CPU p50 ms':>11} {'p90 ms':>8} {'median ratio':>13}")
    for n, t in times.items():
        x = np.array(t)
        ratio = float(np.median(x / np.maximum(base, 1e-6)))
        print(
            f"  {n:<38} {1e3 * np.median(x):>11.2f} {1e3 * np.quantile(x, 0.9):>8.2f} "
            f"{ratio:>13.2f}"
        )


def report(name: str, result: dict[str, dict[str, float]]) -> None:
    print(f"\n{name}")
    print(
        f"  {'part':<38} {'p@10':>7} {'tuning':>7} {'held out':>9} {'near-dup pairs':>15} "
        f"{'mean list':>10} {'list sim':>9} {'p50 ms':>7}"
    )
    for part, m in result.items():
        print(
            f"  {part:<38} {m['p@10']:>7.4f} {m['tuning']:>7.4f} {m['held']:>9.4f} "
            f"{int(m['dup_pairs']):>15} {m['mean_len']:>10.2f} {m['ils']:>9.4f} "
            f"{m['p50_ms']:>7.2f}"
        )


def corpora(only: str | None) -> dict[str, list[Doc]]:
    data = shared_data()
    found = {n: d for n, d in labelled(data).items() if only in (None, n)}
    if "csdn-blog-100" in found:
        found["csdn-blog-100"] = dated(found["csdn-blog-100"], data)
    return found


def rows(only: str | None = None) -> None:
    """The parts' rows on every labelled corpus (what ``bench.related_quality`` prints)."""
    with threadpool_limits(1):
        for name, docs in corpora(only).items():
            title = f"{name} ({len(docs)} real articles): issue 49 items 3, 6"
            report(title, evaluate(docs, PARTS))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--only", default=None, help="csdn-blog-100, javaguide, csl-papers")
    parser.add_argument("--sweep", action="store_true", help="also each part's values")
    parser.add_argument("--speed", action="store_true", help="only the CPU per list, alternated")
    args = parser.parse_args()
    print(f"load average at start: {os.getloadavg()}")
    with threadpool_limits(1):
        for name, docs in corpora(args.only).items():
            if args.speed:
                print(f"\n{name} ({len(docs)} real articles): CPU per list, parts alternated")
                speed(docs, PARTS)
                continue
            parts = {**PARTS, **SWEEP} if args.sweep else PARTS
            report(f"{name} ({len(docs)} real articles)", evaluate(docs, parts))
            if args.sweep:
                planted, _ = with_reposts(docs, 0.1)
                title = f"{name} + {len(planted) - len(docs)} planted reposts"
                report(title, evaluate(planted, PLANTED, docs))
    print(f"load average at end: {os.getloadavg()}")


if __name__ == "__main__":
    main()
