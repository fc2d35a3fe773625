"""Character shingles of a cleaned text: what two reposts of one article share, character for
character.

Chinese text has no spaces, so shingles are runs of ``n`` characters (5 by default) of the text
with all whitespace and punctuation removed: a repost that changes line breaks, spacing or
quotation marks (“…” for " … ", common between news sites) has the same shingles, and one that
changes a sentence changes only the shingles that overlap it. The resemblance of
two texts is the Jaccard index of their shingle sets (Broder 1997), which is what MinHash
estimates; ``recengine.features.neardup`` computes it exactly, for the few candidate pairs the
fingerprint index finds.
"""

from __future__ import annotations

import re

SHINGLE_CHARS = 5
_NOT_WORD = re.compile(r"[\W_]+")  # whitespace, punctuation, symbols


def shingles(text: str, n: int = SHINGLE_CHARS) -> frozenset[str]:
    """The set of ``n``-character runs of ``text`` without whitespace and punctuation (the
    whole text if it is shorter; empty when nothing is left).

    Example:
        >>> sorted(shingles("“ab” cd,ef", 5))
        ['abcde', 'bcdef']
    """
    if n < 1:
        raise ValueError(f"n must be >= 1, got {n}")
    s = _NOT_WORD.sub("", text)
    if len(s) <= n:
        return frozenset([s]) if s else frozenset()
    return frozenset(s[i : i + n] for i in range(len(s) - n + 1))
