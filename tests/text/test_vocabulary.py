"""The two formulations of counting after ``cut`` (``text.words.vocabulary``): Python's ``Counter``
and the compiled pass over the batch's hashed words give the same term counts, on real texts,
through words added to the tokenizer later, case merges and words the table has not met."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from recengine.config import TokenizerSettings
from recengine.text.words.tokenize import Tokenizer, build_tokenizer
from recengine.text.words.vocabulary import COUNTING, Counted, Vocabulary
from tests.text.test_tokenize_backends import real_texts


def as_dicts(c: Counted) -> list[dict[str, int]]:
    """Each text's counts as term -> count (the order of entries carries no meaning)."""
    out = []
    for row in range(len(c.indptr) - 1):
        lo, hi = int(c.indptr[row]), int(c.indptr[row + 1])
        idx = c.index[lo:hi]
        assert len(set(idx.tolist())) == hi - lo  # each term once per text
        assert (c.counts[lo:hi] > 0).all()
        out.append({c.terms[i]: int(n) for i, n in zip(idx, c.counts[lo:hi], strict=True)})
    assert len(set(c.terms)) == len(c.terms)
    return out


def counted_both_ways(tokenizer: Tokenizer, texts: list[str]) -> list[list[dict[str, int]]]:
    """The batch counted by the compiled path, then by the Python path, then compiled again
    (its table now warm)."""
    out = []
    for compiled in (True, False, True):
        with COUNTING.forced(compiled):
            out.append(as_dicts(tokenizer.count_many(texts)))
    return out


@pytest.mark.slow
def test_both_paths_count_every_real_text_alike(data_dir: Path) -> None:
    tokenizer = build_tokenizer(TokenizerSettings())
    texts = [t for _, t in real_texts(data_dir)]
    cold, python, warm = counted_both_ways(tokenizer, texts)
    assert cold == python == warm
    assert sum(len(d) for d in python) > 100_000  # real counts, not empty ones
    fresh = build_tokenizer(TokenizerSettings())  # the Python path first, then compiled
    with COUNTING.forced(False):
        first = as_dicts(fresh.count_many(texts[:50]))
    with COUNTING.forced(True):
        assert as_dicts(fresh.count_many(texts[:50])) == first == python[:50]


def test_a_word_added_later_is_counted_by_both_paths() -> None:
    tokenizer = build_tokenizer(TokenizerSettings(stopwords=""))
    texts = ["区块链技术和区块链应用", "Python 与 python 都是 PYTHON", "", "。，！"]
    before = counted_both_ways(tokenizer, texts)
    assert before[0] == before[1] == before[2]
    assert before[0][1] == {"python": 3}  # three raw words, one term
    assert before[0][2] == before[0][3] == {}
    tokenizer.add_word("区块链技术", 10, "n")
    after = counted_both_ways(tokenizer, texts)
    assert after[0] == after[1] == after[2]
    assert "区块链技术" not in before[0][0] and after[0][0]["区块链技术"] == 1


def test_a_word_holding_a_nul_falls_back_to_python() -> None:
    vocabulary = Vocabulary(lambda w: w.strip("\x00").lower())
    words = [["ab\x00cd", "AB\x00CD"], ["x"]]
    with COUNTING.forced(True):
        counted = as_dicts(vocabulary.count(words))
    assert counted == [{"ab\x00cd": 2}, {"x": 1}]


@settings(max_examples=60, deadline=None)  # the first example may load numba
@given(st.lists(st.lists(st.sampled_from(["a", "A", "b", "c", "d", "停", "", " "]), max_size=12)))
def test_both_paths_agree_on_any_words(texts: list[list[str]]) -> None:
    dropped = {"停", "", " "}
    results = []
    for compiled in (True, False):
        vocabulary = Vocabulary(lambda w: "" if w in dropped else w.lower())
        with COUNTING.forced(compiled):
            results.append(as_dicts(vocabulary.count(texts)))
    expected = [
        {
            t: sum(1 for w in words if w not in dropped and w.lower() == t)
            for t in {w.lower() for w in words if w not in dropped}
        }
        for words in texts
    ]
    assert results[0] == results[1] == expected


def test_the_table_grows_past_its_first_size() -> None:
    vocabulary = Vocabulary(lambda w: w)
    words = [[f"w{i}" for i in range(j, j + 50_000)] for j in (0, 30_000)]
    with COUNTING.forced(True):
        counted = vocabulary.count(words)
        again = vocabulary.count(words)
    assert as_dicts(counted) == as_dicts(again)
    assert [len(d) for d in as_dicts(counted)] == [50_000, 50_000]
    assert np.array_equal(counted.counts, np.ones(100_000, np.int64))
