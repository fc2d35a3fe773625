"""Passage hashes: a few hashes per text that any copy of a large part of it shares.

The second candidate source of the near-duplicate stage (the first is the simhash radius
search). Simhash estimates the angle of whole-document vectors, so an excerpt (the first 60%
of an article) or a digest (an article plus an unrelated piece) lies 10-16 bits from its source
and the radius search misses it; what such copies do keep is long runs of the source's text.

A text's passages are its ``m`` (8) smallest hashes, in a fixed mixed order, of its runs of
``n`` (12) characters with whitespace and punctuation removed (a bottom-m sketch, Broder 1997 /
Cohen's "k-mins"). Why this finds partial copies: when a text A lies inside B, every one of B's
bottom-m hashes that belongs to A is also among A's bottom m, and each of B's m lowest hashes
belongs to A with probability ``|A| / |B|``, so they share a passage with probability about
``1 - (1 - |A|/|B|)^m``: 0.996 for an excerpt of 50% of B at m = 8, 0.9996 for a digest where
the post is 2/3 of the whole. Pairs that share only a few percent of the larger text (a quote)
rarely share one, and verification (:mod:`recengine.features.neardup`) decides anyway.

Measured on real text with planted reposts (BENCHMARKS.md, "Near-duplicate quality"): among
the options the issue named, candidate recall over all edit kinds was 0.997 for 8 passages of
12 characters (7,100 candidate pairs among 12,600 texts), 0.998 for 8 of 8 characters (12,800
pairs), 0.989 for the hashes of every sentence of 8+ characters (31 per text, 22,900 pairs),
0.958-0.986 for 0-mod-p sampled runs (37-76 per text); the sentence hashes lose copies whose
punctuation or line breaks changed and those with typos. The fixed size per text (8 hashes,
64 bytes) is what makes an index of 10M articles affordable.

Runs of 12 characters are rarer than the 5-character shingles of the verification, so a passage
shared by chance is rare; passages shared by very many texts (boilerplate, site chrome) are
"stop passages" the index ignores. The values returned are the mixed hashes themselves
(uniform 64-bit), sorted: a pure function of the text, the same in every process.

Array contract: ``uint64 (<= m,)``, sorted, distinct; empty for a text without word characters.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from recengine.text.neardup.shingles import EMPTY, HASHING, Points, run_hashes, word_points

PASSAGE_CHARS = 12
PASSAGES_KEPT = 8

Passages = npt.NDArray[np.uint64]


def mix64(values: npt.NDArray[np.uint64]) -> npt.NDArray[np.uint64]:
    """The splitmix64 finaliser (Steele et al. 2014), a bijection of 64-bit integers whose
    output bits all depend on every input bit: the polynomial run hashes of
    :mod:`recengine.text.neardup.shingles` are not uniform in their low bits, their mix is."""
    h = values.astype(np.uint64, copy=True)
    with np.errstate(over="ignore"):
        h ^= h >> np.uint64(30)
        h *= np.uint64(0xBF58476D1CE4E5B9)
        h ^= h >> np.uint64(27)
        h *= np.uint64(0x94D049BB133111EB)
        h ^= h >> np.uint64(31)
    return h


def passages(text: str, n: int = PASSAGE_CHARS, m: int = PASSAGES_KEPT) -> Passages:
    """The ``m`` smallest mixed hashes of the ``n``-character runs of ``text`` (see the module
    docstring); all of them when it has fewer runs.

    Example:
        >>> text = "近日，某市发布了新的交通管理办法，对电动自行车的登记和通行作出规定。"
        >>> a, b = passages(text), passages(text + "全文如下")
        >>> len(a), bool(np.intersect1d(a, b).size)
        (8, True)
    """
    return passages_of(word_points(text), n, m)


def passages_of(words: Points, n: int = PASSAGE_CHARS, m: int = PASSAGES_KEPT) -> Passages:
    """:func:`passages` of a text's :func:`~recengine.text.neardup.shingles.word_points`."""
    if m < 1:
        raise ValueError(f"m must be >= 1, got {m}")
    if n < 1:
        raise ValueError(f"n must be >= 1, got {n}")
    if not len(words):
        return EMPTY
    kernels = HASHING.kernels(len(words))
    if kernels is not None:  # the same values in one pass (``text.neardup.shingle_kernels``)
        lowest: Passages = kernels.lowest_mixed(words, n, m)
        return lowest
    mixed = mix64(run_hashes(words, n))  # a bijection: repeated runs stay equal, others apart
    # The m smallest distinct values lie among the 4m smallest values whenever those hold m
    # distinct ones (a text rarely repeats a run more than 3 times): no sort of the whole set.
    if len(mixed) > 4 * m:
        lowest = np.unique(np.partition(mixed, 4 * m - 1)[: 4 * m])
        if len(lowest) >= m:
            return lowest[:m]
    return np.unique(mixed)[:m]
