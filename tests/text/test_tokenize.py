from __future__ import annotations

import re
from collections import Counter
from importlib import resources
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from recengine.config import TokenizerSettings
from recengine.errors import ConfigError
from recengine.text.words.tokenize import Tokenizer, build_tokenizer, cut_words, load_word_list


def test_chinese_words_with_function_words_removed(tokenizer: Tokenizer) -> None:
    # 我们 (pronoun r), 在 (preposition p), 和 (conjunction c), 的 (particle uj), 非常 (adverb d),
    # 2024年 (numeral/time), punctuation (x) are all dropped.
    tokens = tokenizer.tokens("我们在北京学习机器学习和深度学习的方法，非常有用。2024年")
    assert tokens == ["北京", "学习", "机器", "学习", "深度", "学习", "方法", "有用"]


def test_english_lower_cased_and_stopwords_removed(tokenizer: Tokenizer) -> None:
    # function words go ("the", "and"); a verb such as "uses" is not a stopword
    assert tokenizer.tokens("The Quick Brown Fox uses Python and NumPy") == [
        "quick",
        "brown",
        "fox",
        "uses",
        "python",
        "numpy",
    ]


def test_english_topic_words_are_not_stopwords(tokenizer: Tokenizer) -> None:
    # the repro of issue 15: the old list removed every word of this sentence
    text = "The computer research group said the information system problem affects users at home."
    assert tokenizer.tokens(text) == [
        "computer", "research", "group", "said", "information", "system", "problem", "affects",
        "users", "home",
    ]  # fmt: skip
    words = load_word_list("builtin")
    topic = {"computer", "research", "information", "users", "problem", "world", "million"}
    assert not topic & words
    assert not {"won", "journal", "novel", "sleep", "bill", "fire", "interest"} & words
    assert {"the", "of", "which", "would", "however", "s", "t", "don"} <= words


def test_english_generic_words_are_stopwords_as_in_a_published_list(
    tokenizer: Tokenizer,
) -> None:
    """Issue 49: the Glasgow IR group's list (scikit-learn's ENGLISH_STOP_WORDS, BSD, bundled
    with its notice) on top of the function words: what explanations and the report's top
    terms show of an English article are its topic words, not "first", "made" or "several"."""
    text = (
        "The first four central banks made several rate cuts last year; the minister put the "
        "whole budget bill on top of everything else to show the interest rates fell."
    )
    assert tokenizer.tokens(text) == [
        "central", "banks", "rate", "cuts", "year", "minister", "budget", "bill", "interest",
        "rates", "fell",
    ]  # fmt: skip
    words = load_word_list("builtin")
    assert {"first", "four", "made", "several", "whole", "everything", "show", "thru"} <= words
    notice = (resources.files("recengine.resources") / "stopwords.txt").read_text("utf-8")
    assert "The scikit-learn developers" in notice and "BSD 3-Clause License" in notice


@pytest.mark.parametrize("backend", ["rjieba", "jieba"])
@pytest.mark.parametrize("hmm", [False, True])
def test_accented_letters_do_not_split_words(backend: str, hmm: bool) -> None:
    tok = build_tokenizer(TokenizerSettings(backend=backend, hmm=hmm))
    text = "Zürich résumé, Beyoncé's naïve café; São Paulo Москва Αθήνα 北京Zürich大学 don't"
    assert tok.tokens(text) == [
        "zürich", "résumé", "beyoncé", "naïve", "café", "são", "paulo", "москва", "αθήνα",
        "北京", "zürich", "大学",
    ]  # fmt: skip


