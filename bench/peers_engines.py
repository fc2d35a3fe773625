"""The peers of ``bench.peers``, each given what it needs and nothing of recengine's work.

* :class:`Bm25Mlt`: bm25s (BM25, Lucene's variant, its default ``k1 = 1.5, b = 0.75``; retrieval
  by its numba backend, its fastest, or its default numpy one) over the
  tokens of recengine's tokenizer (its cleaning and filter: the comparison is of the engines,
  not of the tokenizers), asked Lucene MoreLikeThis's way: the query of an article is its top
  20 terms by ``tf * idf`` with Lucene's classic ``idf = 1 + ln(N / (df + 1))``, leaving out
  terms in fewer than ``min_df`` articles (MoreLikeThis's ``minDocFreq``, 5: a term of this
  article alone finds nothing but it, and would take the place of one that finds others) and,
  as MoreLikeThis's ``minTermFreq`` does, terms seen fewer than ``min_tf`` times in it (1 by
  default: MoreLikeThis's 2 gave bm25s 0.02 less precision@10 on the labelled part, where
  abstracts repeat few terms; ``bench.peers`` prints both).
* :class:`MinHashPairs`: datasketch ``MinHashLSH`` as its documentation sets it up for
  near-duplicates: ``MinHash(num_perm=128)`` of each text's set of 5-character shingles
  (``update_batch``), inserted in a ``MinHashLSH(threshold=0.5, num_perm=128)``, every article
  queried; a pair is an article and one its query returns. Texts are cleaned the plain way a
  user of the library would (markup removed, whitespace collapsed, lower case), in the timed
  part.
"""

from __future__ import annotations

import html
import re
from collections.abc import Sequence
from typing import Any

import numpy as np

from bench.corpus import Doc
from recengine.pipeline.featurize import Featurizer

SHINGLE = 5
PERMUTATIONS = 128
THRESHOLD = 0.5
MLT_TERMS = 20
_MARKUP = re.compile(r"<[^>]*>")
_SPACE = re.compile(r"\s+")


class Bm25Mlt:
    """bm25s asked with an article's top terms (see the module docstring).

    Args:
        docs: the corpus; row ``i`` is ``docs[i]``.
        featurizer: whose cleaning and tokenizer give the tokens (its tokenizer is built here,
            in the build's time).
        backend: bm25s's scoring backend (``numba``: its fastest; ``numpy``).
    """

    def __init__(
        self,
        docs: Sequence[Doc],
        featurizer: Featurizer,
        backend: str = "numba",
        min_df: int = 5,
        min_tf: int = 1,
    ) -> None:
        import bm25s

        tokenizer = featurizer.tokenizer
        tokens = [tokenizer.tokens(featurizer.text(d.title, d.content)) for d in docs]
        self.retriever = bm25s.BM25(backend=backend)
        self.retriever.index(tokens, show_progress=False)
        # what MoreLikeThis reads of an article (Lucene's term vectors) and of the index (df)
        vocab: dict[str, int] = {}
        self.terms: list[np.ndarray[Any, Any]] = []
        self.tf: list[np.ndarray[Any, Any]] = []
        for words in tokens:
            ids, counts = np.unique(
                np.fromiter((vocab.setdefault(w, len(vocab)) for w in words), np.int64, len(words)),
                return_counts=True,
            )
            self.terms.append(ids)
            self.tf.append(counts)
        self.words = np.array(list(vocab), dtype=object)
        df = np.bincount(np.concatenate(self.terms), minlength=len(vocab)) if vocab else []
        self.idf = 1.0 + np.log(len(docs) / (np.asarray(df, np.float64) + 1.0))
        self.idf[np.asarray(df) < min_df] = 0.0
        self.min_tf = min_tf

    def query(self, row: int) -> list[str]:
        """The article's top :data:`MLT_TERMS` terms by ``tf * idf``."""
        terms, tf = self.terms[row], self.tf[row]
        score = tf * self.idf[terms]
        score[tf < self.min_tf] = 0.0
        top = np.argsort(-score, kind="stable")[:MLT_TERMS]
        return [str(w) for w in self.words[terms[top[score[top] > 0]]]]

    def related(self, row: int, k: int, backend: str | None = None) -> list[int]:
        """Rows of the ``k`` best matches of the article's query, itself left out (``k + 1``
        asked: the article is its own best match), retrieved by ``backend`` (default: the
        one it was built with; both read the same index)."""
        query = self.query(row)
        if not query:
            return []
        built = self.retriever.backend
        self.retriever.backend = backend or built
        try:
            found, _ = self.retriever.retrieve([query], k=k + 1, show_progress=False, n_threads=1)
        finally:
            self.retriever.backend = built
        return [int(j) for j in found[0] if j != row][:k]


def plain_text(doc: Doc) -> str:
    """Title and content, markup removed, whitespace collapsed, lower case."""
    text = html.unescape(_MARKUP.sub(" ", doc.title + "\n" + doc.content))
    return _SPACE.sub(" ", text).strip().lower()


def shingles(text: str) -> set[bytes]:
    """The text's distinct 5-character shingles (the whole text when shorter), UTF-8."""
    if len(text) <= SHINGLE:
        return {text.encode("utf-8")}
    return {text[i : i + SHINGLE].encode("utf-8") for i in range(len(text) - SHINGLE + 1)}


class MinHashPairs:
    """datasketch MinHashLSH over ``docs`` (see the module docstring); :attr:`pairs` holds
    the pairs found, as ``(row, row)`` with the smaller first."""

    def __init__(self, docs: Sequence[Doc]) -> None:
        from datasketch import MinHash, MinHashLSH

        self.lsh = MinHashLSH(threshold=THRESHOLD, num_perm=PERMUTATIONS)
        hashes = []
        with self.lsh.insertion_session() as session:
            for row, doc in enumerate(docs):
                m = MinHash(num_perm=PERMUTATIONS)
                m.update_batch(list(shingles(plain_text(doc))))
                session.insert(row, m)
                hashes.append(m)
        self.pairs = {
            (min(row, other), max(row, other))
            for row, m in enumerate(hashes)
            for other in self.lsh.query(m)
            if other != row
        }


def jaccard(a: Doc, b: Doc) -> float:
    """Exact Jaccard index of the two texts' 5-character shingle sets (as datasketch sees
    them)."""
    sa, sb = shingles(plain_text(a)), shingles(plain_text(b))
    return len(sa & sb) / max(1, len(sa | sb))
