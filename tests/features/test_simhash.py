"""Simhash and Hamming: the vectorised batch equals a plain-Python reference bit for bit."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from recengine.features.fingerprint import fingerprints
from recengine.features.hashing import TermHasher, term_hash
from recengine.features.simhash import hamming, hamming_many, simhash, simhash_many
from recengine.features.tfidf import SparseVector


def reference_simhash(features: list[tuple[str, float]]) -> int:
    """DESIGN.md, literally: +w where the feature hash bit is 1, -w where 0; bit set if sum > 0."""
    sums = [0.0] * 64
    for term, weight in features:
        h = term_hash(term)
        for i in range(64):
            sums[i] += weight if (h >> i) & 1 else -weight
    return sum(1 << i for i in range(64) if sums[i] > 0)


terms = st.text(min_size=1, max_size=6)
weights = st.floats(min_value=1e-3, max_value=1e3, allow_nan=False).map(
    lambda w: float(np.float32(w))
)
documents = st.lists(st.tuples(terms, weights), max_size=40)


@settings(max_examples=300, deadline=None)
@given(st.lists(documents, min_size=1, max_size=8))
def test_batch_equals_reference_bit_for_bit(docs: list[list[tuple[str, float]]]) -> None:
    hasher = TermHasher()
    hashes = [hasher.hashes([t for t, _ in d]) for d in docs]
    ws = [np.array([w for _, w in d], dtype=np.float32) for d in docs]
    got = simhash_many(hashes, ws)
    assert got.dtype == np.uint64 and got.shape == (len(docs),)
    assert [int(x) for x in got] == [reference_simhash(d) for d in docs]


@settings(max_examples=100, deadline=None)
@given(documents, st.randoms(use_true_random=False))
def test_identical_token_weights_give_identical_fingerprints(
    doc: list[tuple[str, float]], rnd: object
) -> None:
    shuffled = list(doc)
    rnd.shuffle(shuffled)  # type: ignore[attr-defined]
    hasher = TermHasher()
    a = simhash(hasher.hashes([t for t, _ in doc]), np.array([w for _, w in doc], np.float32))
    b = simhash(
        hasher.hashes([t for t, _ in shuffled]), np.array([w for _, w in shuffled], np.float32)
    )
    assert a == b


def test_fingerprints_above_2_63_are_produced_and_kept_unsigned() -> None:
    hasher = TermHasher()
    docs = [[f"term{i}-{j}" for j in range(5)] for i in range(200)]
    prints = simhash_many([hasher.hashes(d) for d in docs], [np.ones(5, np.float32)] * len(docs))
    assert any(int(p) >= 1 << 63 for p in prints)
    assert all(0 <= int(p) < 1 << 64 for p in prints)


def test_empty_document_and_length_checks() -> None:
    assert simhash(np.zeros(0, np.uint64), np.zeros(0, np.float32)) == 0
    assert list(simhash_many([], [])) == []
    import pytest

    with pytest.raises(ValueError, match="weight"):
        simhash_many([np.zeros(2, np.uint64)], [np.zeros(3, np.float32)])
    with pytest.raises(ValueError, match="arrays"):
        simhash_many([np.zeros(2, np.uint64)], [])


u64 = st.integers(min_value=0, max_value=(1 << 64) - 1)


@given(u64, u64, u64)
def test_hamming_is_a_metric(a: int, b: int, c: int) -> None:
    assert hamming(a, a) == 0
    assert hamming(a, b) == hamming(b, a)
    assert (hamming(a, b) == 0) == (a == b)
    assert hamming(a, c) <= hamming(a, b) + hamming(b, c)
    assert 0 <= hamming(a, b) <= 64


@given(st.lists(st.tuples(u64, u64), min_size=1, max_size=50))
def test_hamming_many_matches_scalar(pairs: list[tuple[int, int]]) -> None:
    a = np.array([p[0] for p in pairs], dtype=np.uint64)
    b = np.array([p[1] for p in pairs], dtype=np.uint64)
    assert hamming_many(a, b).tolist() == [hamming(x, y) for x, y in pairs]


def test_term_hash_is_stable_across_processes() -> None:
    # Pinned values: a change of hash function would silently invalidate stored fingerprints
    # (blake2b-64 of the UTF-8 bytes, little-endian).
    assert term_hash("python") == 0xB1C8E19E6E98B6A8
    assert term_hash("机器学习") == 0x41D4FFEFBEE095D3
    import subprocess
    import sys

    code = "from recengine.features.hashing import term_hash; print(term_hash('机器学习'))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert int(out.stdout) == term_hash("机器学习")


def test_fingerprint_uses_top_n_terms_only() -> None:
    hasher = TermHasher()
    terms = tuple(f"t{i}" for i in range(30))
    weights = np.linspace(1.0, 0.1, 30).astype(np.float32)
    vec = SparseVector(terms, hasher.hashes(terms), weights)
    cut = SparseVector(terms[:20], hasher.hashes(terms[:20]), weights[:20])
    assert fingerprints([vec], 20)[0] == fingerprints([cut], 100)[0]


def test_blocks_of_very_different_widths_give_the_reference() -> None:
    """Documents are grouped by size into blocks: many small ones with a few huge ones, in any
    order, still give each document its own reference fingerprint."""
    rng = np.random.default_rng(5)
    sizes = [0, 3, 70_000, 1, 40, 5_000, 2, 0, 900, 65_536, 12] * 3
    docs = [
        [(f"w{rng.integers(1e9)}", float(np.float32(rng.random()))) for _ in range(n)]
        for n in sizes
    ]
    hasher = TermHasher()
    got = simhash_many(
        [hasher.hashes([t for t, _ in d]) for d in docs],
        [np.array([w for _, w in d], dtype=np.float32) for d in docs],
    )
    small = [i for i, n in enumerate(sizes) if n <= 5_000]
    assert [int(got[i]) for i in small] == [reference_simhash(docs[i]) for i in small]
    for i, n in enumerate(sizes):  # the large ones: against a batch of one
        if n > 5_000:
            alone = simhash_many(
                [hasher.hashes([t for t, _ in docs[i]])],
                [np.array([w for _, w in docs[i]], dtype=np.float32)],
            )
            assert int(got[i]) == int(alone[0])


def test_count_fingerprints_batch_equals_one_by_one() -> None:
    from recengine.features.fingerprint import count_fingerprints
    from recengine.features.tfidf import fit_idf

    docs: list[dict[str, int]] = [{"数据库": 3, "索引": 1}, {}, {"python": 2, "新词": 1}, {}]
    model = fit_idf(docs[:1])
    hasher = TermHasher()
    batch = count_fingerprints(docs, model, hasher)
    assert batch.dtype == np.uint64 and len(batch) == len(docs)
    assert [int(x) for x in batch] == [int(count_fingerprints([d], model, hasher)[0]) for d in docs]
    assert batch[1] == 0 and len(count_fingerprints([], model, hasher)) == 0
