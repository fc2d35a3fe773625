"""Term counts of a batch of documents: one sparse matrix, not one dictionary per document.

Tokenizing a batch yields, per document, how often each kept term occurs. Held as a CSR matrix
over the batch's own vocabulary, every later step (document frequencies, TF-IDF weights, the
simhash, the spool between reindex passes) is a handful of numpy operations over the whole
batch instead of a Python loop over every term of every document, and the term strings are
stored (and pickled, and hashed) once per batch, not once per document containing them.

Array contracts (``n`` documents, ``V`` distinct terms in the batch, ``nnz`` (document, term)
pairs)::

    terms    list[str] (V,)      the batch's distinct terms (each once)
    hashes   uint64 (V,)         their term_hash
    indptr   int64 (n + 1,)      document i's entries are index[indptr[i]:indptr[i + 1]]
    index    int64 (nnz,)        positions in terms; distinct within a document
    counts   int64 (nnz,)        occurrences, > 0

The order of a document's entries carries no meaning: every consumer's result is independent
of it (ties in vector weights are broken by term hash; simhash sums are exact).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from recengine.features.hashing import TermHasher

IntArray = npt.NDArray[np.int64]


@dataclass(frozen=True, eq=False)
class TermCounts:
    """Term counts of ``n`` documents (see the module docstring for the array contracts)."""

    terms: list[str]
    hashes: npt.NDArray[np.uint64]
    indptr: IntArray
    index: IntArray
    counts: IntArray

    def __post_init__(self) -> None:
        if len(self.terms) != len(self.hashes):
            raise ValueError(f"{len(self.terms)} terms but {len(self.hashes)} hashes")
        if len(self.indptr) < 1 or not self.indptr[-1] == len(self.index) == len(self.counts):
            raise ValueError("indptr, index and counts disagree on the number of entries")

    def __len__(self) -> int:
        return len(self.indptr) - 1

    @property
    def sizes(self) -> IntArray:
        """``int64 (n,)`` distinct terms per document."""
        return np.diff(self.indptr)

    def rows(self) -> IntArray:
        """``int64 (nnz,)`` the document of each entry."""
        return np.repeat(np.arange(len(self), dtype=np.int64), self.sizes)

    def n_tokens(self) -> IntArray:
        """``int64 (n,)`` kept tokens per document (the sum of its counts)."""
        total = np.concatenate(([0], np.cumsum(self.counts)))
        return total[self.indptr[1:]] - total[self.indptr[:-1]]

    def doc_frequencies(self) -> dict[str, int]:
        """term -> documents of the batch containing it."""
        df = np.bincount(self.index, minlength=len(self.terms))
        return {t: d for t, d in zip(self.terms, df.tolist(), strict=True) if d}

    def as_dict(self, row: int) -> dict[str, int]:
        """Document ``row`` as term -> count."""
        lo, hi = int(self.indptr[row]), int(self.indptr[row + 1])
        terms = self.terms
        return {
            terms[i]: c
            for i, c in zip(self.index[lo:hi].tolist(), self.counts[lo:hi].tolist(), strict=True)
        }

    def take(self, rows: Sequence[int] | IntArray) -> TermCounts:
        """The documents ``rows``, in that order (the vocabulary is kept as it is)."""
        rows = np.asarray(rows, dtype=np.int64)
        starts, sizes = self.indptr[rows], self.sizes[rows]
        indptr = np.concatenate(([0], np.cumsum(sizes))).astype(np.int64)
        picks = np.repeat(starts - indptr[:-1], sizes) + np.arange(int(indptr[-1]))
        return TermCounts(self.terms, self.hashes, indptr, self.index[picks], self.counts[picks])

    def without_terms(self, dropped: npt.NDArray[np.bool_]) -> TermCounts:
        """The same documents without the entries of the terms ``dropped`` marks (``bool
        (V,)``); the vocabulary is kept as it is."""
        keep = ~dropped[self.index]
        kept = np.concatenate(([0], np.cumsum(keep)))
        indptr = kept[self.indptr].astype(np.int64)
        return TermCounts(self.terms, self.hashes, indptr, self.index[keep], self.counts[keep])

    @classmethod
    def concat(cls, parts: Sequence[TermCounts]) -> TermCounts:
        """The documents of every part, in order. A term may then appear in the vocabulary
        once per part (harmless: no document refers to two copies)."""
        if not parts:
            return EMPTY_COUNTS
        offsets = np.cumsum([0] + [len(p.terms) for p in parts])
        bases = np.cumsum([0] + [len(p.index) for p in parts])
        return cls(
            terms=[t for p in parts for t in p.terms],
            hashes=np.concatenate([p.hashes for p in parts]).astype(np.uint64),
            indptr=np.concatenate(
                [[0]] + [p.indptr[1:] + b for p, b in zip(parts, bases, strict=False)]
            ).astype(np.int64),
            index=np.concatenate(
                [p.index + o for p, o in zip(parts, offsets, strict=False)]
            ).astype(np.int64),
            counts=np.concatenate([p.counts for p in parts]).astype(np.int64),
        )

    @classmethod
    def empty_rows(cls, n: int) -> TermCounts:
        """``n`` documents without terms."""
        return cls(
            EMPTY_COUNTS.terms,
            EMPTY_COUNTS.hashes,
            np.zeros(n + 1, np.int64),
            EMPTY_COUNTS.index,
            EMPTY_COUNTS.counts,
        )

    @classmethod
    def from_dicts(cls, docs: Sequence[Mapping[str, int]], hasher: TermHasher) -> TermCounts:
        """From one term -> count mapping per document (for callers that hold dictionaries)."""
        vocab: dict[str, int] = {}
        index: list[int] = []
        counts: list[int] = []
        sizes = np.zeros(len(docs), dtype=np.int64)
        for row, doc in enumerate(docs):
            sizes[row] = len(doc)
            for term, count in doc.items():
                index.append(vocab.setdefault(term, len(vocab)))
                counts.append(count)
        terms = list(vocab)
        return cls(
            terms=terms,
            hashes=hasher.hashes(terms),
            indptr=np.concatenate(([0], np.cumsum(sizes))).astype(np.int64),
            index=np.array(index, dtype=np.int64),
            counts=np.array(counts, dtype=np.int64),
        )


EMPTY_COUNTS = TermCounts(
    [], np.zeros(0, np.uint64), np.zeros(1, np.int64), np.zeros(0, np.int64), np.zeros(0, np.int64)
)
