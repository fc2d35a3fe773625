"""The per-article computation shared by ingest and reindex: text -> counts -> vector + fingerprint.

Split in two steps because they need different things: :meth:`Featurizer.analyze` needs only
the tokenizer (and dominates the cost), :meth:`Featurizer.features` needs the IDF model. Reindex
runs the first step over the whole corpus before the model exists.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from recengine.config import Settings
from recengine.features.fingerprint import count_fingerprints, fingerprints
from recengine.features.hashing import TermHasher
from recengine.features.tfidf import IdfModel, TfidfVectorizer
from recengine.text.boilerplate import strip_boilerplate
from recengine.text.clean import clean
from recengine.text.tokenize import Tokenizer, build_tokenizer


@dataclass(frozen=True)
class TextStats:
    """What the text of one article contributes: its hash and its term counts."""

    text_hash: str
    counts: dict[str, int]
    n_tokens: int


@dataclass(frozen=True)
class FeatureRow:
    fingerprint: int
    vector: bytes
    n_tokens: int


def text_of(title: str, content: str, strip: bool = True) -> str:
    """The text that is tokenized: the clean title, a line break, the clean content.

    Args:
        strip: remove repost boilerplate lines at the head and tail of the content
            (``features.strip_boilerplate``; see :mod:`recengine.text.boilerplate`).
    """
    body = clean(content)
    return clean(title) + "\n" + (strip_boilerplate(body) if strip else body)


def text_hash(text: str) -> str:
    """sha256 of a cleaned text: equal hashes, equal features (no need to tokenize again)."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


class Featurizer:
    """Owns the tokenizer and term-hash cache of one process.

    Args:
        settings: tokenizer and feature settings.
        tokenizer: an already built tokenizer to share (built from settings when omitted).
    """

    def __init__(self, settings: Settings, tokenizer: Tokenizer | None = None) -> None:
        self.settings = settings
        self.tokenizer = tokenizer or build_tokenizer(settings.tokenizer)
        self.hasher = TermHasher()

    def text(self, title: str, content: str) -> str:
        """:func:`text_of` under these settings."""
        return text_of(title, content, self.settings.features.strip_boilerplate)

    def analyze(self, title: str, content: str) -> TextStats:
        return self.count(self.text(title, content))

    def count(self, text: str) -> TextStats:
        """Term counts of an already cleaned text (see :func:`text_of`)."""
        counts = self.tokenizer.term_counts(text)
        return TextStats(text_hash=text_hash(text), counts=counts, n_tokens=sum(counts.values()))

    def features(self, stats: Sequence[TextStats], model: IdfModel) -> list[FeatureRow]:
        """Stored vector and fingerprint of each text.

        The fingerprint always weighs terms by *raw-count* TF-IDF (all terms, or the top
        ``simhash_top_n``: the near-duplicate method's features), whatever
        ``features.sublinear_tf`` says for the stored vectors: the fingerprint and the
        related-articles ranking are tuned separately (``BENCHMARKS.md``).
        """
        f = self.settings.features
        vectorizer = TfidfVectorizer(
            model, f.vector_max_terms, sublinear_tf=f.sublinear_tf, hasher=self.hasher
        )
        vectors = [vectorizer.transform(s.counts) for s in stats]
        if not f.simhash_top_n:
            prints = count_fingerprints([s.counts for s in stats], model, self.hasher)
        elif f.sublinear_tf:
            raw = TfidfVectorizer(model, f.simhash_top_n, hasher=self.hasher)
            prints = fingerprints([raw.transform(s.counts) for s in stats], f.simhash_top_n)
        else:
            prints = fingerprints(vectors, f.simhash_top_n)
        return [
            FeatureRow(fingerprint=p, vector=v.to_bytes(), n_tokens=s.n_tokens)
            for p, v, s in zip(prints.tolist(), vectors, stats, strict=True)
        ]


def model_params(settings: Settings) -> dict[str, Any]:
    """The settings a model's vectors depend on; a mismatch means vectors are not comparable.

    The tokenizer backend is not among them: both backends give the same tokens.
    """
    t, f = settings.tokenizer, settings.features
    return {
        "tokenizer": {
            "hmm": t.hmm,
            "stopwords": t.stopwords,
            "user_dict": t.user_dict,
            "drop_pos": list(t.drop_pos),
            "min_cjk_chars": t.min_cjk_chars,
        },
        "features": {
            "simhash_top_n": f.simhash_top_n,
            "fingerprint": "tfidf-all-terms" if f.simhash_top_n == 0 else "tfidf-top-n",
            "strip_boilerplate": f.strip_boilerplate,
            "vector_max_terms": f.vector_max_terms,
            "sublinear_tf": f.sublinear_tf,
        },
    }
