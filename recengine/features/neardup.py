"""The near-duplicate criterion, in one place: are two articles the same article?

Two steps (measured on real reposts, BENCHMARKS.md "Near-duplicate quality"):

1. **candidate**: Hamming distance of the 64-bit fingerprints ``<= k`` (``features.hamming_k``,
   default 8). A weighted simhash bit differs between two documents with probability
   ``angle / pi`` of their weight vectors (Charikar 2002), so a repost with a few sentences
   changed (cosine ~0.95) is expected ~6.5 bits away and often 10: the original ``k = 3``
   finds about two thirds of real reposts. A radius of 8 finds ~95%, but lets in unrelated
   pairs of articles on the same topic (e.g. parts of a series);
2. **verification**: the cosine of the two stored TF-IDF vectors (top terms, unit length)
   ``>= min_cosine`` (``neardup.min_cosine``, default 0.93). The cosine is what the fingerprint
   only estimates (with the noise of 64 random bits), so it separates reposts (median 0.99)
   from same-topic articles (rarely above 0.8) far better than a tighter radius would.

:meth:`NearDupCriterion.judge` is the one function every caller uses: ingest and reindex
(clusters), the duplicates API, and related-article suppression.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from recengine.config import Settings
from recengine.features.simhash import hamming
from recengine.features.tfidf import SparseVector

SHOWN_TERMS = 10


@dataclass(frozen=True)
class Verdict:
    """Why two articles are, or are not, near-duplicates.

    Attributes:
        duplicate: both steps passed.
        distance: Hamming distance of the fingerprints (0..64).
        score: cosine of the TF-IDF vectors (the verification score), 0 when either is empty.
        shared_terms: the terms contributing most to the cosine, largest first (at most 10).
    """

    duplicate: bool
    distance: int
    score: float
    shared_terms: tuple[str, ...]


def cosine(a: SparseVector, b: SparseVector) -> tuple[float, tuple[str, ...]]:
    """Cosine of two unit vectors and their shared terms by contribution (largest first)."""
    if not len(a) or not len(b):
        return 0.0, ()
    common, ia, ib = np.intersect1d(a.hashes, b.hashes, assume_unique=True, return_indices=True)
    if not len(common):
        return 0.0, ()
    products = a.weights[ia].astype(np.float64) * b.weights[ib]
    order = np.argsort(-products, kind="stable")[:SHOWN_TERMS]
    score = float(min(1.0, products.sum()))
    return score, tuple(a.terms[i] for i in ia[order].tolist())


class NearDupCriterion:
    """Whether two articles are near-duplicates (see the module docstring).

    Args:
        k: candidate radius in bits, ``0 <= k < 64``.
        min_cosine: verification threshold in ``[0, 1]``.

    Raises:
        ValueError: a parameter is out of range.

    Example:
        >>> from recengine.features.tfidf import EMPTY_VECTOR
        >>> NearDupCriterion(k=8, min_cosine=0.9).judge(0b1011, EMPTY_VECTOR, 0b1, EMPTY_VECTOR)
        Verdict(duplicate=False, distance=2, score=0.0, shared_terms=())
    """

    def __init__(self, k: int, min_cosine: float) -> None:
        if not 0 <= k < 64:
            raise ValueError(f"k must be in [0, 63], got {k}")
        if not 0.0 <= min_cosine <= 1.0:
            raise ValueError(f"min_cosine must be in [0, 1], got {min_cosine}")
        self.k = k
        self.min_cosine = min_cosine

    @classmethod
    def from_settings(cls, settings: Settings) -> NearDupCriterion:
        return cls(settings.features.hamming_k, settings.neardup.min_cosine)

    def judge(
        self, fp_a: int, vector_a: SparseVector, fp_b: int, vector_b: SparseVector
    ) -> Verdict:
        """The verdict on two articles given their fingerprints and stored vectors.

        Args:
            fp_a, fp_b: unsigned 64-bit fingerprints.
            vector_a, vector_b: their TF-IDF vectors (same model version as the fingerprints).
        """
        distance = hamming(int(fp_a), int(fp_b))
        score, shared = cosine(vector_a, vector_b)
        duplicate = distance <= self.k and score >= self.min_cosine and len(shared) > 0
        return Verdict(duplicate, distance, score, shared)
