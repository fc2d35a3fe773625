"""Shingle hashes against a plain string-set reference: same sets, same resemblance."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import numpy.typing as npt
from hypothesis import given, settings
from hypothesis import strategies as st

from recengine.features.merge_kernel import shared_count
from recengine.features.neardup import MERGE, overlap, resemblance
from recengine.text.neardup.passages import mix64, passages_of
from recengine.text.neardup.shingles import (
    _BASE,
    HASHING,
    run_hashes,
    shingles,
    shingles_of,
    word_points,
)


def reference(text: str, n: int = 5) -> frozenset[str]:
    s = re.sub(r"[\W_]+", "", text)
    if len(s) <= n:
        return frozenset([s]) if s else frozenset()
    return frozenset(s[i : i + n] for i in range(len(s) - n + 1))


def jaccard(a: frozenset[str], b: frozenset[str]) -> float:
    if not a or not b:
        return 0.0
    return len(a & b) / len(a | b)


alphabet = st.sampled_from(list("数据库索引查询优化的了 ，。abcAB12\n“”"))


@given(st.text(alphabet=alphabet, max_size=40), st.text(alphabet=alphabet, max_size=40))
def test_same_sets_and_resemblance_as_strings(a: str, b: str) -> None:
    ha, hb = shingles(a), shingles(b)
    assert ha.dtype == np.uint64 and list(ha) == sorted(set(ha.tolist()))
    assert len(ha) == len(reference(a))
    assert resemblance(ha, hb) == jaccard(reference(a), reference(b))


def test_real_reposts_resemble_as_with_strings(data_dir: Path) -> None:
    from tests.text.test_tokenize_backends import real_texts

    texts = [t for _, t in real_texts(data_dir)[:300]]
    for text in texts:
        edited = "转载自某网站。" + text[: len(text) * 9 // 10] + "（完）"
        assert resemblance(shingles(text), shingles(edited)) == jaccard(
            reference(text), reference(edited)
        )
    assert resemblance(shingles(texts[0]), shingles(texts[1])) == jaccard(
        reference(texts[0]), reference(texts[1])
    )


def test_punctuation_and_spacing_do_not_count() -> None:
    assert np.array_equal(shingles("“数据库” 索引，查询"), shingles("数据库索引查询"))
    assert len(shingles("，。 ")) == 0
    assert len(shingles("短文")) == 1


def test_word_points_keep_what_the_regular_expression_keeps_for_every_code_point() -> None:
    # The look-up table (and the one-by-one path beyond the BMP) against ``[\W_]`` itself, for
    # every code point a str can hold (surrogates cannot be encoded and are not in any text).
    every = [c for c in range(0x110000) if not 0xD800 <= c <= 0xDFFF]
    text = "".join(map(chr, every))
    kept = "".join(map(chr, word_points(text)))
    assert kept == re.sub(r"[\W_]+", "", text)
    assert len(kept) > 100_000  # CJK, letters and digits of every script


@given(st.text(max_size=200))
def test_word_points_of_any_text_are_its_word_characters(text: str) -> None:
    assert "".join(map(chr, word_points(text))) == re.sub(r"[\W_]+", "", text)


_HASHES = st.sets(st.integers(0, 2**64 - 1), max_size=150)


@settings(deadline=None)  # the first example loads numba
@given(_HASHES, _HASHES, _HASHES)
def test_the_compiled_merge_counts_what_two_sets_share(
    both: set[int], x: set[int], y: set[int]
) -> None:
    # Hashes over the whole uint64 range (the top bit set too); sets from empty to past the
    # size at which overlap() turns to the merge, shared parts of every size.
    a, b = both | x, both | (y - x)
    ha, hb = (np.array(sorted(s), dtype=np.uint64) for s in (a, b))
    assert shared_count(ha, hb) == shared_count(hb, ha) == len(a & b)
    expected = (len(a & b), min(len(a), len(b)), max(len(a), len(b)))
    for compiled in (True, False):  # the merge once bought, the look-ups before
        with MERGE.forced(compiled):
            assert overlap(ha, hb) == expected


@settings(deadline=None)
@given(_HASHES, _HASHES, _HASHES, st.integers(0, 200))
def test_the_merge_told_what_it_needs_is_exact_up_to_it(
    both: set[int], x: set[int], y: set[int], need: int
) -> None:
    # A count that reaches ``need`` is exact; one that cannot is reported below it, never at or
    # above (the verification reads nothing else of a pair that fails).
    a, b = both | x, both | (y - x)
    ha, hb = (np.array(sorted(s), dtype=np.uint64) for s in (a, b))
    shared = len(a & b)
    for got in (shared_count(ha, hb, need), shared_count(hb, ha, need)):
        assert got == shared if shared >= need else got < need
    for compiled in (True, False):
        with MERGE.forced(compiled):
            got = overlap(ha, hb, need)[0]
            assert got == shared if shared >= need else got < need


def test_the_merge_stops_early_on_a_pair_that_cannot_reach_what_it_needs() -> None:
    # Not a timing: the count it returns shows where it stopped. Two sets of 4,000 sharing
    # only their last 200 hashes cannot reach 3,000 once fewer than 3,000 hashes are left, long
    # before the merge meets what they share.
    a = np.arange(0, 8_000, 2, dtype=np.uint64)
    b = np.concatenate([np.arange(1, 7_600, 2, dtype=np.uint64), a[-200:]])
    assert shared_count(a, b) == shared_count(a, b, 200) == 200
    assert shared_count(a, b, 3_000) == 0  # stopped before the shared tail
    assert shared_count(a, b, 10_000) == 0  # beyond the smaller set: not merged at all


def test_the_compiled_merge_on_real_texts_and_their_edits(data_dir: Path) -> None:
    from tests.text.test_tokenize_backends import real_texts

    texts = [t for _, t in real_texts(data_dir)[:200]]
    for text, other in zip(texts, texts[1:] + texts[:1], strict=True):
        for edit in (text[: len(text) * 6 // 10], text + other[: len(other) // 3], other):
            ha, hb = shingles(text), shingles(edit)
            assert shared_count(ha, hb) == len(set(ha.tolist()) & set(hb.tolist()))


def polynomial_runs(words: npt.NDArray[np.uint32], n: int) -> npt.NDArray[np.uint64]:
    """The run hashes by their definition: ``n`` passes of multiply-and-add (the code before
    the doubling)."""
    points = words.astype(np.uint64)
    width = min(n, len(points))
    runs = len(points) - width + 1
    out = np.zeros(runs, dtype=np.uint64)
    with np.errstate(over="ignore"):
        for j in range(width):
            out = out * _BASE + points[j : j + runs]
    return out


def sorted_passages(words: npt.NDArray[np.uint32], n: int, m: int) -> npt.NDArray[np.uint64]:
    """Passages by their definition: the m smallest distinct mixed run hashes."""
    if not len(words):
        return np.zeros(0, np.uint64)
    return np.unique(mix64(polynomial_runs(words, n)))[:m]


# Few distinct code points, so that runs repeat (the passages' fallback to a full sort).
_POINTS = st.lists(st.sampled_from([0x6570, 0x636E, 0x5E93, 0x61, 0x10000]), max_size=300)


@settings(deadline=None)  # an example may be the one that loads the compiled hashes
@given(_POINTS, st.integers(1, 24))
def test_run_hashes_by_doubling_equal_the_polynomial(points: list[int], n: int) -> None:
    words = np.array(points, dtype=np.uint32)
    if len(words):
        assert np.array_equal(run_hashes(words, n), polynomial_runs(words, n))
    assert np.array_equal(passages_of(words, n, 8), sorted_passages(words, n, 8))
    assert np.array_equal(passages_of(words, n, 1), sorted_passages(words, n, 1))


def test_shingles_and_passages_of_real_texts_equal_their_definitions(data_dir: Path) -> None:
    from tests.text.test_tokenize_backends import real_texts

    texts = [t for _, t in real_texts(data_dir)[:400]]
    repeated = texts[0] * 5  # every run 5 times: the passages' full sort
    for text in [*texts, repeated]:
        words = word_points(text)
        assert np.array_equal(shingles_of(words), np.unique(polynomial_runs(words, 5)))
        assert np.array_equal(passages_of(words), sorted_passages(words, 12, 8))


@settings(deadline=None)  # the first example may load numba
@given(_POINTS, st.integers(1, 24), st.integers(1, 9))
def test_the_compiled_hashes_equal_the_numpy_ones(points: list[int], n: int, m: int) -> None:
    """``text.neardup.shingle_kernels`` (rolling hashes, the lowest passages kept as the runs go by)
    against the definitions, on runs that repeat and texts shorter than a run."""
    words = np.array(points, dtype=np.uint32)
    with HASHING.forced(True):
        shingled, lowest = shingles_of(words, n), passages_of(words, n, m)
    with HASHING.forced(False):
        assert np.array_equal(shingled, shingles_of(words, n))
        assert np.array_equal(lowest, passages_of(words, n, m))
    assert np.array_equal(lowest, sorted_passages(words, n, m))
    if len(words):
        assert np.array_equal(shingled, np.unique(polynomial_runs(words, n)))


def test_the_compiled_hashes_of_real_texts_equal_the_numpy_ones(data_dir: Path) -> None:
    from tests.text.test_tokenize_backends import real_texts

    texts = [t for _, t in real_texts(data_dir)[:400]]
    for text in [*texts, texts[0] * 5, "a", ""]:
        words = word_points(text)
        with HASHING.forced(True):
            got = shingles_of(words), shingles_of(words, 3), passages_of(words)
        with HASHING.forced(False):
            want = shingles_of(words), shingles_of(words, 3), passages_of(words)
        assert all(np.array_equal(g, w) for g, w in zip(got, want, strict=True))
