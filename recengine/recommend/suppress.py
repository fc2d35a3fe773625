"""Duplicate suppression over a ranked list: greedy, best first, with the reason for each cut.

Walking the candidates best first, a candidate is suppressed when the criterion
(``recommend.criterion``) makes it a duplicate of an *anchor* (the query article; for a feed,
every article the reader has read) or of a result already kept. So the list never holds the
query's duplicates, never two articles of one cluster and never two articles within the
fingerprint distance of each other; of each group of duplicates, the best-scoring one is shown
(not necessarily the cluster's canonical article: the one most related to this query).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt

from recengine.recommend.criterion import DuplicateCriterion


@dataclass(frozen=True)
class Articles:
    """Parallel arrays: ids ``int64 (n,)``, fingerprints ``uint64 (n,)``, clusters ``int64 (n,)``
    (canonical id, or ``criterion.NO_CLUSTER``)."""

    ids: npt.NDArray[np.int64]
    fingerprints: npt.NDArray[np.uint64]
    clusters: npt.NDArray[np.int64]

    def __len__(self) -> int:
        return len(self.ids)

    def take(self, positions: list[int]) -> Articles:
        return Articles(self.ids[positions], self.fingerprints[positions], self.clusters[positions])


@dataclass(frozen=True)
class Suppressed:
    position: int  # in the candidate list
    duplicate_of: int  # article id (an anchor or a kept result)
    distance: int  # Hamming distance of the two fingerprints
    kept_before: int  # results kept before it (for paging)


@dataclass
class Picked:
    kept: list[int] = field(default_factory=list)  # positions, best first
    suppressed: list[Suppressed] = field(default_factory=list)


def pick(
    candidates: Articles,
    anchors: Articles,
    criterion: DuplicateCriterion,
    limit: int,
    accept: Callable[[int, list[int]], bool] | None = None,
) -> Picked:
    """Keep up to ``limit`` candidates, best first, suppressing duplicates.

    Args:
        candidates: best first.
        anchors: articles nothing kept may duplicate.
        criterion: the duplicate criterion.
        limit: how many to keep.
        accept: an extra test ``(position, kept so far) -> bool`` (diversity in feeds); a
            candidate it refuses is skipped without being reported as a duplicate.
    """
    out = Picked()
    for i in range(len(candidates)):
        if len(out.kept) >= limit:
            break
        fingerprint, cluster = int(candidates.fingerprints[i]), int(candidates.clusters[i])
        reason = closest_duplicate(fingerprint, cluster, anchors, criterion)
        if reason is None and out.kept:
            reason = closest_duplicate(fingerprint, cluster, candidates.take(out.kept), criterion)
        if reason is not None:
            out.suppressed.append(Suppressed(i, reason[0], reason[1], len(out.kept)))
        elif accept is None or accept(i, out.kept):
            out.kept.append(i)
    return out


def closest_duplicate(
    fingerprint: int, cluster: int, others: Articles, criterion: DuplicateCriterion
) -> tuple[int, int] | None:
    """``(id, distance)`` of the closest of ``others`` that the article duplicates, or None."""
    if not len(others):
        return None
    dup, distance = criterion.match(fingerprint, cluster, others.fingerprints, others.clusters)
    if not dup.any():
        return None
    hits = np.flatnonzero(dup)
    best = hits[np.argmin(distance[hits])]
    return int(others.ids[best]), int(distance[best])
