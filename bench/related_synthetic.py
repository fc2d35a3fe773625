"""Synthetic articles at any scale, resampled from the tokens of the real corpora.

Resampling whole documents 400 times over (2,529 real ones to 1M) would make every article a
near-copy of 400 others, which no real site looks like. Instead each synthetic article:

* takes the length (in tokens) of a random real article A;
* draws its tokens from a Dirichlet(1, 1, 1) mixture of A and two more real articles of A's
  corpus and category (with replacement, by frequency);
* renames 30% of its distinct words to a variant shared by the articles of its "shard" (word
  ``w`` becomes ``w#s``; ``min(n / 100, 1000)`` shards), so the vocabulary grows with the
  corpus as real vocabularies do (names, products, events) instead of staying at the real
  corpora's size: 1.8M distinct stored terms at 100k articles.

Median cosine of an article's 1st / 10th / 100th nearest neighbour: 0.24 / 0.17 / 0.07 at 100k
articles (``bench.related_speed`` prints it for each size), against 0.11-0.29 / 0.04-0.11 /
0.02-0.03 on the three real corpora (100-2,000 articles each).
Categories and tags are A's; publication dates are spread over 2020-2025. With the sentence
encoder on (``dense.encoder``), an article's encoder vector is A's (the encoder's vector of A's
title and lead, ``features.encoder``) plus Gaussian noise of norm ~0.75, renormalised: cosine
~0.8 to A's, so the articles drawn from one real article crowd around it as their tokens do.

:func:`write_database` stores such a corpus straight into a SQLite database (articles, features
under an IDF model fitted on it, their cards, engine state), as ingest + reindex would, without
tokenizing.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import numpy as np
from sqlalchemy import insert, update

from bench.corpus import Doc
from bench.related_common import labelled
from recengine.config import Settings
from recengine.features.tfidf import IdfModel
from recengine.pipeline.featurize import Featurizer, TextStats, model_params
from recengine.pipeline.reindex.cards import fill_cards
from recengine.storage.db import make_engine, make_session_factory, transaction
from recengine.storage.migrate import upgrade
from recengine.storage.models import Article, ArticleFeatures, EngineState, IdfModelRow

RENAMED, SHARD_SIZE, MAX_SHARDS, MIXTURE = 0.3, 100, 1_000, 3


@dataclass
class Pools:
    """The real articles as token pools: ``vocab[term id]``, per article its token ids."""

    vocab: list[str]
    tokens: list[np.ndarray[Any, Any]]
    docs: list[Doc]
    groups: list[np.ndarray[Any, Any]]  # per article: the articles of its corpus + category


def pools(settings: Settings) -> Pools:
    featurizer = Featurizer(settings)
    vocab: dict[str, int] = {}
    tokens, docs, keys = [], [], []
    for name, corpus in labelled().items():
        for doc in corpus:
            counts = featurizer.analyze(doc.title, doc.content).counts
            ids = np.array([vocab.setdefault(t, len(vocab)) for t in counts], np.int64)
            tokens.append(np.repeat(ids, list(counts.values())))
            docs.append(doc)
            keys.append((name, doc.category or ""))
    by_key: dict[tuple[str, str], list[int]] = {}
    for i, key in enumerate(keys):
        by_key.setdefault(key, []).append(i)
    groups = [np.array(by_key[key]) for key in keys]
    return Pools(list(vocab), tokens, docs, groups)


def generate(p: Pools, n: int, seed: int) -> tuple[np.ndarray[Any, Any], ...]:
    """Per synthetic article: term keys and counts (CSR), and its source article."""
    rng = np.random.default_rng(seed)
    shards, v = min(MAX_SHARDS, max(1, n // SHARD_SIZE)), len(p.vocab)
    keys, counts, lengths, sources = [], [], np.zeros(n, np.int64), np.zeros(n, np.int64)
    for i in range(n):
        a = int(rng.integers(len(p.docs)))
        mix = [a, *rng.choice(p.groups[a], MIXTURE - 1)]
        sizes = rng.multinomial(len(p.tokens[a]), rng.dirichlet(np.ones(MIXTURE)))
        drawn = np.concatenate(
            [
                p.tokens[s][rng.integers(0, len(p.tokens[s]), k)]
                for s, k in zip(mix, sizes, strict=True)
                if k and len(p.tokens[s])
            ]
            or [np.zeros(0, np.int64)]
        )
        terms, c = np.unique(drawn, return_counts=True)
        renamed = rng.random(len(terms)) < RENAMED
        shard = int(rng.integers(shards))
        keys.append(np.where(renamed, v + terms * shards + shard, terms))
        counts.append(c)
        lengths[i], sources[i] = len(terms), a
    indptr = np.concatenate(([0], np.cumsum(lengths)))
    return np.concatenate(keys), np.concatenate(counts), indptr, sources, np.array([shards])


def term_names(p: Pools, keys: np.ndarray[Any, Any], shards: int) -> list[str]:
    v = len(p.vocab)
    return [
        p.vocab[k] if k < v else f"{p.vocab[(k - v) // shards]}#{(k - v) % shards}"
        for k in keys.tolist()
    ]


def write_database(path: Path, settings: Settings, n: int, seed: int = 7) -> None:
    """A SQLite database at ``path`` holding ``n`` synthetic articles with their features."""
    start = time.perf_counter()
    p = pools(settings)
    keys, counts, indptr, sources, shards = generate(p, n, seed)
    unique, inverse = np.unique(keys, return_inverse=True)
    names = term_names(p, unique, int(shards[0]))
    df = np.bincount(inverse.ravel(), minlength=len(unique))
    model = IdfModel(n_docs=n, df=dict(zip(names, df.tolist(), strict=True)))
    print(f"  generated {n} articles, {len(unique)} terms in {time.perf_counter() - start:.0f} s")
    engine = make_engine(f"sqlite:///{path}")
    upgrade(engine)
    factory = make_session_factory(engine)
    with transaction(factory) as session:
        session.add(
            IdfModelRow(
                created_at=datetime.now(UTC),
                n_docs=n,
                n_terms=len(names),
                params=model_params(settings),
                payload=model.to_bytes(),
            )
        )
    for chunk in _chunks(n, 10_000):
        with transaction(factory) as session:
            _write_chunk(
                session, chunk, p, names, inverse.ravel(), counts, indptr, sources, model, settings
            )
    with transaction(factory) as session:
        session.execute(
            update(EngineState).where(EngineState.id == 1).values(seq=1, active_model_version=1)
        )
    # the cards, as ingest derives them: without them each list read its items' cards from SQL
    # (1M articles: ~40 s)
    fill_cards(factory, settings)
    engine.dispose()
    print(f"  wrote {path} in {time.perf_counter() - start:.0f} s")


def _chunks(n: int, size: int) -> Iterator[range]:
    for start in range(0, n, size):
        yield range(start, min(n, start + size))


_FEATURIZERS: dict[int, Featurizer] = {}
_REAL_EMBEDDINGS: dict[int, Any] = {}


def _embeddings(p: Pools, settings: Settings, sources: list[int], seed: int) -> list[Any]:
    """Each article's encoder vector (see the module docstring), or None with it off."""
    if settings.dense.encoder != "use":
        return [None] * len(sources)
    from recengine.features.encoder import lead_text, load_encoder, to_bytes
    from recengine.text.neardup.compare import clean_parts

    if id(p) not in _REAL_EMBEDDINGS:
        chars = settings.dense.lead_chars
        leads = [lead_text(*clean_parts(d.title, d.content, True), chars) for d in p.docs]
        _REAL_EMBEDDINGS[id(p)] = load_encoder().encode(leads)
    base = _REAL_EMBEDDINGS[id(p)][sources]
    noise = np.random.default_rng(seed).standard_normal(base.shape).astype(np.float32)
    z = base + noise * (0.75 / np.sqrt(base.shape[1]))
    z /= np.linalg.norm(z, axis=1, keepdims=True)
    return to_bytes(z)


