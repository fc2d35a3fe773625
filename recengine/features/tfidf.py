"""TF-IDF: an IDF model fitted on the stored corpus, and sparse unit-length document vectors.

Formulas (the smoothed IDF of scikit-learn's ``TfidfTransformer(smooth_idf=True)``)::

    idf(t) = ln((1 + N) / (1 + df(t))) + 1        N documents, df(t) documents containing t
    tf(t, d) = count of t in d                     (or 1 + ln(count) with sublinear_tf)
    w(t, d) = tf(t, d) * idf(t), then the vector is cut to its ``max_terms`` largest weights
              and divided by its L2 norm, so that the inner product of two vectors is their cosine.

The "+1" inside the fraction acts as one extra document containing every term, so no idf is
infinite or zero; the "+1" outside keeps terms present in every document from vanishing.

Unknown terms (first seen after the last fit, e.g. in an article ingested between reindexes) get
``idf = ln(1 + N) + 1``, the value of a term with ``df = 0``: a brand-new word is as specific as a
word can be. The next reindex refits the model with them counted.

Ties in weight are broken by the term's 64-bit hash (ascending), so the kept terms and their
order are deterministic on every machine and engine.
"""

from __future__ import annotations

import itertools
import math
import struct
import zlib
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property

import numpy as np
import numpy.typing as npt

from recengine.features.counts import TermCounts
from recengine.features.hashing import TermHasher


@dataclass(frozen=True, eq=False)
class SparseVector:
    """One document's TF-IDF vector, largest weight first.

    Attributes:
        terms: the kept terms, ``(m,)``.
        hashes: ``uint64 (m,)`` their :func:`~recengine.features.hashing.term_hash`.
        weights: ``float32 (m,)``, non-increasing, L2 norm 1 (all zero when ``m == 0``).
    """

    terms: tuple[str, ...]
    hashes: npt.NDArray[np.uint64]
    weights: npt.NDArray[np.float32]

    def __len__(self) -> int:
        return len(self.terms)

    def to_bytes(self) -> bytes:
        """Compact form: ``<u4 m``, ``m`` x ``<u8`` hashes, ``m`` x ``<f4`` weights, terms."""
        terms = "\n".join(self.terms).encode("utf-8")
        return b"".join(
            (
                struct.pack("<I", len(self.terms)),
                self.hashes.astype("<u8").tobytes(),
                self.weights.astype("<f4").tobytes(),
                terms,
            )
        )

    @classmethod
    def from_bytes(cls, blob: bytes) -> SparseVector:
        (m,) = struct.unpack_from("<I", blob)
        hashes = np.frombuffer(blob, dtype="<u8", count=m, offset=4).astype(np.uint64)
        weights = np.frombuffer(blob, dtype="<f4", count=m, offset=4 + 8 * m).astype(np.float32)
        text = blob[4 + 12 * m :].decode("utf-8")
        terms = tuple(text.split("\n")) if m else ()
        if len(terms) != m:
            raise ValueError(f"corrupt vector: {m} weights but {len(terms)} terms")
        return cls(terms, hashes, weights)

    @staticmethod
    def arrays_from_bytes(blob: bytes) -> tuple[npt.NDArray[np.uint64], npt.NDArray[np.float32]]:
        """Only the hashes and weights of :meth:`to_bytes` output (no term strings decoded).

        Raises:
            ValueError: the blob is shorter than its header says.
        """
        (m,) = struct.unpack_from("<I", blob)
        if len(blob) < 4 + 12 * m:
            raise ValueError(f"corrupt vector: {len(blob)} bytes cannot hold {m} terms")
        hashes = np.frombuffer(blob, dtype="<u8", count=m, offset=4).astype(np.uint64)
        weights = np.frombuffer(blob, dtype="<f4", count=m, offset=4 + 8 * m).astype(np.float32)
        return hashes, weights

    def as_dict(self) -> dict[str, float]:
        return dict(zip(self.terms, self.weights.tolist(), strict=True))


def named_terms(blob: bytes) -> list[tuple[int, str]]:
    """``(hash, term)`` of each term of :meth:`SparseVector.to_bytes` output (what names the
    hashes an index holds: ``index.vocabulary``), without the weights.

    Raises:
        ValueError: the blob is damaged.
    """
    vector = SparseVector.from_bytes(blob)
    return list(zip(vector.hashes.tolist(), vector.terms, strict=True))


EMPTY_VECTOR = SparseVector((), np.zeros(0, np.uint64), np.zeros(0, np.float32))


# The first bytes of a model that carries words: no model of the first format starts so (its
# first 8 bytes are n_docs, and this reads as ~7 x 10^18 documents).
_WORDS_MAGIC = b"IDFW\x01\x00\x00\x66"


