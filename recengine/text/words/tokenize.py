"""Words out of clean text: jieba segmentation, part-of-speech filter, stopwords.

Two interchangeable backends segment the text:

* ``jieba``: the reference implementation (pure Python, about 1 MB/s on one core);
* ``rjieba``: jieba-rs, the Rust port with the same dictionary, over 20x faster.

With the HMM step off (``hmm = false``, the default) both cut the same words. The part-of-speech
filter then needs no tagger: with HMM off, jieba's ``posseg`` tags a word by looking it up in the
dictionary (``word_tag_tab``), tags runs of ASCII letters and digits ``eng`` and everything else
``x``, whatever the context. :class:`Tokenizer` does that same lookup on the words ``cut`` returns,
which is 3.5x cheaper than asking rjieba to tag, and caches the verdict per distinct word.
``tests/text/test_tokenize_backends.py`` checks that the result equals jieba ``posseg`` + the filter
on the real texts of ``tests/data`` (a sample holding every kind of text and character they
have: its ``sampled_texts``), for both backends. With HMM on, words come from the
backend's own tagger (slower; the two backends then differ on unknown words).

A :class:`Tokenizer` is built once by :func:`build_tokenizer` (loading a dictionary takes about a
second) and passed to whoever needs it; nothing is loaded at import time.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from importlib import resources
from pathlib import Path
from typing import Protocol, TypeVar

from recengine.config import TokenizerSettings
from recengine.errors import ConfigError
from recengine.text.words.dictionary import dictionary_tags, jieba_dictionary_path, parse_tags
from recengine.text.words.vocabulary import Counted, Vocabulary

_WORDLIKE = re.compile(r"[^\W_]")  # a letter, a digit or an ideograph somewhere in the word
_NUMERIC = re.compile(r"^[0-9]+(?:[.,][0-9]+)*%?$")
_CJK = re.compile(r"^[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]+$")
_ENG = re.compile(r"^[a-zA-Z0-9]+$")
# Letters jieba's cut does not keep inside a word (its word pattern is ASCII): accented Latin
# (Latin-1 letters without x and division sign, Latin Extended-A/B and Additional), Greek and
# Cyrillic. Words holding one of them are taken out whole before the backend sees the text, so
# Zürich, résumé, Beyoncé and naïve stay words (jieba would cut Z + ü + rich, r + é + sum + é).
_LETTER = "A-Za-z0-9\u00c0-\u00d6\u00d8-\u00f6\u00f8-\u024f\u0370-\u03ff\u0400-\u04ff\u1e00-\u1eff"
_NON_ASCII_LETTER = "\u00c0-\u00d6\u00d8-\u00f6\u00f8-\u024f\u0370-\u03ff\u0400-\u04ff\u1e00-\u1eff"
_FOREIGN_WORD = re.compile(rf"[{_LETTER}]*[{_NON_ASCII_LETTER}][{_LETTER}]*")
# One of those letters, and one letter of any kind: the scan for the first is ~9x cheaper than
# ``_FOREIGN_WORD``'s, which tries its leading ``[...]*`` at every position of the text.
_NON_ASCII = re.compile(rf"[{_NON_ASCII_LETTER}]")
_ONE_LETTER = re.compile(rf"[{_LETTER}]")
_FOREIGN_ENG = re.compile(rf"^[{_LETTER}]+$")
T = TypeVar("T")


class Backend(Protocol):
    """Segments text: ``cut`` into words, ``tag`` into ``(word, part-of-speech)`` pairs."""

    name: str

    def cut(self, text: str) -> list[str]: ...

    def tag(self, text: str) -> list[tuple[str, str]]: ...

    def add_word(self, word: str, freq: int | None, tag: str | None) -> None: ...


class JiebaBackend:
    """The reference jieba, with its own dictionary instance (not the module-level default)."""

    name = "jieba"

    def __init__(self, hmm: bool) -> None:
        import logging

        import jieba
        import jieba.posseg

        jieba.setLogLevel(logging.WARNING)
        self._hmm = hmm
        self._jieba = jieba.Tokenizer()
        self._jieba.initialize()
        self._posseg = jieba.posseg.POSTokenizer(self._jieba)

    def cut(self, text: str) -> list[str]:
        words: list[str] = self._jieba.lcut(text, HMM=self._hmm)
        return words

    def tag(self, text: str) -> list[tuple[str, str]]:
        return [(pair.word, pair.flag) for pair in self._posseg.cut(text, HMM=self._hmm)]

    def add_word(self, word: str, freq: int | None, tag: str | None) -> None:
        self._jieba.add_word(word, freq, tag)
        if tag:
            self._posseg.word_tag_tab[word] = tag


class RjiebaBackend:
    """jieba-rs through the ``rjieba`` binding."""

    name = "rjieba"

    def __init__(self, hmm: bool) -> None:
        import rjieba

        self._hmm = hmm
        self._jieba = rjieba.Jieba()

    def cut(self, text: str) -> list[str]:
        return self._jieba.cut(text, self._hmm)

    def tag(self, text: str) -> list[tuple[str, str]]:
        return self._jieba.tag(text, self._hmm)

    def add_word(self, word: str, freq: int | None, tag: str | None) -> None:
        self._jieba.add_word(word, freq, tag)


class Tokenizer:
    """Clean text -> filtered, lower-cased words.

    Args:
        backend: segments the text.
        tags: dictionary word -> part-of-speech tag (jieba's ``dict.txt`` plus the user
            dictionary); used when the backend runs without HMM.
        stopwords: lower-cased words never emitted.
        drop_pos: part-of-speech families dropped: a tag is dropped when it starts with one of
            these (``u`` covers ``uj``, ``ul``, ``uz``...).
        min_cjk_chars: shorter all-CJK words are dropped.
        hmm: whether the backend runs jieba's HMM step (then tags come from its tagger).

    The per-token work after ``cut`` is one dictionary look-up per word, made in C: every raw
    word the process has seen maps to the id of the term it becomes (``-1`` when the filter
    drops it), and the filter itself runs once per distinct raw word per process
    (:meth:`count_many`). Words added to the backend later (a user dictionary, discovered words)
    need nothing more: a new raw word is filtered the first time it is seen; give its tag with
    :meth:`add_word` so the filter sees it too.
    """

    def __init__(
        self,
        backend: Backend,
        tags: Mapping[str, str],
        stopwords: frozenset[str],
        drop_pos: tuple[str, ...],
        min_cjk_chars: int = 2,
        hmm: bool = False,
    ) -> None:
        self.backend = backend
        self.stopwords = stopwords
        self.drop_pos = tuple(drop_pos)
        self.min_cjk_chars = min_cjk_chars
        self.hmm = hmm
        self._tags = tags
        self._extra_tags: dict[str, str] = {}
        self._added: set[str] = set()
        self._vocab = Vocabulary(self._verdict)

    def add_word(self, word: str, freq: int | None = None, tag: str | None = None) -> None:
        """Add a word to the backend's dictionary (and its tag to the filter's table)."""
        self.backend.add_word(word, freq, tag)
        self._added.add(word)
        if tag:
            self._extra_tags[word] = tag
        self._vocab.reset()  # verdicts of words the new one may now be cut from or into

    def knows(self, word: str) -> bool:
        """Whether ``word`` is a word of the dictionary or was added (a user dictionary's)."""
        return word in self._tags or word in self._added

    def keep(self, word: str, tag: str) -> str | None:
        """The normalised word if it passes the filter, else ``None``."""
        if tag.startswith(self.drop_pos):
            return None
        word = word.strip().lower()
        if not word or word in self.stopwords or _NUMERIC.match(word):
            return None
        if not _WORDLIKE.search(word):
            return None
        if len(word) < self.min_cjk_chars and _CJK.match(word):
            return None
        return word

    def cut(self, text: str) -> list[str]:
        """The backend's words, with words of accented, Greek or Cyrillic letters kept whole."""
        return cut_words(self.backend.cut, text)

    def tag_of(self, word: str) -> str:
        """The tag jieba ``posseg`` gives ``word`` without HMM: the dictionary's, else ``eng``
        for ASCII letters and digits (and for a word :func:`cut_words` kept whole), else
        ``x``."""
        tag = self._extra_tags.get(word) or self._tags.get(word)
        tag = tag or ("eng" if _ENG.match(word) else "x")
        return "eng" if tag == "x" and _FOREIGN_ENG.match(word) else tag

    def _verdict(self, word: str) -> str:
        """``keep`` of a raw word (``cut`` output; or, with HMM, an already kept term)."""
        if self.hmm:
            return word
        return self.keep(word, self.tag_of(word)) or ""

    def _words(self, text: str) -> list[str]:
        """What the vocabulary maps: raw words without HMM, kept terms with it."""
        if self.hmm:
            return [k for w, t in tag_words(self.backend.tag, text) if (k := self.keep(w, t))]
        return self.cut(text)

    def tokens(self, text: str) -> list[str]:
        """The words of one clean text, in order, duplicates kept.

        Example:
            >>> tok = build_tokenizer(TokenizerSettings(stopwords=""))
            >>> tok.tokens("我们在北京学习Python和机器学习, 2024年")
            ['北京', '学习', 'python', '机器', '学习']
        """
        if self.hmm:
            return self._words(text)
        self._vocab.bound()
        terms, ids = self._vocab.terms, self._vocab.ids
        return [terms[i] for i in map(ids.__getitem__, self.cut(text)) if i >= 0]

    def term_counts(self, text: str) -> dict[str, int]:
        """Term frequencies of one clean text: ``Counter(tokens(text))``."""
        c = self.count_many([text])
        terms = c.terms
        return {terms[i]: n for i, n in zip(c.index.tolist(), c.counts.tolist(), strict=True)}

    def count_many(self, texts: Sequence[str]) -> Counted:
        """Term counts of many clean texts at once (see :class:`Counted`): after ``cut``, the
        words of every text are counted over the whole batch (``text.words.vocabulary``)."""
        self._vocab.bound()
        return self._vocab.count([self._words(t) for t in texts])


def cut_words(cut: Callable[[str], list[str]], text: str) -> list[str]:
    """``cut(text)``, except that every word holding a letter jieba would split on (see
    ``_FOREIGN_WORD``) is one word, cut out before the rest is given to ``cut``.

    Example:
        >>> cut_words(list, "Zürich大学")
        ['Zürich', '大', '学']
    """
    return _around_foreign(cut, text, lambda word: word)


def tag_words(tag: Callable[[str], list[tuple[str, str]]], text: str) -> list[tuple[str, str]]:
    """:func:`cut_words` for a tagger: the words kept whole are tagged ``eng``."""
    return _around_foreign(tag, text, lambda word: (word, "eng"))


def _around_foreign(
    split: Callable[[str], list[T]], text: str, whole: Callable[[str], T]
) -> list[T]:
    first = None if text.isascii() else _NON_ASCII.search(text)
    if first is None:  # most texts, Chinese ones included: no word to keep whole
        return split(text)
    begin = first.start()  # the first match starts where the run of letters holding it does
    while begin and _ONE_LETTER.match(text, begin - 1):
        begin -= 1
    out: list[T] = []
    start = 0
    for match in _FOREIGN_WORD.finditer(text, begin):
        if match.start() > start:
            out += split(text[start : match.start()])
        out.append(whole(match.group()))
        start = match.end()
    if start < len(text):
        out += split(text[start:])
    return out


def load_word_list(spec: str) -> frozenset[str]:
    """Stopwords from ``"builtin"``, ``""`` (none) or a path to a one-word-per-line file."""
    if not spec:
        return frozenset()
    if spec == "builtin":
        text = resources.files("recengine.resources").joinpath("stopwords.txt").read_text("utf-8")
    else:
        try:
            text = Path(spec).read_text("utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise ConfigError(f"tokenizer.stopwords: cannot read {spec}: {exc}") from exc
    words = (line.strip().lower() for line in text.splitlines())
    return frozenset(w for w in words if w and not w.startswith("#"))


def jieba_dictionary_tags() -> dict[str, str]:
    """Word -> part-of-speech tag from jieba's own ``dict.txt``, parsed now (no cache)."""
    return parse_tags(jieba_dictionary_path().read_text("utf-8"))


def _read_user_dict(path: str) -> list[tuple[str, int | None, str | None]]:
    """Lines of ``word [freq] [tag]`` (jieba's user dictionary format)."""
    try:
        lines = Path(path).read_text("utf-8").splitlines()
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"tokenizer.user_dict: cannot read {path}: {exc}") from exc
    entries: list[tuple[str, int | None, str | None]] = []
    for number, line in enumerate(lines, 1):
        parts = line.strip().split()
        if not parts:
            continue
        if len(parts) > 3 or (len(parts) == 3 and not parts[1].isdigit()):
            raise ConfigError(f"tokenizer.user_dict: {path}:{number}: expected 'word [freq] [tag]'")
        rest = parts[1:]
        freq = int(rest[0]) if rest and rest[0].isdigit() else None
        tag = rest[-1] if rest and not rest[-1].isdigit() else None
        entries.append((parts[0], freq, tag))
    return entries


_BACKENDS: dict[str, type[JiebaBackend] | type[RjiebaBackend]] = {
    "jieba": JiebaBackend,
    "rjieba": RjiebaBackend,
}


NEW_WORD_TAG = "nz"  # "other proper noun": what a discovered word is tagged (kept by the filter)


def build_tokenizer(settings: TokenizerSettings, words: Sequence[str] = ()) -> Tokenizer:
    """Create the configured tokenizer (loads a dictionary: do it once per process).

    The part-of-speech table comes from the on-disk cache (:mod:`recengine.text.words.dictionary`);
    ``words`` (what a reindex discovered in the corpus, ``pipeline.reindex.new_words``: the IDF
    model's :attr:`~recengine.features.tfidf.IdfModel.words`) and then the user dictionary's words
    go to both the backend and the table through :meth:`Tokenizer.add_word`, in that order, so the
    user dictionary has the last word on a frequency or a tag. Both backends are given the
    words in the same order with the frequency jieba suggests, and cut alike with them
    (``tests/text/test_tokenize_backends.py``).
    """
    tokenizer = Tokenizer(
        backend=_BACKENDS[settings.backend](hmm=settings.hmm),
        tags=dictionary_tags(settings.cache_dir),
        stopwords=load_word_list(settings.stopwords),
        drop_pos=tuple(settings.drop_pos),
        min_cjk_chars=settings.min_cjk_chars,
        hmm=settings.hmm,
    )
    for word in words:
        tokenizer.add_word(word, None, NEW_WORD_TAG)
    if settings.user_dict:
        for word, freq, tag in _read_user_dict(settings.user_dict):
            tokenizer.add_word(word, freq, tag)
    return tokenizer
