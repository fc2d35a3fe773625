from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from recengine.features.tfidf import EMPTY_VECTOR, IdfModel, SparseVector, TfidfVectorizer, fit_idf

CORPUS = [
    {"机器": 2, "学习": 3, "python": 1},
    {"学习": 1, "数据库": 4},
    {"python": 2, "数据库": 1, "索引": 1},
]


def test_idf_is_the_smoothed_formula() -> None:
    model = fit_idf(CORPUS)
    assert model.n_docs == 3
    assert model.df == {"机器": 1, "学习": 2, "python": 2, "数据库": 2, "索引": 1}
    assert model.idf("机器") == pytest.approx(math.log(4 / 2) + 1)
    assert model.idf("学习") == pytest.approx(math.log(4 / 3) + 1)
    assert model.idf("从未见过") == pytest.approx(math.log(4) + 1) == model.unknown_idf


def test_vector_weights_are_tf_times_idf_normalised_and_sorted() -> None:
    model = fit_idf(CORPUS)
    vec = TfidfVectorizer(model, max_terms=10).transform(CORPUS[0])
    raw = {t: c * model.idf(t) for t, c in CORPUS[0].items()}
    norm = math.sqrt(sum(v * v for v in raw.values()))
    assert vec.as_dict() == pytest.approx({t: v / norm for t, v in raw.items()}, rel=1e-6)
    assert list(vec.weights) == sorted(vec.weights, reverse=True)
    assert vec.weights.dtype == np.float32 and vec.hashes.dtype == np.uint64


def test_unknown_terms_get_the_highest_idf() -> None:
    model = fit_idf(CORPUS)
    vec = TfidfVectorizer(model, max_terms=10).transform({"学习": 1, "新词": 1})
    assert vec.terms[0] == "新词"


def test_truncation_keeps_largest_and_renormalises() -> None:
    model = fit_idf(CORPUS)
    counts = {f"w{i}": i + 1 for i in range(50)}
    vec = TfidfVectorizer(model, max_terms=5).transform(counts)
    assert vec.terms == ("w49", "w48", "w47", "w46", "w45")
    assert float(np.linalg.norm(vec.weights)) == pytest.approx(1.0, abs=1e-6)


def test_ties_are_broken_by_hash_deterministically() -> None:
    model = IdfModel(n_docs=0, df={})
    counts = {f"t{i}": 1 for i in range(40)}
    a = TfidfVectorizer(model, max_terms=10).transform(counts)
    b = TfidfVectorizer(model, max_terms=10).transform(dict(reversed(list(counts.items()))))
    assert a.terms == b.terms
    assert list(a.hashes) == sorted(a.hashes)


def test_sublinear_tf() -> None:
    model = IdfModel(n_docs=0, df={})
    vec = TfidfVectorizer(model, max_terms=5, sublinear_tf=True).transform({"a": 1, "b": 100})
    ratio = vec.as_dict()["b"] / vec.as_dict()["a"]
    assert ratio == pytest.approx(1 + math.log(100), rel=1e-5)


def test_empty_and_bad_arguments() -> None:
    model = fit_idf(CORPUS)
    assert TfidfVectorizer(model, max_terms=3).transform({}) is EMPTY_VECTOR
    with pytest.raises(ValueError, match="max_terms"):
        TfidfVectorizer(model, max_terms=0)


counts_strategy = st.dictionaries(
    st.text(min_size=1, max_size=5).filter(lambda t: "\n" not in t),
    st.integers(min_value=1, max_value=1000),
    min_size=1,
    max_size=60,
)


@settings(max_examples=200, deadline=None)
@given(st.lists(counts_strategy, min_size=1, max_size=6), st.integers(1, 80))
def test_rows_have_unit_norm_and_round_trip(corpus: list[dict[str, int]], max_terms: int) -> None:
    model = fit_idf(corpus)
    vectorizer = TfidfVectorizer(model, max_terms=max_terms)
    for counts in corpus:
        vec = vectorizer.transform(counts)
        assert len(vec) == min(max_terms, len(counts))
        assert float(np.linalg.norm(vec.weights.astype(np.float64))) == pytest.approx(1, abs=1e-5)
        back = SparseVector.from_bytes(vec.to_bytes())
        assert back.terms == vec.terms
        assert np.array_equal(back.hashes, vec.hashes)
        assert np.array_equal(back.weights, vec.weights)
    again = IdfModel.from_bytes(model.to_bytes())
    assert again.n_docs == model.n_docs and dict(again.df) == dict(model.df)


def test_corrupt_blobs_are_refused() -> None:
    vec = TfidfVectorizer(fit_idf(CORPUS), max_terms=5).transform(CORPUS[0])
    blob = vec.to_bytes()
    with pytest.raises(ValueError, match="corrupt"):
        SparseVector.from_bytes(blob + b"\nextra")
