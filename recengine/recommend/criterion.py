"""The near-duplicate criterion applied to ranked lists: one article against many.

The criterion itself is :meth:`recengine.features.neardup.NearDupCriterion.judge`, the one
definition shared with clustering and the duplicates API. Lists hold stored vectors, not texts,
so two articles are duplicates here when they are in one cluster (``cluster_members``: the
texts were verified when the cluster was formed, resemblance or containment, and the rule is
stored with the member's row) or, outside clusters, when their fingerprints are within
``features.hamming_k`` bits *and* the stored vectors' cosine is at least
``neardup.min_cosine`` (the vectors-only form of the judge). Two articles of one cluster are
the same article whatever the pair's own verdict, since clustering judged each member against
its canonical.

Cost: the Hamming distances to all the others are one vectorised operation; the judge (a cosine
of two sparse vectors) runs only for the few within the radius.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from recengine.config import Settings
from recengine.features.neardup import NearDupCriterion
from recengine.features.simhash import hamming_many
from recengine.features.tfidf import SparseVector

NO_CLUSTER = -1

VectorAt = Callable[[int], SparseVector]


def anonymous(hashes: npt.NDArray[np.uint64], weights: npt.NDArray[np.float32]) -> SparseVector:
    """A stored vector known by term hashes only (as the index holds it): terms left blank."""
    return SparseVector(("",) * len(hashes), hashes, weights)


@dataclass(frozen=True)
class Articles:
    """Articles as the criterion sees them, in parallel: ids ``int64 (n,)``, fingerprints
    ``uint64 (n,)``, clusters ``int64 (n,)`` (canonical id or :data:`NO_CLUSTER`), and
    ``vector(i)``, the stored vector of article ``i`` (fetched only when needed)."""

    ids: npt.NDArray[np.int64]
    fingerprints: npt.NDArray[np.uint64]
    clusters: npt.NDArray[np.int64]
    vector: VectorAt

    def __len__(self) -> int:
        return len(self.ids)

    def take(self, positions: Sequence[int]) -> Articles:
        chosen = list(positions)
        return Articles(
            self.ids[chosen],
            self.fingerprints[chosen],
            self.clusters[chosen],
            lambda j: self.vector(chosen[j]),
        )


class DuplicateCriterion:
    """Whether an article duplicates any of several others (see the module docstring).

    Args:
        judge: the pairwise near-duplicate criterion.
    """

    def __init__(self, judge: NearDupCriterion) -> None:
        self.judge = judge

    @classmethod
    def from_settings(cls, settings: Settings) -> DuplicateCriterion:
        return cls(NearDupCriterion.from_settings(settings))

    def match(
        self,
        fingerprint: int,
        cluster: int,
        vector: Callable[[], SparseVector],
        others: Articles,
    ) -> Matches:
        """Which of ``others`` the article duplicates, and why.

        Args:
            fingerprint / cluster: the article's (cluster = canonical id or NO_CLUSTER).
            vector: returns the article's stored vector (called at most once).
            others: the articles to compare with.
        """
        prints = np.asarray(others.fingerprints, dtype=np.uint64)
        distance = hamming_many(np.array(fingerprint, dtype=np.uint64), prints).astype(np.int64)
        same = (others.clusters == cluster) & (cluster != NO_CLUSTER)
        dup = same.copy()
        cosines = np.full(len(prints), np.nan)
        near = np.flatnonzero((distance <= self.judge.k) & ~same)
        if len(near):
            mine = vector()
            for j in near.tolist():
                verdict = self.judge.judge(fingerprint, mine, int(prints[j]), others.vector(j))
                dup[j], cosines[j] = verdict.duplicate, verdict.cosine
        return Matches(dup, distance, same, cosines)


@dataclass(frozen=True)
class Matches:
    """The criterion on one article against ``n`` others, in parallel arrays.

    Attributes:
        duplicate: ``bool (n,)`` the article duplicates that one.
        distance: ``int64 (n,)`` Hamming distance of the fingerprints.
        same_cluster: ``bool (n,)`` both are in one cluster (a duplicate by that alone).
        cosine: ``float64 (n,)`` cosine of the stored vectors where the judge ran (within the
            radius, outside a shared cluster), NaN elsewhere.
    """

    duplicate: npt.NDArray[np.bool_]
    distance: npt.NDArray[np.int64]
    same_cluster: npt.NDArray[np.bool_]
    cosine: npt.NDArray[np.float64]