def _featurizer(settings: Settings) -> Featurizer:
    """A featurizer per settings object (its term-hash cache is reused across chunks)."""
    if id(settings) not in _FEATURIZERS:
        _FEATURIZERS[id(settings)] = Featurizer(settings)
    return _FEATURIZERS[id(settings)]


def _write_chunk(
    session: Any,
    chunk: range,
    p: Pools,
    names: list[str],
    term_ids: Any,
    counts: Any,
    indptr: Any,
    sources: Any,
    model: IdfModel,
    settings: Settings,
) -> None:
    docs = [
        {
            names[t]: int(c)
            for t, c in zip(
                term_ids[indptr[i] : indptr[i + 1]].tolist(),
                counts[indptr[i] : indptr[i + 1]].tolist(),
                strict=True,
            )
        }
        for i in chunk
    ]
    # the product's own computation: stored vector and fingerprint, as ingest would
    embedded = _embeddings(p, settings, [int(sources[i]) for i in chunk], chunk.start)
    features = _featurizer(settings).features(
        [TextStats("", d, sum(d.values()), e) for d, e in zip(docs, embedded, strict=True)],
        model,
    )
    now = datetime.now(UTC)
    base = datetime(2020, 1, 1, tzinfo=UTC)
    articles = []
    for i in chunk:
        src = p.docs[int(sources[i])]
        articles.append(
            {
                "id": i + 1,
                "external_id": f"s{i}",
                "title": f"{src.title} ({i})",
                "content": "",
                "url": f"https://example.com/s{i}",
                "tags": list(src.tags),
                "category": src.category,
                "author": None,
                "published_at": base + timedelta(minutes=(i * 2_654_435_761) % 3_000_000),
                "record_hash": "0" * 64,
                "text_hash": "0" * 64,
                "created_at": now,
                "updated_at": now,
                "deleted_at": None,
                "seq": 1,
            }
        )
    session.execute(insert(Article), articles)
    session.execute(
        insert(ArticleFeatures),
        [
            {
                "article_id": i + 1,
                "model_version": 1,
                "fingerprint": f.fingerprint,
                "vector": f.vector,
                "n_tokens": f.n_tokens,
                "embedding": f.embedding,
            }
            for i, f in zip(chunk, features, strict=True)
        ],
    )
