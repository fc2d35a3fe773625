"""Stored vectors use sublinear TF; fingerprints stay the raw-count simhash either way."""

from __future__ import annotations

import math
from pathlib import Path

from recengine.config import load_settings
from recengine.features.tfidf import SparseVector, fit_idf
from recengine.pipeline.featurize import Featurizer, model_params
from recengine.text.words.tokenize import Tokenizer
from tests.factories import javaguide_records


def test_sublinear_vectors_and_unchanged_fingerprints(tokenizer: Tokenizer, data_dir: Path) -> None:
    sub = Featurizer(load_settings(), tokenizer)
    raw = Featurizer(load_settings({"features": {"sublinear_tf": False}}), tokenizer)
    assert sub.settings.features.sublinear_tf  # the shipped default
    stats = [sub.analyze(r["title"], r["content"]) for r in javaguide_records(data_dir, 40)]
    model = fit_idf(s.counts for s in stats)
    a, b = sub.features(stats, model), raw.features(stats, model)
    assert [x.fingerprint for x in a] == [x.fingerprint for x in b]
    for s, row in zip(stats, a, strict=True):
        vector = SparseVector.from_bytes(row.vector)
        top = vector.terms[0]
        expected = {t: (1 + math.log(c)) * model.idf(t) for t, c in s.counts.items()}
        best = max(expected.values())
        assert math.isclose(expected[top], best, rel_tol=1e-6)
    assert model_params(sub.settings) != model_params(raw.settings)  # a switch needs a reindex
