"""Near-duplicate quality floor on real text: reposts of real CSDN and JavaGuide articles made
by the benchmark's repost edits must be found, and same-topic articles must not be merged.

The full measurement (11,524 documents, MinHashLSH side by side) is bench/neardup_quality.py;
this guards the shipped defaults against regressions on a small real sample.
"""

from __future__ import annotations

from itertools import combinations
from pathlib import Path

import numpy as np
import pytest

from bench.corpus import csdn, jsonl
from bench.neardup_edits import make_copies
from recengine.config import load_settings
from recengine.features.fingerprint import count_fingerprints
from recengine.features.neardup import NearDupCriterion
from recengine.features.tfidf import TfidfVectorizer, fit_idf
from recengine.pipeline.clusters.leader_rule import cluster_corpus, rank_key
from recengine.pipeline.featurize import Featurizer
from recengine.text.cleaning.clean import clean
from recengine.text.neardup.compare import article_passages
from recengine.text.words.tokenize import Tokenizer


@pytest.mark.slow
def test_default_criterion_finds_real_reposts(data_dir: Path, tokenizer: Tokenizer) -> None:
    bases = csdn(data_dir) + jsonl(data_dir, "javaguide/javaguide.jsonl", "javaguide")[:200]
    bases = [b.__class__(b.id, clean(b.title), clean(b.content), None, ()) for b in bases]
    copies = make_copies(bases, 96, seed=5)
    docs = bases + [c.doc for c in copies]
    group = {b.id: i for i, b in enumerate(bases)}
    owner = list(range(len(bases))) + [group[c.base] for c in copies]
    settings = load_settings()
    featurizer = Featurizer(settings, tokenizer)
    texts = [featurizer.text(d.title, d.content) for d in docs]
    counts = [featurizer.count(t).counts for t in texts]
    model = fit_idf(counts)
    vectorizer = TfidfVectorizer(model, settings.features.vector_max_terms)
    ids = np.arange(len(docs), dtype=np.int64)
    members = cluster_corpus(
        ids,
        count_fingerprints(counts, model, featurizer.hasher),
        {i: rank_key(i, None) for i in range(len(docs))},
        {i: vectorizer.transform(c) for i, c in enumerate(counts)},
        NearDupCriterion.from_settings(settings),
        {i: featurizer.compared(d.title, d.content) for i, d in enumerate(docs)},
        {i: article_passages(d.title, d.content) for i, d in enumerate(docs)},  # both sources
        settings.neardup.passage_stop_df,
    )
    clusters: dict[int, list[int]] = {}
    for m in members:
        clusters.setdefault(m.canonical_id, [m.canonical_id]).append(m.article_id)
    found = {tuple(sorted(p)) for c in clusters.values() for p in combinations(c, 2)}
    truth = {(a, b) for a, b in combinations(range(len(docs)), 2) if owner[a] == owner[b]}
    precision = len(found & truth) / max(1, len(found))
    recall = len(found & truth) / len(truth)
    # Floors below the measured figures (here 0.982 / 1.000 with both candidate sources at
    # k = 3; the radius alone at k = 3 found 0.634 of the pairs), far above the original method's
    # recall (~0.6): a regression in normalisation, fingerprint, passages or verification fails.
    print(f"precision {precision:.3f} recall {recall:.3f} over {len(truth)} true pairs")
    assert precision >= 0.97, (precision, recall)
    assert recall >= 0.88, (precision, recall)
