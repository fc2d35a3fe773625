"""The near-duplicate criterion that related lists and feeds suppress by. ONE place to change it.

Two articles count as the same article when

* they are in the same near-duplicate cluster (``cluster_members``: same canonical article), or
* their 64-bit fingerprints are within Hamming distance ``features.hamming_k`` (DESIGN.md).

The cluster test catches what the clustering decided (including pairs it verified beyond the
plain fingerprint distance); the distance test holds even before an article has been
clustered (right after ingest) and between two articles of different clusters that are still
within ``k`` of each other. Whoever refines the duplicate criterion (the near-duplicate
issue) replaces :meth:`DuplicateCriterion.match` and nothing else.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from recengine.features.simhash import hamming_many

NO_CLUSTER = -1


@dataclass(frozen=True)
class DuplicateCriterion:
    """Args: hamming_k: the largest Hamming distance that makes two fingerprints duplicates."""

    hamming_k: int

    def match(
        self,
        fingerprint: int,
        cluster: int,
        fingerprints: npt.NDArray[np.uint64],
        clusters: npt.NDArray[np.int64],
    ) -> tuple[npt.NDArray[np.bool_], npt.NDArray[np.int64]]:
        """Which of many articles are duplicates of one article, and their distances.

        Args:
            fingerprint / cluster: the one article (cluster = canonical id, or
                :data:`NO_CLUSTER`).
            fingerprints: ``uint64 (n,)`` of the others; clusters: ``int64 (n,)`` likewise.

        Returns:
            ``bool (n,)`` duplicate or not, and ``int64 (n,)`` Hamming distances.
        """
        distance = hamming_many(np.array(fingerprint, dtype=np.uint64), fingerprints).astype(
            np.int64
        )
        same_cluster = (clusters == cluster) & (cluster != NO_CLUSTER)
        return (distance <= self.hamming_k) | same_cluster, distance
