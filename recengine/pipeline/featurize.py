"""The per-article computation shared by ingest and reindex: text -> counts -> vector + fingerprint.

Split in two steps because they need different things: :meth:`Featurizer.analyze_many` needs
only the tokenizer (and dominates the cost), :meth:`Featurizer.features_of` needs the IDF model.
Reindex runs the first step over the whole corpus before the model exists.

Both steps work on batches (:class:`Analyzed`: the texts' hashes and one
:class:`~recengine.features.counts.TermCounts` matrix), so that the work after the tokenizer's
``cut`` is numpy over the batch rather than Python per token or per term. :class:`TextStats`
(one article's counts as a dictionary) remains for callers that handle articles one by one.
"""

from __future__ import annotations

import hashlib
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from recengine.config import DenseSettings, Settings, TokenizerSettings
from recengine.features.counts import TermCounts
from recengine.features.encoder import DIMS, identity, lead_text, load_encoder
from recengine.features.encoder import to_bytes as encoder_bytes
from recengine.features.fingerprint import batch_fingerprints, fingerprints
from recengine.features.hashing import TermHasher
from recengine.features.tfidf import IdfModel, TfidfVectorizer
from recengine.text.neardup.compare import (
    Compared,
    WordPoints,
    article_compared,
    clean_parts,
    points_of,
)
from recengine.text.neardup.passages import Passages
from recengine.text.words.tokenize import Tokenizer, build_tokenizer

Words = tuple[str, ...]  # discovered words a tokenizer adds to its dictionary, sorted
# Per text, the (text hash, encoder vector) stored for it under a version of the same encoder
# settings, or None: the vector is reused when the text's hash is that one (the same clean text,
# the same lead: the same vector), see ``Featurizer.analyze_texts``.
Known = Sequence[tuple[str, bytes] | None]


@dataclass(frozen=True)
class TextStats:
    """What the text of one article contributes: its hash and its term counts."""

    text_hash: str
    counts: dict[str, int]
    n_tokens: int
    embedding: bytes | None = None  # the encoder's vector (``features.encoder.to_bytes``)


@dataclass(frozen=True, eq=False)
class Analyzed:
    """What the texts of a batch contribute: their hashes and their term counts, in order,
    and with the sentence encoder on (``dense.encoder``), their vectors (``embeddings``: one
    ``features.encoder.to_bytes`` row per text; None when off)."""

    text_hashes: list[str]
    counts: TermCounts
    embeddings: list[bytes] | None = None

    def __post_init__(self) -> None:
        if len(self.text_hashes) != len(self.counts):
            raise ValueError(f"{len(self.text_hashes)} hashes for {len(self.counts)} texts")
        if self.embeddings is not None and len(self.embeddings) != len(self.counts):
            raise ValueError(f"{len(self.embeddings)} embeddings for {len(self.counts)} texts")

    def __len__(self) -> int:
        return len(self.text_hashes)

    def take(self, rows: Sequence[int]) -> Analyzed:
        embeddings = None if self.embeddings is None else [self.embeddings[i] for i in rows]
        return Analyzed([self.text_hashes[i] for i in rows], self.counts.take(rows), embeddings)

    def stats(self) -> list[TextStats]:
        """One :class:`TextStats` per text (a dictionary each: for callers that need one)."""
        n_tokens = self.counts.n_tokens().tolist()
        embeddings: list[bytes | None] = [None] * len(self)
        if self.embeddings is not None:
            embeddings = list(self.embeddings)
        return [
            TextStats(h, self.counts.as_dict(i), n, e)
            for i, (h, n, e) in enumerate(zip(self.text_hashes, n_tokens, embeddings, strict=True))
        ]

    @classmethod
    def concat(cls, parts: Sequence[Analyzed]) -> Analyzed:
        embedded = [p.embeddings for p in parts]
        return cls(
            [h for p in parts for h in p.text_hashes],
            TermCounts.concat([p.counts for p in parts]),
            None if any(e is None for e in embedded) else [x for e in embedded for x in e or ()],
        )


@dataclass(frozen=True, eq=False)
class TextAnalysis:
    """What an ingest computes of a batch's texts outside the write, each text cleaned once
    (:meth:`Featurizer.analyze_texts`), in order: their hashes and term counts, their passage
    hashes (what the passage index holds) and their word points (what a verification compares,
    ``text.neardup.compare.WordPoints``)."""

    analyzed: Analyzed
    passages: list[Passages]
    points: list[WordPoints]
    words: Words = ()  # the words the texts were tokenized with beside the dictionary

    @classmethod
    def concat(cls, parts: Sequence[TextAnalysis]) -> TextAnalysis:
        if len({p.words for p in parts}) > 1:
            raise ValueError("parts tokenized with different words")
        return cls(
            Analyzed.concat([p.analyzed for p in parts]),
            [x for p in parts for x in p.passages],
            [x for p in parts for x in p.points],
            parts[0].words if parts else (),
        )


