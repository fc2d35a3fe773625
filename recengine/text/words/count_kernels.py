"""The compiled term counting of :mod:`recengine.text.words.vocabulary` (numba; loaded by
``vocabulary.COUNTING`` once it pays, so that importing the package does not load numba).

After the tokenizer's ``cut``, the words of a batch of texts are joined by NUL into one string
and handed over as code points; everything else is here, one pass each: a 64-bit hash of every
word, the hash looked up in an open-addressing table of the raw words this process has met
(hash -> term id, ``-1`` for a word the filter drops), and the per-text counts of the terms. A
word the table lacks claims a slot there, so each new word of a batch is filtered (in Python)
once, however often it occurs.

Array contracts: code points ``uint32 (m,)``; hashes ``uint64``; term ids ``int64`` (``-1`` =
dropped); table keys ``uint64 (capacity,)`` with ``EMPTY`` (0) for a free slot and values
``int64 (capacity,)`` beside them, capacity a power of two, at most half the slots held.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numba import njit

EMPTY = np.uint64(0)  # a free slot of the table; a word whose hash is 0 is stored as 1
_OFFSET = np.uint64(0xCBF29CE484222325)  # FNV-1a 64
_PRIME = np.uint64(0x100000001B3)
_MIX1 = np.uint64(0xBF58476D1CE4E5B9)  # splitmix64's finaliser: every bit of the word moves
_MIX2 = np.uint64(0x94D049BB133111EB)  # the slot (its low bits)
_ONE = np.uint64(1)
_S30, _S27, _S31 = np.uint64(30), np.uint64(27), np.uint64(31)


@njit(cache=True, nogil=True)
def word_hashes(points: Any, n_words: int) -> Any:
    """The hash of each NUL-separated word of ``points`` (FNV-1a over its code points, then
    splitmix64's finaliser; never ``EMPTY``).

    Returns:
        ``(uint64 (n_words,), found)``: ``found`` is the number of words ``points`` holds;
        when it is not ``n_words`` (a word held a NUL itself) the hashes mean nothing.
    """
    out = np.empty(n_words, np.uint64)
    h = _OFFSET
    w = 0
    for i in range(len(points)):
        c = points[i]
        if c == 0:
            if w == n_words:
                return out, w + 1
            out[w] = _finish(h)
            w += 1
            h = _OFFSET
        else:
            h = (h ^ np.uint64(c)) * _PRIME
    if w == n_words:
        return out, w + 1
    out[w] = _finish(h)
    return out, w + 1


@njit(cache=True, nogil=True)
def _finish(h: Any) -> Any:
    h = (h ^ (h >> _S30)) * _MIX1
    h = (h ^ (h >> _S27)) * _MIX2
    h = h ^ (h >> _S31)
    return h if h != EMPTY else _ONE


@njit(cache=True, nogil=True)
def slots_of(keys: Any, hashes: Any, held: int, limit: int) -> Any:
    """The table slot of each hash, a free slot claimed for each hash the table lacks.

    Args:
        keys: the table's keys (claimed slots get their hash).
        hashes: ``uint64 (n,)`` the words' hashes.
        held: keys the table holds now.
        limit: keys it may hold (half its slots).

    Returns:
        ``(slots int64 (n,), new int64 (k,), held)``: the slot of every hash, the position of
        the first occurrence of each claimed hash, and the keys held now; ``held = -1`` when
        one more key would pass ``limit`` (the caller grows the table and asks again: what
        was claimed stays claimed).
    """
    mask = np.uint64(len(keys) - 1)
    slots = np.empty(len(hashes), np.int64)
    new = np.empty(len(hashes), np.int64)
    n_new = 0
    for i in range(len(hashes)):
        h = hashes[i]
        slot = h & mask
        while True:
            k = keys[slot]
            if k == h:
                break
            if k == EMPTY:
                if held >= limit:
                    return slots, new[:n_new].copy(), -1
                keys[slot] = h
                held += 1
                new[n_new] = i
                n_new += 1
                break
            slot = (slot + _ONE) & mask
        slots[i] = np.int64(slot)
    return slots, new[:n_new].copy(), held


@njit(cache=True, nogil=True)
def rehash(keys: Any, values: Any, capacity: int) -> Any:
    """The table's entries in a table of ``capacity`` slots (a power of two)."""
    out_keys = np.zeros(capacity, np.uint64)
    out_values = np.zeros(capacity, np.int64)
    mask = np.uint64(capacity - 1)
    for i in range(len(keys)):
        h = keys[i]
        if h == EMPTY:
            continue
        slot = h & mask
        while out_keys[slot] != EMPTY:
            slot = (slot + _ONE) & mask
        out_keys[slot] = h
        out_values[slot] = values[i]
    return out_keys, out_values


@njit(cache=True, nogil=True)
def count_rows(ids: Any, sizes: Any, n_terms: int) -> Any:
    """Per text, each kept term once with its occurrences, in order of first occurrence.

    Args:
        ids: ``int64 (sum(sizes),)`` the term id of every word of the texts laid end to end
            (``< 0``: dropped).
        sizes: ``int64 (n,)`` words per text.
        n_terms: term ids are below this.

    Returns:
        ``(indptr int64 (n + 1,), terms int64 (nnz,), counts int64 (nnz,))``.
    """
    at = np.full(n_terms, -1, np.int64)  # where a term's entry is; < the row's start: not yet
    terms = np.empty(len(ids), np.int64)
    counts = np.empty(len(ids), np.int64)
    indptr = np.zeros(len(sizes) + 1, np.int64)
    nnz = 0
    w = 0
    for row in range(len(sizes)):
        start = nnz
        for _ in range(sizes[row]):
            t = ids[w]
            w += 1
            if t < 0:
                continue
            p = at[t]
            if p < start:
                at[t] = nnz
                terms[nnz] = t
                counts[nnz] = 1
                nnz += 1
            else:
                counts[p] += 1
        indptr[row + 1] = nnz
    return indptr, terms[:nnz].copy(), counts[:nnz].copy()
