"""Duplicate suppression over a ranked list: greedy, best first, with the reason for each cut.

Walking the candidates best first, a candidate is suppressed when the criterion
(``recommend.lists.criterion``) makes it a duplicate of an *anchor* (the query article; for a feed,
every article the reader has read) or of a result already kept. So the list never holds the
query's duplicates, never two articles of one cluster and never two near-duplicates of each
other. Of each group of duplicates the best-scoring one is shown, except that with
``prefer_canonical`` (``related.prefer_canonical``, on by default) a cluster's canonical article
(the original: the earliest published) that is itself a candidate takes the place of its
best-scoring copy, which is then cut as its duplicate: site owners want the original's url, and
a copy ranked above its original is only a copy that shares a few more words with the query.

With a :class:`~recengine.recommend.lists.curation.Curation`, the editors' overrides correct the
criterion's verdicts (``not_duplicate``, ``same_article``), and a candidate blocked with an
anchor or with a result kept above it is skipped (not reported as a duplicate).

Each cut carries its :class:`Reason`: which rule made the pair the same article. One of
``"cluster"`` (the two are in one cluster; ``recommend.lists.listing.cut_entries`` replaces it by
the rule stored with the cluster row, resemblance or containment, and its figure), ``"cosine"``
(within the radius, the stored vectors' cosine), ``"resemblance"`` / ``"containment"`` (outside
one cluster, decided on the texts: ``recommend.lists.criterion``) or ``"editor"`` (an editor's
``same_article``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt

from recengine.features.simhash import hamming_many
from recengine.features.tfidf import SparseVector
from recengine.recommend.lists.criterion import NO_CLUSTER, Articles, DuplicateCriterion
from recengine.recommend.lists.curation import Curation


@dataclass(frozen=True)
class Reason:
    """Why an article was cut: the article it duplicates and the rule that said so."""

    duplicate_of: int  # article id (an anchor or a kept result)
    distance: int  # Hamming distance of the two fingerprints
    rule: str  # "cluster", "cosine", "resemblance", "containment" or "editor" (module docstring)
    score: float | None = None  # the figure of "cosine", "resemblance", "containment"; else None


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
    # a canonical's position -> the position of the copy whose place it took (prefer_canonical):
    # the place is the copy's, so is the floor it is held to (``recommend.lists.page.under_floor``)
    stands_for: dict[int, int] = field(default_factory=dict)

    def place_of(self, position: int) -> int:
        """The position whose score ranks ``position`` (its own, or its copy's)."""
        return self.stands_for.get(position, position)


def pick(
    candidates: Articles,
    anchors: Articles,
    criterion: DuplicateCriterion,
    limit: int,
    accept: Callable[[int, list[int]], bool] | None = None,
    curation: Curation | None = None,
    prefer_canonical: int | None = None,
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
        prefer_canonical: None, or how many leading candidates keep their place whatever
            their cluster (the editor's pins); after them a cluster's canonical is walked
            just before its best-ranked copy (:func:`canonical_first`).
    """
    if prefer_canonical is not None:
        order, moved = canonical_first(candidates, prefer_canonical)
        if moved:
            out = _walked_in(order, candidates, anchors, criterion, limit, accept, curation)
            out.stands_for = {c: p for c, p in moved.items() if c in out.kept}
            return out
    out = Picked()
    # who may be judged a duplicate at all: only these need the criterion (an editor's
    # same_article can make any pair one article, so with those everybody may)
    together = curation is not None and bool(curation.together)
    risky = None if together else may_duplicate(candidates, anchors, criterion)
    for i in range(len(candidates)):
        if len(out.kept) >= limit:
            break
        one = candidates.take([i])
        reason = None
        if risky is None or risky[i]:
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


def canonical_first(candidates: Articles, fixed: int = 0) -> tuple[list[int], dict[int, int]]:
    """The order in which to walk ``candidates`` so that each cluster's canonical that is a
    candidate comes just before the first of its copies (a copy's cluster id is its canonical's
    id, a canonical's is its own), and ``canonical's position -> that copy's position`` for the
    canonicals moved; the first ``fixed`` candidates stay where they are.

    With ids ``[5, 6, 7]``, 6 a copy of 7 and 5 alone: ``([0, 2, 1], {2: 1})``.
    """
    ids, clusters = candidates.ids, candidates.clusters
    where = {int(a): p for p, a in enumerate(ids)}
    order: list[int] = list(range(min(fixed, len(ids))))
    moved: dict[int, int] = {}
    for p in range(len(order), len(ids)):
        if p in moved:
            continue
        canonical = where.get(int(clusters[p]), -1)
        if canonical > p and canonical not in moved:
            order.append(canonical)
            moved[canonical] = p
        order.append(p)
    return order, moved


def _walked_in(
    order: list[int],
    candidates: Articles,
    anchors: Articles,
    criterion: DuplicateCriterion,
    limit: int,
    accept: Callable[[int, list[int]], bool] | None,
    curation: Curation | None,
) -> Picked:
    """:func:`pick` over ``candidates`` walked in ``order``, with positions in ``candidates``."""

    def accepted(i: int, kept: list[int]) -> bool:
        return accept is None or accept(order[i], [order[j] for j in kept])

    walked = pick(candidates.take(order), anchors, criterion, limit, accepted, curation)
    return Picked(
        [order[i] for i in walked.kept],
        [Suppressed(order[s.position], s.reason, s.kept_before) for s in walked.suppressed],
    )


def may_duplicate(
    candidates: Articles, anchors: Articles, criterion: DuplicateCriterion
) -> npt.NDArray[np.bool_]:
    """``bool (n,)``: candidate ``i`` is within the radius of, in one cluster with, or (when
    texts are read, ``recommend.lists.criterion``) at least ``text_cosine`` similar to an anchor or
    a candidate before it; the others duplicate nothing the walk can keep (the criterion needs
    one of these), so it skips them. One vectorised pass over all pairs."""
    n = len(candidates)
    prints = np.asarray(candidates.fingerprints, np.uint64)
    others = np.concatenate((np.asarray(anchors.fingerprints, np.uint64), prints))
    clusters = np.concatenate((anchors.clusters, candidates.clusters))
    near = hamming_many(prints[:, None], others[None, :]) <= criterion.judge.k
    near |= (candidates.clusters[:, None] == clusters[None, :]) & (
        candidates.clusters[:, None] != NO_CLUSTER
    )
    floor = criterion.text_cosine
    before = np.arange(n)[:, None] > np.arange(n)[None, :]
    if floor is not None and candidates.texts is not None and anchors.texts is not None:
        vectors = [anchors.vector(j) for j in range(len(anchors))]
        vectors += [candidates.vector(i) for i in range(n)]
        close = pairwise_cosines(vectors)[len(anchors) :] >= floor
        close[:, len(anchors) :] &= before
        near |= close
        # the texts the walk may compare, read in one query (a superset: some are settled
        # by their cluster or the radius first)
        ids = np.concatenate((anchors.ids, candidates.ids))
        rows, columns = np.nonzero(close)
        candidates.texts.want(np.union1d(candidates.ids[rows], ids[columns]).tolist())
    # against the anchors, and against the candidates strictly before each one
    near[:, len(anchors) :] &= before
    risky: npt.NDArray[np.bool_] = np.asarray(near.any(axis=1), dtype=bool)
    return risky


def pairwise_cosines(vectors: Sequence[SparseVector]) -> npt.NDArray[np.float32]:
    """``float32 (m, m)``: the cosines of ``m`` unit vectors (a few dozen: the candidates of one
    list), as one dense product over the terms they hold."""
    if not vectors:
        return np.zeros((0, 0), np.float32)
    hashes = np.concatenate([v.hashes for v in vectors])
    terms, column = np.unique(hashes, return_inverse=True)
    dense = np.zeros((len(vectors), len(terms)), np.float32)  # a threshold reads them: enough
    rows = np.repeat(np.arange(len(vectors)), [len(v.hashes) for v in vectors])
    dense[rows, column] = np.concatenate([v.weights for v in vectors])
    out: npt.NDArray[np.float32] = dense @ dense.T
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
        int(one.fingerprints[0]),
        int(one.clusters[0]),
        lambda: one.vector(0),
        others,
        None if one.texts is None else lambda: one.compared(0),
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
    if found.text_rule[best]:
        return Reason(other, distance, str(found.text_rule[best]), _figure(found.text_score[best]))
    return Reason(other, distance, "cosine", _figure(found.cosine[best]))


def _figure(value: float) -> float:
    return round(float(value), 4)