@dataclass(frozen=True)
class FeatureRow:
    fingerprint: int
    vector: bytes
    n_tokens: int
    embedding: bytes | None = None


def text_of(title: str, content: str, strip: bool = True) -> str:
    """The text that is tokenized: the clean title, a line break, the clean content.

    Args:
        strip: remove repost boilerplate lines at the head and tail of the content
            (``features.strip_boilerplate``; see :mod:`recengine.text.cleaning.boilerplate`).
    """
    return _joined(*clean_parts(title, content, strip))


def _joined(clean_title: str, body: str) -> str:
    return clean_title + "\n" + body


def compared_of(title: str, content: str, strip: bool = True) -> Compared:
    """What the near-duplicate decision compares of an article (``text.neardup.compare``): the clean
    title and the clean body of :func:`text_of`, quoted reply text removed
    (``text.neardup.compare.article_compared``)."""
    return article_compared(title, content, strip)


def reusable(hashes: Sequence[str], known: Known | None) -> list[bytes | None]:
    """Per text (``hashes``: of its text now), the stored encoder vector it may reuse: its
    ``known`` one when that was computed from a text of the same hash (and has the encoder's
    size); None where it must be encoded."""
    stored_of = known or [None] * len(hashes)
    return [
        stored[1] if stored is not None and stored[0] == h and len(stored[1]) == 2 * DIMS else None
        for h, stored in zip(hashes, stored_of, strict=True)
    ]