def test_cut_words_keeps_the_rest_to_the_backend() -> None:
    seen: list[str] = []

    def cut(text: str) -> list[str]:
        seen.append(text)
        return text.split()

    assert cut_words(cut, "a b") == ["a", "b"] and seen == ["a b"]
    assert cut_words(cut, "x Zürich y über") == ["x", "Zürich", "y", "über"]
    assert seen[1:] == ["x ", " y "]
    assert cut_words(cut, "中文") == ["中文"]


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet="ab9 éüЖΩ北京-_'.\n", max_size=40))
def test_cut_words_cuts_out_every_foreign_word(text: str) -> None:
    """The words kept whole are the maximal runs of letters and digits that hold an accented,
    Greek or Cyrillic letter (the scan starts at the first one; what is before it, and between
    the words, goes to the backend as it is)."""
    expected: list[str] = []
    start = 0
    foreign = "À-ÖØ-öø-ɏͰ-ϿЀ-ӿḀ-ỿ"
    for m in re.finditer(rf"[A-Za-z0-9{foreign}]*[{foreign}][A-Za-z0-9{foreign}]*", text):
        expected += [f"<{text[start : m.start()]}>"] if m.start() > start else []
        expected.append(m.group())
        start = m.end()
    expected += [f"<{text[start:]}>"] if start < len(text) else []
    expected = expected if start else [f"<{text}>"]  # no such word: the backend cuts it all
    assert cut_words(lambda part: [f"<{part}>"], text) == expected


def test_mixed_text_has_no_empty_or_punctuation_tokens(tokenizer: Tokenizer) -> None:
    tokens = tokenizer.tokens("使用Python3开发Web应用!!! -- C++/Java, 版本 v1.2 (beta) 🚀")
    assert "python3" in tokens and "web" in tokens and "java" in tokens
    assert all(t and any(ch.isalnum() for ch in t) for t in tokens)
    assert all(t == t.lower() for t in tokens)
    assert "🚀" not in tokens


@pytest.mark.parametrize("text", ["", "   ", "，。！？", "😀😀", "12 34 5.6"])
def test_nothing_to_keep(tokenizer: Tokenizer, text: str) -> None:
    assert tokenizer.tokens(text) == []
    assert tokenizer.term_counts(text) == {}


@settings(max_examples=200, deadline=None)
@given(
    st.text(
        alphabet=st.sampled_from(list("机器学习深度网络数据库Python java 的了和, 。\n123")),
        max_size=80,
    )
)
def test_term_counts_equal_counted_tokens(tokenizer: Tokenizer, text: str) -> None:
    assert tokenizer.term_counts(text) == dict(Counter(tokenizer.tokens(text)))


def test_user_dictionary_joins_words(tmp_path: Path) -> None:
    plain = build_tokenizer(TokenizerSettings(stopwords=""))
    assert "区块链即服务" not in plain.tokens("区块链即服务正在流行")
    user_dict = tmp_path / "user.txt"
    user_dict.write_text("区块链即服务 100 nz\n", encoding="utf-8")
    for backend in ("rjieba", "jieba"):
        tok = build_tokenizer(
            TokenizerSettings(backend=backend, stopwords="", user_dict=str(user_dict))
        )
        assert tok.tokens("区块链即服务正在流行")[0] == "区块链即服务"


def test_bad_user_dictionary_and_stopword_file(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="user_dict"):
        build_tokenizer(TokenizerSettings(user_dict=str(tmp_path / "missing.txt")))
    bad = tmp_path / "bad.txt"
    bad.write_text("词 abc def ghi\n", encoding="utf-8")
    with pytest.raises(ConfigError, match=r"bad\.txt:1"):
        build_tokenizer(TokenizerSettings(user_dict=str(bad)))
    with pytest.raises(ConfigError, match="stopwords"):
        load_word_list(str(tmp_path / "missing.txt"))


def test_builtin_stopwords_cover_both_languages() -> None:
    words = load_word_list("builtin")
    assert {"the", "and", "我们", "因此"} <= words
    assert not any(w.startswith("#") for w in words)


def test_custom_stopwords_file(tmp_path: Path) -> None:
    path = tmp_path / "stop.txt"
    path.write_text("学习\nPython\n", encoding="utf-8")
    tok = build_tokenizer(TokenizerSettings(stopwords=str(path)))
    assert tok.tokens("学习Python编程") == ["编程"]


def test_hmm_mode_uses_the_tagger() -> None:
    tok = build_tokenizer(TokenizerSettings(backend="jieba", hmm=True, stopwords=""))
    assert tok.tokens("我们在北京学习") == ["北京", "学习"]
