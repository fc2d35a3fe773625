"""Shingle hashes against a plain string-set reference: same sets, same resemblance."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from recengine.features.merge_kernel import shared_count
from recengine.features.neardup import overlap, resemblance, use_compiled_overlap
from recengine.text.shingles import shingles, word_points


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
    from tests.test_tokenize_backends import real_texts

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
    use_compiled_overlap()
    assert overlap(ha, hb) == (len(a & b), min(len(a), len(b)), max(len(a), len(b)))


def test_the_compiled_merge_on_real_texts_and_their_edits(data_dir: Path) -> None:
    from tests.test_tokenize_backends import real_texts

    texts = [t for _, t in real_texts(data_dir)[:200]]
    for text, other in zip(texts, texts[1:] + texts[:1], strict=True):
        for edit in (text[: len(text) * 6 // 10], text + other[: len(other) // 3], other):
            ha, hb = shingles(text), shingles(edit)
            assert shared_count(ha, hb) == len(set(ha.tolist()) & set(hb.tolist()))
