"""Raw words -> term ids -> per-text term counts: the work after the tokenizer's ``cut``.

A tokenizer's filter (part of speech, stopwords, case) is a function of the raw word alone, so a
process runs it once per distinct raw word and remembers the verdict as a term id
(:class:`Vocabulary`: ``-1`` when the filter drops the word). Counting a batch then needs, per
word, only the look-up of its id, and per text the occurrences of each id.

Two formulations give the same counts (the order of a text's entries carries no meaning,
``features.counts``):

* Python's C containers: ``Counter`` per text over its words, then one dictionary look-up per
  distinct word of each text (about a quarter of a microsecond per word: as much as the
  tokenizer's ``cut`` itself on long Chinese articles, BENCHMARKS.md);
* compiled (``text.words.count_kernels``): the batch's words joined by NUL into one string, its code
  points hashed word by word, the 64-bit hashes looked up in a table that mirrors the
  vocabulary, the counts taken in one pass. A word the table lacks is filtered in Python once,
  as before. Two distinct raw words share a hash with probability about 2^-64 per pair (at a
  million distinct words, ~3 x 10^-8 that any two do).

The process rents before it buys (:mod:`recengine.rental`): the compiled path costs numba's
~0.5 s load, what the Python path spends on about two million words (~10 MB of Chinese text),
so a small ingest never loads it and a reindex or bulk ingest does early.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from itertools import chain
from types import ModuleType

import numpy as np
import numpy.typing as npt

from recengine.rental import Rental

CACHE_LIMIT = 2_000_000  # distinct raw words remembered before the vocabulary is cleared
# words counted in Python that cost what loading the compiled counting costs
COUNTING = Rental("recengine.text.words.count_kernels", price=2_000_000, at_once=2_000_000)
_FIRST_CAPACITY = 1 << 16  # table slots at the start; doubled to stay at most half full


@dataclass(frozen=True, eq=False)
class Counted:
    """Term counts of a batch of texts as a CSR matrix over the batch's distinct terms.

    Attributes:
        terms: the distinct kept terms of the batch, ``(V,)``.
        indptr: ``int64 (n + 1,)``: text i's entries are ``[indptr[i], indptr[i + 1])``.
        index: ``int64 (nnz,)`` positions in ``terms``, distinct within a text.
        counts: ``int64 (nnz,)`` occurrences (> 0).
    """

    terms: list[str]
    indptr: npt.NDArray[np.int64]
    index: npt.NDArray[np.int64]
    counts: npt.NDArray[np.int64]


class Vocabulary:
    """Raw word -> term id (``-1`` when the filter drops it), and term id -> term.

    Args:
        verdict: the filter: a raw word -> the term it becomes, ``""`` when dropped.

    A miss runs the filter once and remembers; everything is forgotten when more than
    ``CACHE_LIMIT`` raw words are held (call :meth:`bound` between batches: ids are only used
    within a batch), or on :meth:`reset` (the filter changed).
    """

    def __init__(self, verdict: Callable[[str], str]) -> None:
        self._verdict = verdict
        self.ids: _Ids = _Ids(self)
        self.terms: list[str] = []
        self._term_ids: dict[str, int] = {}
        self._shared: set[int] = set()  # terms that more than one raw word maps to
        self._mask: npt.NDArray[np.bool_] | None = None
        self._table: _Table | None = None

    def reset(self) -> None:
        self.ids.clear()
        self.terms.clear()
        self._term_ids.clear()
        self._shared.clear()
        self._mask = None
        self._table = None

    def bound(self) -> None:
        if len(self.ids) >= CACHE_LIMIT:
            self.reset()

    def term_id(self, word: str) -> int:
        kept = self._verdict(word)
        if not kept:
            return -1
        found = self._term_ids.get(kept)
        if found is None:
            found = self._term_ids[kept] = len(self.terms)
            self.terms.append(kept)
        else:
            self._shared.add(found)
            self._mask = None
        return found

    def count(self, words: Sequence[list[str]]) -> Counted:
        """Term counts of texts given as their raw words (compiled once it pays)."""
        sizes = np.fromiter(map(len, words), dtype=np.int64, count=len(words))
        total = int(sizes.sum())
        kernels = COUNTING.kernels(total)
        if kernels is not None and total:
            found = self._count_compiled(kernels, words, sizes)
            if found is not None:
                return found
        return self._count_python(words, sizes)

    def _count_python(self, words: Sequence[list[str]], sizes: npt.NDArray[np.int64]) -> Counted:
        """``Counter`` per text (C, over a small table that stays in cache), then one dictionary
        look-up in C per distinct word of each text; the rest numpy over the batch."""
        per_text = [Counter(w) for w in words]
        distinct = np.fromiter(map(len, per_text), dtype=np.int64, count=len(per_text))
        total = int(distinct.sum())
        ids = np.fromiter(map(self.ids.__getitem__, chain.from_iterable(per_text)), np.int64, total)
        counts = np.fromiter(chain.from_iterable(c.values() for c in per_text), np.int64, total)
        return count_ids(ids, counts, distinct, self)

    def _count_compiled(
        self, kernels: ModuleType, words: Sequence[list[str]], sizes: npt.NDArray[np.int64]
    ) -> Counted | None:
        """The compiled path; None when a word holds a NUL (the separator) itself."""
        total = int(sizes.sum())
        # Joined per text first: one join over millions of words costs twice as much.
        joined = "\x00".join(["\x00".join(w) for w in words if w])
        points = np.frombuffer(joined.encode("utf-32-le"), dtype="<u4")
        hashes, found = kernels.word_hashes(points, total)
        if found != total:
            return None
        if self._table is None:
            self._table = _Table(kernels)
        slots, new = self._table.slots(hashes)
        if len(new):
            starts = np.concatenate(([0], np.cumsum(sizes)))
            rows = (np.searchsorted(starts, new, side="right") - 1).tolist()
            at = (new - starts[rows]).tolist()
            met = [self.ids[words[r][w]] for r, w in zip(rows, at, strict=True)]
            self._table.values[slots[new]] = met
        ids = self._table.values[slots]
        width = max(len(self.terms), 1)
        indptr, terms, counts = kernels.count_rows(ids, sizes, width)
        present = np.zeros(width, dtype=bool)
        present[terms] = True
        position = np.cumsum(present) - 1  # term id -> its place in the batch's terms
        return Counted(
            terms=list(map(self.terms.__getitem__, np.flatnonzero(present).tolist())),
            indptr=indptr,
            index=position[terms].astype(np.int64),
            counts=counts,
        )

    def shared_mask(self) -> npt.NDArray[np.bool_]:
        """``bool (len(terms),)``: True where more than one raw word maps to the term."""
        if self._mask is None or len(self._mask) != len(self.terms):
            self._mask = np.zeros(len(self.terms), dtype=bool)
            self._mask[list(self._shared)] = True
        return self._mask


class _Ids(dict[str, int]):
    def __init__(self, vocabulary: Vocabulary) -> None:
        super().__init__()
        self._vocabulary = vocabulary

    def __missing__(self, word: str) -> int:
        found = self[word] = self._vocabulary.term_id(word)
        return found


class _Table:
    """Raw word hash -> term id: the compiled path's mirror of :attr:`Vocabulary.ids`
    (open addressing, kept at most half full)."""

    def __init__(self, kernels: ModuleType) -> None:
        self._k = kernels
        self.keys = np.zeros(_FIRST_CAPACITY, np.uint64)
        self.values = np.zeros(_FIRST_CAPACITY, np.int64)
        self.held = 0

    def slots(
        self, hashes: npt.NDArray[np.uint64]
    ) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64]]:
        """The slot of each hash, and the positions of the first occurrences of those the table
        lacked: the caller sets their values (the slots' values are undefined until then)."""
        claimed: list[npt.NDArray[np.int64]] = []
        while True:
            slots, new, held = self._k.slots_of(self.keys, hashes, self.held, len(self.keys) // 2)
            claimed.append(new)
            if held >= 0:
                self.held = held
                break
            self.held += len(new)  # grow, keeping what was claimed; ask again for the rest
            self.keys, self.values = self._k.rehash(self.keys, self.values, 2 * len(self.keys))
        if len(claimed) > 1:  # slots moved with the growth: a claimed one's first position
            return slots, np.unique(np.concatenate(claimed))
        return slots, claimed[0]


def count_ids(
    ids: npt.NDArray[np.int64],
    counts: npt.NDArray[np.int64],
    sizes: npt.NDArray[np.int64],
    vocab: Vocabulary,
) -> Counted:
    """Entries ``(term id, count)`` of ``len(sizes)`` texts laid end to end -> :class:`Counted`.

    Args:
        ids: ``int64 (sum(sizes),)`` term ids of each text's distinct raw words (``-1`` =
            dropped).
        counts: ``int64 (sum(sizes),)`` their occurrences.
        sizes: ``int64 (n,)`` distinct raw words per text.
        vocab: the term table ``ids`` refer to.
    """
    n, width = len(sizes), max(len(vocab.terms), 1)
    rows = np.repeat(np.arange(n, dtype=np.int64), sizes)
    kept = ids >= 0
    rows, ids, counts = rows[kept], ids[kept], counts[kept]
    shared = vocab.shared_mask()[ids]  # terms more than one raw word becomes: may repeat
    if shared.any():
        rows, ids, counts = _merge_repeats(rows, ids, counts, shared, width)
    present = np.zeros(width, dtype=bool)
    present[ids] = True
    terms = np.flatnonzero(present)
    position = np.cumsum(present) - 1  # term id -> its place in the batch's terms
    return Counted(
        terms=list(map(vocab.terms.__getitem__, terms.tolist())),
        indptr=np.searchsorted(rows, np.arange(n + 1, dtype=np.int64)).astype(np.int64),
        index=position[ids].astype(np.int64),
        counts=counts,
    )


def _merge_repeats(
    rows: npt.NDArray[np.int64],
    ids: npt.NDArray[np.int64],
    counts: npt.NDArray[np.int64],
    shared: npt.NDArray[np.bool_],
    width: int,
) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64], npt.NDArray[np.int64]]:
    """Sum the entries of one text that name the same term ("Python" and "python"); only the
    entries of shared terms are sorted. Rows stay in ascending order."""
    keys = rows[shared] * width + ids[shared]
    unique, inverse = np.unique(keys, return_inverse=True)
    summed = np.bincount(inverse, weights=counts[shared]).astype(np.int64)
    rows = np.concatenate((rows[~shared], unique // width))
    ids = np.concatenate((ids[~shared], unique % width))
    counts = np.concatenate((counts[~shared], summed))
    order = np.argsort(rows, kind="stable")
    return rows[order], ids[order], counts[order]