@dataclass(frozen=True, eq=False)
class IdfModel:
    """Document frequencies of a corpus; ``idf`` follows the formula of the module docstring.

    Attributes:
        n_docs: documents the model was fitted on.
        df: term -> number of those documents containing it.
        words: the words the corpus was tokenized with beside the dictionary (discovered by
            the reindex that fitted the model, ``pipeline.reindex.new_words``; sorted, empty when
            new-word discovery is off): every text analysed under this model is tokenized with them.
    """

    n_docs: int
    df: Mapping[str, int] = field(repr=False)
    words: tuple[str, ...] = field(default=(), repr=False)

    @cached_property
    def unknown_idf(self) -> float:
        """The idf of a term no fitted document contains (df = 0)."""
        return math.log(1 + self.n_docs) + 1.0

    @cached_property
    def idf_table(self) -> dict[str, float]:
        """term -> idf; unknown terms read as :attr:`unknown_idf` (no KeyError)."""
        n1 = 1 + self.n_docs
        return _IdfTable(
            {t: math.log(n1 / (1 + d)) + 1.0 for t, d in self.df.items()}, self.unknown_idf
        )

    def idf(self, term: str) -> float:
        return self.idf_table[term]

    def idf_of(self, terms: Sequence[str]) -> npt.NDArray[np.float64]:
        """``float64 (len(terms),)`` the idf of each term (one look-up per term, in C)."""
        return np.fromiter(map(self.idf_table.__getitem__, terms), np.float64, count=len(terms))

    def frequent(self, terms: Sequence[str], max_df: float) -> npt.NDArray[np.bool_]:
        """``bool (len(terms),)``: the terms in more than ``max_df`` of the fitted documents
        (corpus stop-terms, ``features.max_df``)."""
        df = np.fromiter((self.df.get(t, 0) for t in terms), np.float64, count=len(terms))
        return df > max_df * self.n_docs

    def to_bytes(self) -> bytes:
        """zlib-compressed: ``<u8 n_docs``, ``<u4 terms``, df as ``<u4``, then the terms; with
        words, first :data:`_WORDS_MAGIC` and after the terms ``<u4 words`` and the words (a
        model without words keeps the first format, so its bytes, and a digest of them, are
        what they were)."""
        terms = sorted(self.df)
        counts = np.fromiter((self.df[t] for t in terms), dtype="<u4", count=len(terms))
        parts = [
            struct.pack("<QI", self.n_docs, len(terms)),
            counts.tobytes(),
            "\n".join(terms).encode("utf-8"),
        ]
        if self.words:
            words = "\n".join(self.words).encode("utf-8")
            parts = [_WORDS_MAGIC, *parts[:2], struct.pack("<I", len(parts[2])), parts[2]]
            parts += [struct.pack("<I", len(self.words)), words]
        return zlib.compress(b"".join(parts), 6)

    @classmethod
    def from_bytes(cls, blob: bytes) -> IdfModel:
        body = zlib.decompress(blob)
        words: tuple[str, ...] = ()
        start = len(_WORDS_MAGIC) if body.startswith(_WORDS_MAGIC) else 0
        n_docs, n_terms = struct.unpack_from("<QI", body, start)
        at = start + 12
        counts = np.frombuffer(body, dtype="<u4", count=n_terms, offset=at)
        at += 4 * n_terms
        if start:
            (size,) = struct.unpack_from("<I", body, at)
            text = body[at + 4 : at + 4 + size].decode("utf-8")
            at += 4 + size
            (n_words,) = struct.unpack_from("<I", body, at)
            words = tuple(body[at + 4 :].decode("utf-8").split("\n")) if n_words else ()
            if len(words) != n_words:
                raise ValueError(f"corrupt IDF model: {n_words} words but {len(words)} read")
        else:
            text = body[at:].decode("utf-8")
        terms = text.split("\n") if n_terms else []
        if len(terms) != n_terms:
            raise ValueError(f"corrupt IDF model: {n_terms} counts but {len(terms)} terms")
        return cls(n_docs=n_docs, df=dict(zip(terms, counts.tolist(), strict=True)), words=words)


class _IdfTable(dict[str, float]):
    def __init__(self, values: dict[str, float], unknown: float) -> None:
        super().__init__(values)
        self.unknown = unknown

    def __missing__(self, term: str) -> float:
        return self.unknown


