"""The near-duplicate criterion, in one place: are two articles the same article?

Two steps (measured on real reposts, BENCHMARKS.md "Near-duplicate quality"):

1. **candidate**: Hamming distance of the 64-bit fingerprints ``<= k`` (``features.hamming_k``,
   default 8). A weighted simhash bit differs between two documents with probability
   ``angle / pi`` of their weight vectors (Charikar 2002), so a repost with a few sentences
   changed (cosine ~0.95) is expected ~6.5 bits away and often 10: the original ``k = 3``
   finds about two thirds of real reposts. A radius of 8 finds ~97%, but lets in unrelated
   pairs of articles on the same topic (e.g. parts of a series);
2. **verification**, the precise step. When the callers pass the two texts' character
   shingles (``recengine.text.shingles``), their resemblance (Jaccard index of 5-character
   runs, Broder 1997) ``>= min_resemblance`` (``neardup.min_resemblance``, default 0.5): it
   counts the text two articles share, so a repost with a header, a footer or a few changed
   sentences stays far above 0.5 while two articles on the same topic (series parts, news of
   one event) share almost no 5-character runs. Without shingles, the cosine of the two stored
   TF-IDF vectors ``>= min_cosine`` (``neardup.min_cosine``, default 0.93), which needs only
   what is stored per article but lets more same-topic pairs through.

Measured on real reposts (BENCHMARKS.md, held-out run): k = 8 + resemblance >= 0.5 gives F1
0.980 (precision 0.999, recall 0.962); k = 8 + cosine >= 0.93 gives 0.972; the original top-20
simhash at k = 3 gave 0.756; datasketch MinHashLSH at its best threshold 0.989. Raising k to 10
or 12 gives 0.989 / 0.993 at 7x / 40x the index probes per query.

:meth:`NearDupCriterion.judge` is the one function every caller uses: ingest and reindex
(clusters, with shingles), the duplicates API (with shingles), and related-article suppression
(with shingles where the texts are at hand, otherwise vectors only).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

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
        score: the verification score that decided: the resemblance when shingles were given,
            otherwise the cosine.
        cosine: cosine of the TF-IDF vectors, 0 when either is empty.
        resemblance: Jaccard index of the shingle sets, None when not given.
        shared_terms: the terms contributing most to the cosine, largest first (at most 10).
    """

    duplicate: bool
    distance: int
    score: float
    cosine: float
    resemblance: float | None
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
        min_cosine: verification threshold on the vectors' cosine, in ``[0, 1]``.
        min_resemblance: verification threshold on the shingles' Jaccard index, in ``(0, 1]``.

    Raises:
        ValueError: a parameter is out of range.

    Example:
        >>> from recengine.features.tfidf import EMPTY_VECTOR
        >>> c = NearDupCriterion(k=8, min_cosine=0.9, min_resemblance=0.5)
        >>> v = c.judge(0b1011, EMPTY_VECTOR, 0b1, EMPTY_VECTOR,
        ...             frozenset({"abcde", "bcdef"}), frozenset({"abcde"}))
        >>> v.duplicate, v.distance, v.score
        (True, 2, 0.5)
    """

    def __init__(self, k: int, min_cosine: float, min_resemblance: float = 0.5) -> None:
        if not 0 <= k < 64:
            raise ValueError(f"k must be in [0, 63], got {k}")
        if not 0.0 <= min_cosine <= 1.0:
            raise ValueError(f"min_cosine must be in [0, 1], got {min_cosine}")
        if not 0.0 < min_resemblance <= 1.0:
            raise ValueError(f"min_resemblance must be in (0, 1], got {min_resemblance}")
        self.k = k
        self.min_cosine = min_cosine
        self.min_resemblance = min_resemblance

    @classmethod
    def from_settings(cls, settings: Settings) -> NearDupCriterion:
        n = settings.neardup
        return cls(settings.features.hamming_k, n.min_cosine, n.min_resemblance)

    def judge(
        self,
        fp_a: int,
        vector_a: SparseVector,
        fp_b: int,
        vector_b: SparseVector,
        shingles_a: npt.NDArray[np.uint64] | None = None,
        shingles_b: npt.NDArray[np.uint64] | None = None,
    ) -> Verdict:
        """The verdict on two articles.

        Args:
            fp_a, fp_b: unsigned 64-bit fingerprints.
            vector_a, vector_b: their TF-IDF vectors (same model version as the fingerprints).
            shingles_a, shingles_b: their texts' character shingles
                (``recengine.text.shingles.shingles`` of ``Featurizer.text``); when both are
                given they decide the verification, otherwise the cosine does.
        """
        distance = hamming(int(fp_a), int(fp_b))
        cos, shared = cosine(vector_a, vector_b)
        if shingles_a is not None and shingles_b is not None:
            res: float | None = resemblance(shingles_a, shingles_b)
            score, passed = res or 0.0, (res or 0.0) >= self.min_resemblance
        else:
            res, score = None, cos
            passed = cos >= self.min_cosine and len(shared) > 0
        return Verdict(distance <= self.k and passed, distance, score, cos, res, shared)


def resemblance(a: npt.NDArray[np.uint64], b: npt.NDArray[np.uint64]) -> float:
    """Jaccard index ``|a & b| / |a | b|`` of two shingle sets, each a sorted array of distinct
    hashes (``recengine.text.shingles.shingles``); 0 when either is empty."""
    if not len(a) or not len(b):
        return 0.0
    if len(a) > len(b):
        a, b = b, a
    # Both sorted and distinct: look each of the smaller set up in the larger (no re-sort).
    at = np.minimum(np.searchsorted(b, a), len(b) - 1)
    common = int(np.count_nonzero(b[at] == a))
    return common / (len(a) + len(b) - common)
