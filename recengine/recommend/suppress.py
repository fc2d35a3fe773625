"""Duplicate suppression over a ranked list: greedy, best first, with the reason for each cut.

Walking the candidates best first, a candidate is suppressed when the criterion
(``recommend.criterion``) makes it a duplicate of an *anchor* (the query article; for a feed,
every article the reader has read) or of a result already kept. So the list never holds the
query's duplicates, never two articles of one cluster and never two near-duplicates of each
other; of each group of duplicates, the best-scoring one is shown (not necessarily the cluster's
canonical article: the one most related to this query).

With a :class:`~recengine.recommend.curation.Curation`, the editors' overrides correct the
criterion's verdicts (``not_duplicate``, ``same_article``), and a candidate blocked with an
anchor or with a result kept above it is skipped (not reported as a duplicate).

Each cut carries its :class:`Reason`: which rule made the pair the same article. One of
``"cluster"`` (the two are in one cluster; ``recommend.listing.cut_entries`` replaces it by the
rule stored with the cluster row, resemblance or containment, and its figure), ``"cosine"``
(within the radius, the stored vectors' cosine) or ``"editor"`` (an editor's ``same_article``).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from recengine.recommend.criterion import Articles, DuplicateCriterion
from recengine.recommend.curation import Curation


@dataclass(frozen=True)
class Reason:
    """Why an article was cut: the article it duplicates and the rule that said so."""

    duplicate_of: int  # article id (an anchor or a kept result)
    distance: int  # Hamming distance of the two fingerprints
    rule: str  # "cluster", "cosine" or "editor" (module docstring)
    score: float | None = None  # the cosine for "cosine"; None otherwise


@dataclass(frozen=True)
class Suppressed:
    position: int  # in the candidate list
    reason: Reason
    kept_before: int  # results kept before it (for paging)

    @property
    def duplicate_of(self) -> int:
        return self.reason.duplicate_of

    @property
    def distance(self) -> int:
        return self.reason.distance


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
    curation: Curation | None = None,
) -> Picked:
    """Keep up to ``limit`` candidates, best first, suppressing duplicates.

    Args:
        candidates: best first.
        anchors: articles nothing kept may duplicate.
        criterion: the duplicate criterion.
        limit: how many to keep.
        accept: an extra test ``(position, kept so far) -> bool`` (diversity in feeds); a
            candidate it refuses is skipped without being reported as a duplicate.
        curation: the editors' overrides (see the module docstring).
    """
    out = Picked()
    for i in range(len(candidates)):
        if len(out.kept) >= limit:
            break
        one = candidates.take([i])
        reason = closest_duplicate(one, anchors, criterion, curation)
        if reason is None and out.kept:
            reason = closest_duplicate(one, candidates.take(out.kept), criterion, curation)
        if reason is not None:
            out.suppressed.append(Suppressed(i, reason, len(out.kept)))
        elif _blocked(curation, int(one.ids[0]), anchors, candidates, out.kept):
            continue
        elif accept is None or accept(i, out.kept):
            out.kept.append(i)
    return out


def _blocked(
    curation: Curation | None,
    article: int,
    anchors: Articles,
    candidates: Articles,
    kept: list[int],
) -> bool:
    if curation is None or not curation.blocked:
        return False
    others = anchors.ids.tolist() + candidates.ids[kept].tolist()
    return curation.blocks_any(article, others)


def closest_duplicate(
    one: Articles,
    others: Articles,
    criterion: DuplicateCriterion,
    curation: Curation | None = None,
) -> Reason | None:
    """Why the article ``one[0]`` duplicates the closest (by fingerprint distance) of
    ``others`` it duplicates (by the criterion, corrected by the editors' overrides when
    given); None when it duplicates none."""
    if not len(others):
        return None
    found = criterion.match(
        int(one.fingerprints[0]), int(one.clusters[0]), lambda: one.vector(0), others
    )
    dup = found.duplicate
    if curation is not None:
        dup = curation.correct(int(one.ids[0]), others.ids, dup)
    if not dup.any():
        return None
    hits = np.flatnonzero(dup)
    best = int(hits[np.argmin(found.distance[hits])])
    other, distance = int(others.ids[best]), int(found.distance[best])
    if not found.duplicate[best]:
        return Reason(other, distance, "editor")
    if found.same_cluster[best]:
        return Reason(other, distance, "cluster")
    return Reason(other, distance, "cosine", round(float(found.cosine[best]), 4))