def fit_idf(documents: Iterable[Iterable[str]]) -> IdfModel:
    """Count document frequencies.

    Args:
        documents: per document, its terms (a term-count dict or any iterable of terms;
            repeats within a document count once).
    """
    df: Counter[str] = Counter()
    n_docs = 0
    for terms in documents:
        df.update(set(terms))
        n_docs += 1
    return IdfModel(n_docs=n_docs, df=dict(df))


class TfidfVectorizer:
    """Term counts -> :class:`SparseVector` under a fitted :class:`IdfModel`.

    Args:
        model: the IDF model.
        max_terms: terms kept per vector (the largest weights).
        sublinear_tf: use ``1 + ln(count)`` instead of the raw count.
        hasher: shared term-hash cache.

    Raises:
        ValueError: ``max_terms`` is not positive.
    """

    def __init__(
        self,
        model: IdfModel,
        max_terms: int,
        sublinear_tf: bool = False,
        hasher: TermHasher | None = None,
    ) -> None:
        if max_terms < 1:
            raise ValueError(f"max_terms must be >= 1, got {max_terms}")
        self.model = model
        self.max_terms = max_terms
        self.sublinear_tf = sublinear_tf
        self.hasher = hasher or TermHasher()

    def transform(self, counts: Mapping[str, int]) -> SparseVector:
        """One document's vector from its term counts (see the module docstring)."""
        if not counts:
            return EMPTY_VECTOR
        return self.transform_counts(TermCounts.from_dicts([counts], self.hasher))[0]

    def transform_many(self, counts: Iterable[Mapping[str, int]]) -> list[SparseVector]:
        docs = list(counts)
        return self.transform_counts(TermCounts.from_dicts(docs, self.hasher))

    def weights(
        self, counts: TermCounts, idf: npt.NDArray[np.float64] | None = None
    ) -> npt.NDArray[np.float64]:
        """``float64 (nnz,)`` the weight ``tf * idf`` of every entry of ``counts``.

        Args:
            idf: ``float64 (V,)`` the idf of ``counts.terms`` when the caller has it already.
        """
        idf = self.model.idf_of(counts.terms) if idf is None else idf
        tf = counts.counts.astype(np.float64)
        if self.sublinear_tf:
            tf = 1.0 + np.log(tf)
        weights: npt.NDArray[np.float64] = tf * idf[counts.index]
        return weights

    def _top(
        self,
        counts: TermCounts,
        weights: npt.NDArray[np.float64],
        hashes: npt.NDArray[np.uint64],
    ) -> npt.NDArray[np.intp]:
        """Positions of each document's ``max_terms`` largest weights, document by document,
        largest first, ties broken by term hash ascending.

        Only entries that can make the cut are sorted: in a document with more terms than
        ``max_terms``, every weight >= its ``max_terms``-th largest (found by a partial sort
        of that document alone, ties included).
        """
        m, sizes, rows = self.max_terms, counts.sizes, counts.rows()
        floor = np.full(len(counts), -np.inf)
        for doc in np.flatnonzero(sizes > m).tolist():
            lo, hi = int(counts.indptr[doc]), int(counts.indptr[doc + 1])
            floor[doc] = np.partition(weights[lo:hi], hi - lo - m)[hi - lo - m]
        candidates = np.flatnonzero(weights >= floor[rows])
        order = candidates[np.lexsort((hashes[candidates], -weights[candidates], rows[candidates]))]
        grouped = rows[order]  # non-decreasing: each document's entries together
        rank = np.arange(len(order)) - np.searchsorted(grouped, np.arange(len(counts)))[grouped]
        return order[rank < m]

    def transform_counts(
        self, counts: TermCounts, idf: npt.NDArray[np.float64] | None = None
    ) -> list[SparseVector]:
        """The vector of every document of ``counts``, in order.

        The ``max_terms`` largest weights of each document are found for the whole batch by
        one sort (document, weight descending, term hash ascending) of the entries that can
        make the cut; each document's kept weights are then divided by their L2 norm.
        """
        weights = self.weights(counts, idf)
        hashes = counts.hashes[counts.index]
        picked = self._top(counts, weights, hashes)
        kept_sizes = np.minimum(counts.sizes, self.max_terms)
        bounds = np.concatenate(([0], np.cumsum(kept_sizes))).tolist()
        kept_w, kept_h = weights[picked], hashes[picked]
        kept_terms = list(map(counts.terms.__getitem__, counts.index[picked].tolist()))
        out = []
        for lo, hi in itertools.pairwise(bounds):
            if lo == hi:
                out.append(EMPTY_VECTOR)
                continue
            w = kept_w[lo:hi]
            w = w / np.sqrt(np.dot(w, w))
            out.append(SparseVector(tuple(kept_terms[lo:hi]), kept_h[lo:hi], w.astype(np.float32)))
        return out