def text_hash(text: str) -> str:
    """sha256 of a cleaned text: equal hashes, equal features (no need to tokenize again)."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


class Featurizer:
    """Owns the tokenizer and term-hash cache of one process.

    Args:
        settings: tokenizer and feature settings.
        tokenizer: an already built tokenizer of the dictionary alone to share (built from
            settings on first use when omitted).

    Texts are tokenized with the words of the model they are analysed for
    (:meth:`use_words`: the active IDF model's :attr:`~recengine.features.tfidf.IdfModel.words`;
    none until told). A tokenizer with words is another dictionary: this keeps the one of the
    dictionary alone (what new-word discovery cuts candidates with) and the newest other.
    """

    def __init__(self, settings: Settings, tokenizer: Tokenizer | None = None) -> None:
        self.settings = settings
        self._tokenizers: dict[Words, Tokenizer] = {} if tokenizer is None else {(): tokenizer}
        self._words: Words = ()
        self._building = threading.Lock()
        self.hasher = TermHasher()
        self.encodes = _encodes(settings)

    def use_words(self, words: Sequence[str]) -> None:
        """Tokenize with the dictionary and ``words`` from now on (a no-op when unchanged; the
        tokenizer is built when first needed)."""
        self._words = tuple(words)

    @property
    def tokenizer(self) -> Tokenizer:
        """The tokenizer of the words of :meth:`use_words`, built on first use (a dictionary
        load, ~0.4 s): the parent of a reindex whose workers tokenize everything never loads
        one."""
        return self.tokenizer_for(self._words)

    def tokenizer_for(self, words: Words) -> Tokenizer:
        """The tokenizer of the dictionary and ``words``."""
        found = self._tokenizers.get(words)
        if found is None:
            with self._building:
                found = self._tokenizers.get(words)
                if found is None:
                    found = build_tokenizer(self.settings.tokenizer, words)
                    kept = {k: t for k, t in self._tokenizers.items() if not k}
                    self._tokenizers = {**kept, words: found}
        return found

    def text(self, title: str, content: str) -> str:
        """:func:`text_of` under these settings."""
        return text_of(title, content, self.settings.features.strip_boilerplate)

    def compared(self, title: str, content: str) -> Compared:
        """:func:`compared_of` under these settings."""
        return compared_of(title, content, self.settings.features.strip_boilerplate)

    def compared_many(self, items: Sequence[tuple[str, str]]) -> list[Compared]:
        """:meth:`compared` of each ``(title, content)`` pair, in order."""
        return [self.compared(title, content) for title, content in items]

    def analyze(self, title: str, content: str) -> TextStats:
        return self.analyze_many([(title, content)]).stats()[0]

    def count(self, text: str) -> TextStats:
        """Term counts of an already cleaned text (see :func:`text_of`)."""
        return self.count_many([text]).stats()[0]

    def analyze_many(
        self,
        items: Sequence[tuple[str, str]],
        words: Words | None = None,
        known: Known | None = None,
    ) -> Analyzed:
        """Hashes and term counts of the texts of ``(title, content)`` pairs, tokenized with
        ``words`` (default: those of :meth:`use_words`), with their encoder vectors when the
        encoder is on (``known``: as for :meth:`analyze_texts`)."""
        strip = self.settings.features.strip_boilerplate
        parts = [clean_parts(title, content, strip) for title, content in items]
        tokenizer = self.tokenizer_for(self._words if words is None else words)
        return self._count_parts(parts, tokenizer, known)

    def analyze_texts(
        self, items: Sequence[tuple[str, str]], known: Known | None = None
    ) -> TextAnalysis:
        """:meth:`analyze_many` of ``(title, content)`` pairs, with each one's passage hashes
        and word points, from one cleaning of each text: what an ingest and a reindex's
        workers compute, so that no later step cleans it again.

        Args:
            known: per item, the encoder vector stored for it and the hash of the text it was
                computed from (a full reindex's, of the active version: :data:`Known`); a text
                whose hash is that one is not encoded again (the encoder was about half the
                CPU of a full reindex of long articles, BENCHMARKS.md issue 50 item 2).
        """
        words = self._words  # read once: another thread may switch them meanwhile
        strip = self.settings.features.strip_boilerplate
        parts = [clean_parts(title, content, strip) for title, content in items]
        analyzed = self._count_parts(parts, self.tokenizer_for(words), known)
        points = [points_of(title, body) for title, body in parts]
        return TextAnalysis(analyzed, [p.passages() for p in points], points, words)

    def count_many(self, texts: Sequence[str]) -> Analyzed:
        """Hashes and term counts of already cleaned texts, in order (as they are: no title to
        weigh, see :meth:`analyze_many`)."""
        return self._analyzed(texts, texts, self.tokenizer)

    def _count_parts(
        self, parts: Sequence[tuple[str, str]], tokenizer: Tokenizer, known: Known | None = None
    ) -> Analyzed:
        """Hashes and term counts of clean ``(title, body)`` texts: the hash of the text
        (:func:`text_of`), the counts of its words with the title's counted
        ``features.title_weight`` times (the title written again below the text for the
        tokenizer: no second pass over the counts)."""
        texts = [_joined(title, body) for title, body in parts]
        extra = self.settings.features.title_weight - 1
        weighted = texts
        if extra:
            weighted = [
                t + ("\n" + title) * extra for t, (title, _) in zip(texts, parts, strict=True)
            ]
        analyzed = self._analyzed(texts, weighted, tokenizer)
        if not self.encodes:
            return analyzed
        embedded = self._embedded(parts, analyzed.text_hashes, known)
        return Analyzed(analyzed.text_hashes, analyzed.counts, embedded)

    def _embedded(
        self, parts: Sequence[tuple[str, str]], hashes: Sequence[str], known: Known | None
    ) -> list[bytes]:
        """:meth:`embed` of the texts whose hash is not the one of their ``known`` vector."""
        out = reusable(hashes, known)
        todo = [i for i, e in enumerate(out) if e is None]
        if todo:
            for i, vector in zip(todo, self.embed([parts[i] for i in todo]), strict=True):
                out[i] = vector
        return [e for e in out if e is not None]

    def embed(self, parts: Sequence[tuple[str, str]]) -> list[bytes]:
        """The sentence encoder's vectors of clean ``(title, body)`` texts: their title and
        first ``dense.lead_chars`` characters (``features.encoder``; loaded on first use)."""
        chars = self.settings.dense.lead_chars
        leads = [lead_text(title, body, chars) for title, body in parts]
        return encoder_bytes(load_encoder().encode(leads))

    def _analyzed(
        self, texts: Sequence[str], counted_texts: Sequence[str], tokenizer: Tokenizer
    ) -> Analyzed:
        counted = tokenizer.count_many(counted_texts)
        counts = TermCounts(
            terms=counted.terms,
            hashes=self.hasher.hashes(counted.terms),
            indptr=counted.indptr,
            index=counted.index,
            counts=counted.counts,
        )
        return Analyzed([text_hash(t) for t in texts], counts)

    def _without_stop_terms(self, counts: TermCounts, model: IdfModel) -> TermCounts:
        """``counts`` less the corpus stop-terms (``features.max_df``): what vectors are made
        of; fingerprints keep every term."""
        max_df = self.settings.features.max_df
        if max_df >= 1.0:
            return counts
        return counts.without_terms(model.frequent(counts.terms, max_df))

    def features(self, stats: Sequence[TextStats], model: IdfModel) -> list[FeatureRow]:
        """:meth:`features_of` for articles held as :class:`TextStats`."""
        counts = TermCounts.from_dicts([s.counts for s in stats], self.hasher)
        return self.features_of(counts, model, [s.embedding for s in stats])

    def features_of(
        self,
        counts: TermCounts,
        model: IdfModel,
        embeddings: Sequence[bytes | None] | None = None,
    ) -> list[FeatureRow]:
        """Stored vector and fingerprint of each document of ``counts`` (with its encoder
        vector from ``embeddings``, in order, when given).

        The fingerprint always weighs terms by *raw-count* TF-IDF (all terms, or the top
        ``simhash_top_n``: the near-duplicate method's features), whatever
        ``features.sublinear_tf`` says for the stored vectors: the fingerprint and the
        related-articles ranking are tuned separately (``BENCHMARKS.md``).
        """
        f = self.settings.features
        idf = model.idf_of(counts.terms)  # one look-up per distinct term of the batch
        vectorizer = TfidfVectorizer(
            model, f.vector_max_terms, sublinear_tf=f.sublinear_tf, hasher=self.hasher
        )
        vectors = vectorizer.transform_counts(self._without_stop_terms(counts, model), idf)
        if not f.simhash_top_n:
            prints = batch_fingerprints(counts, model, idf)
        elif f.sublinear_tf:
            raw = TfidfVectorizer(model, f.simhash_top_n, hasher=self.hasher)
            prints = fingerprints(raw.transform_counts(counts, idf), f.simhash_top_n)
        else:  # the stored vectors' top terms, stop-terms included
            full = vectors if f.max_df >= 1.0 else vectorizer.transform_counts(counts, idf)
            prints = fingerprints(full, f.simhash_top_n)
        n_tokens = counts.n_tokens().tolist()
        embedded = list(embeddings) if embeddings is not None else [None] * len(n_tokens)
        return [
            FeatureRow(fingerprint=p, vector=v.to_bytes(), n_tokens=n, embedding=e)
            for p, v, n, e in zip(prints.tolist(), vectors, n_tokens, embedded, strict=True)
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
            # only when on: models fitted before the setting existed stay valid with it off
            **({"new_words": new_word_params(t)} if t.new_words else {}),
        },
        "features": {
            "simhash_top_n": f.simhash_top_n,
            "fingerprint": "tfidf-all-terms" if f.simhash_top_n == 0 else "tfidf-top-n",
            "strip_boilerplate": f.strip_boilerplate,
            "vector_max_terms": f.vector_max_terms,
            "sublinear_tf": f.sublinear_tf,
            # only when set: models fitted before these settings existed stay valid
            **({"title_weight": f.title_weight} if f.title_weight != 1 else {}),
            **({"max_df": f.max_df} if f.max_df < 1.0 else {}),
        },
        # only when on: models fitted before the encoder existed stay valid with it off
        **({ENCODER_KEY: encoder_params(settings.dense)} if _encodes(settings) else {}),
    }


ENCODER_KEY = "encoder"


def same_model_settings(stored: dict[str, Any], wanted: dict[str, Any]) -> bool:
    """Whether a model's stored params were fitted with the settings whose
    :func:`model_params` are ``wanted`` (the rest of ``stored`` records how it was fitted; the
    encoder's key, present only when it is on, is compared whichever side has it)."""
    keys = {*wanted, ENCODER_KEY}
    return {k: stored.get(k) for k in keys} == {k: wanted.get(k) for k in keys}


def _encodes(settings: Settings) -> bool:
    return settings.dense.encoder != "lsa"


def encoder_params(d: DenseSettings) -> dict[str, Any]:
    """The sentence encoder's settings a model version's stored vectors depend on: which
    encoder (name, package, version: a changed one takes a reindex), how much of each article
    it reads, and its share of the dense part."""
    return {**identity(), "lead_chars": d.lead_chars, "share": d.encoder_share}


def new_word_params(t: TokenizerSettings) -> dict[str, Any]:
    """The new-word discovery settings a model's words depend on."""
    return {
        "sample": t.new_words_sample,
        "max_chars": t.new_words_max_chars,
        "min_count": t.new_words_min_count,
        "min_pmi": t.new_words_min_pmi,
        "min_entropy": t.new_words_min_entropy,
    }
