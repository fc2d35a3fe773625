"""Character shingles of a cleaned text: what two reposts of one article share, character for
character.

Chinese text has no spaces, so shingles are runs of ``n`` characters (5 by default) of the text
with all whitespace and punctuation removed: a repost that changes line breaks, spacing or
quotation marks (“…” for " … ", common between news sites) has the same shingles, and one that
changes a sentence changes only the shingles that overlap it. The resemblance of
two texts is the Jaccard index of their shingle sets (Broder 1997), which is what MinHash
estimates; ``recengine.features.neardup`` computes it exactly, for the few candidate pairs the
fingerprint index finds.

A shingle set is held as a sorted array of distinct 64-bit hashes (``uint64 (m,)``), not as a
set of strings: computing it is a handful of numpy operations over the text's code points
instead of one Python string slice per position (about 20x faster on 1,500-character articles),
and intersecting two sorted arrays is cheap. Whitespace and punctuation are dropped by a
look-up table of the word characters over the code points too (:func:`word_points`), not by
``NOT_WORD.sub``: the regular expression cost three quarters of a shingle set on 10,000-character
articles (1.3 of 1.8 ms), the look-up a sixth of it. The hash of the run ``c_0 .. c_{n-1}`` is the
polynomial ``sum c_j * B^(n-1-j) mod 2^64`` with an odd 64-bit ``B``; two distinct 5-character
runs collide with probability about 2^-64, far below anything that moves a resemblance.
"""

from __future__ import annotations

import re
from functools import cache

import numpy as np
import numpy.typing as npt

from recengine.rental import Rental

SHINGLE_CHARS = 5
NOT_WORD = re.compile(r"[\W_]+")  # whitespace, punctuation, symbols
_BASE = np.uint64(0x9E3779B97F4A7C15)  # odd: multiplication is a bijection mod 2^64
_BMP = 0x10000

Shingles = npt.NDArray[np.uint64]
Points = npt.NDArray[np.uint32]
EMPTY: Shingles = np.zeros(0, dtype=np.uint64)
# The compiled run hashes (``text.neardup.shingle_kernels``: the same values), bought once the numpy
# formulations have hashed this many word points (about what loading them costs, ~0.1 s where
# numba is loaded already, as in a reindex's workers) or for a text this long.
HASHING = Rental("recengine.text.neardup.shingle_kernels", price=2_000_000, at_once=1_000_000)


@cache
def _bmp_words() -> npt.NDArray[np.bool_]:
    """Whether each code point of the Basic Multilingual Plane is a word character in the sense
    of ``NOT_WORD`` (``str.isalnum``: what ``[\\W_]`` leaves); built once per process (~15 ms)."""
    return np.fromiter((chr(c).isalnum() for c in range(_BMP)), bool, _BMP)


def word_points(text: str) -> Points:
    """The code points of ``text`` that ``NOT_WORD.sub("", text)`` keeps, in order.

    Array contract: ``uint32 (m,)``. Characters beyond the BMP (rare: emoji, CJK extension B)
    are judged one by one, the rest by the table.

    Example:
        >>> "".join(map(chr, word_points("“ab” c_d,𠀀!")))
        'abcd𠀀'
    """
    points = np.frombuffer(text.encode("utf-32-le"), dtype="<u4")
    words = np.zeros(len(points), bool)
    low = points < _BMP
    words[low] = _bmp_words()[points[low]]
    if not low.all():
        high = np.flatnonzero(~low)
        words[high] = [chr(int(points[i])).isalnum() for i in high]
    return points[words].astype(np.uint32)


def shingles(text: str, n: int = SHINGLE_CHARS) -> Shingles:
    """Sorted distinct hashes of the ``n``-character runs of ``text`` without whitespace and
    punctuation (one hash of the whole remaining text if it is shorter; empty when nothing is
    left).

    Example:
        >>> len(shingles("“ab” cd,ef", 5))  # abcde, bcdef
        2
        >>> bool((shingles("ab cd ef") == shingles("abcdef")).all())
        True
    """
    return shingles_of(word_points(text), n)


def shingles_of(words: Points, n: int = SHINGLE_CHARS) -> Shingles:
    """:func:`shingles` of a text's :func:`word_points` (one look-up serves several sizes)."""
    if n < 1:
        raise ValueError(f"n must be >= 1, got {n}")
    if not len(words):
        return EMPTY
    kernels = HASHING.kernels(len(words))
    if kernels is not None:
        ordered = kernels.run_hashes(words, n)
        ordered.sort()
        distinct: Shingles = kernels.distinct(ordered)
        return distinct
    hashes = run_hashes(words, n)
    hashes.sort()
    return hashes[np.r_[True, hashes[1:] != hashes[:-1]]]


def run_hashes(words: Points, n: int) -> Shingles:
    """The polynomial hash of every run of ``min(n, len(words))`` points, in text order,
    repeats kept: ``uint64 (len(words) - width + 1,)`` for a non-empty ``words``.

    Computed by doubling rather than ``n`` passes of multiply-and-add over the text: the hash
    of a run of ``a + b`` points is ``h_a * B^b + h_b`` of the run ``a`` points later (exact in
    arithmetic mod 2^64), so runs of 1, 2, 4, 8 ... points are built from each other and those
    the binary digits of ``n`` name are joined: 3 passes for 5 points, 4 for 12.
    """
    points = words.astype(np.uint64)
    width = min(n, len(points))
    parts: list[tuple[int, npt.NDArray[np.uint64], np.uint64]] = []  # runs of 2^i points
    hashes, length, power = points, 1, _BASE  # power: B^length
    with np.errstate(over="ignore"):
        while True:
            if width & length:
                parts.append((length, hashes, power))
            if 2 * length > width:
                break
            hashes = hashes[: len(hashes) - length] * power + hashes[length:]
            length, power = 2 * length, power * power
        done, out, _ = parts.pop()
        for size, block, block_power in reversed(parts):
            keep = len(out) - size
            out = out[:keep] * block_power + block[done : done + keep]
            done += size
    return out
