"""The near-duplicate criterion applied to ranked lists: one article against many.

The criterion itself is :meth:`recengine.features.neardup.NearDupCriterion.judge`, the one
definition shared with clustering and the duplicates API. Lists hold stored vectors (texts are
read only for the few pairs below), so two articles are duplicates here when they are in one
cluster (``cluster_members``: the texts were verified when the cluster was formed, resemblance
or containment, and the rule is stored with the member's row) or, outside clusters, when their
fingerprints are within ``features.hamming_k`` bits *and* the stored vectors' cosine is at
least ``neardup.min_cosine`` (the vectors-only form of the judge). Two articles of one cluster
are the same article whatever the pair's own verdict, since clustering judged each member
against its canonical.

Clusters miss some pairs: leader clustering joins an article only through the cluster's
canonical, so B can be the same article as A, a member of L's cluster, and stay outside it (on
the demo corpus 20 such pairs were shown in 7,353 lists, BENCHMARKS.md "Copies of one article in
the demo corpus's lists"). So when the articles come with their texts (``Articles.texts``:
related lists and feeds), a pair outside one cluster whose stored vectors' cosine is at least
``neardup.list_text_cosine`` (0.5) is decided on the texts, by the criterion clustering uses
(rule ``resemblance`` or ``containment``): those 20 pairs had cosines 0.65-0.99 (an excerpt and
its source in a smaller corpus 0.54-0.56), while about one other pair per list reaches 0.5, so
it costs about one text comparison per list. Feeds showed the same stories (a copy of what the
reader had just read: 9 pairs in 7,353 one-read feeds, ``bench.list_duplicates --feeds``).

Cost: the Hamming distances to all the others are one vectorised operation; the judge (a cosine
of two sparse vectors) runs only for the few within the radius, the texts only for the pairs
above the cosine.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import Protocol

import numpy as np
import numpy.typing as npt

from recengine.config import Settings
from recengine.features.neardup import Compared, NearDupCriterion
from recengine.features.simhash import hamming_many
from recengine.features.tfidf import SparseVector
from recengine.index.related.scoring import segment_sums

NO_CLUSTER = -1

VectorAt = Callable[[int], SparseVector]


class TextSource(Protocol):
    """What the criterion compares of articles' texts, by article id (``recommend.lists.listing``
    reads them from SQL): ``want`` names, in one call, the articles whose texts a decision may
    soon need, so that they are read together (one query, not one per article)."""

    def __call__(self, article: int) -> Compared: ...

    def want(self, articles: Iterable[int]) -> None: ...


def anonymous(hashes: npt.NDArray[np.uint64], weights: npt.NDArray[np.float32]) -> SparseVector:
    """A stored vector known by term hashes only (as the index holds it): terms left blank."""
    return SparseVector(("",) * len(hashes), hashes, weights)


@dataclass(frozen=True)
class Articles:
    """Articles as the criterion sees them, in parallel: ids ``int64 (n,)``, fingerprints
    ``uint64 (n,)``, clusters ``int64 (n,)`` (canonical id or :data:`NO_CLUSTER`),
    ``vector(i)``, the stored vector of article ``i``, and, when the caller can read texts,
    ``texts``, what the criterion compares of them by article id (both fetched only when
    needed: :meth:`compared`)."""

    ids: npt.NDArray[np.int64]
    fingerprints: npt.NDArray[np.uint64]
    clusters: npt.NDArray[np.int64]
    vector: VectorAt
    texts: TextSource | None = None

    def __len__(self) -> int:
        return len(self.ids)

    def compared(self, i: int) -> Compared:
        """What the criterion compares of article ``i``'s text (``texts`` must be given)."""
        assert self.texts is not None
        return self.texts(int(self.ids[i]))

    def cosines(self, vector: SparseVector) -> npt.NDArray[np.float64]:
        """``float64 (n,)``: the cosine of the unit ``vector`` with each article's stored vector,
        in one vectorised pass (the articles' vectors are stacked once, on first use: a feed
        asks this of its reader's history for every candidate)."""
        hashes, weights, indptr = self._stacked
        if not len(vector) or not len(hashes):
            return np.zeros(len(self), np.float64)
        order = np.argsort(vector.hashes)
        mine, theirs = vector.hashes[order], vector.weights[order].astype(np.float64)
        at = np.minimum(np.searchsorted(mine, hashes), len(mine) - 1)
        products = np.where(mine[at] == hashes, weights * theirs[at], 0.0)
        return segment_sums(products, indptr)

    @cached_property
    def _stacked(
        self,
    ) -> tuple[npt.NDArray[np.uint64], npt.NDArray[np.float64], npt.NDArray[np.int64]]:
        """The stored vectors end to end: hashes ``uint64 (nnz,)``, weights ``float64 (nnz,)``,
        ``indptr`` ``int64 (n + 1,)`` (CSR)."""
        vectors = [self.vector(j) for j in range(len(self))]
        indptr = np.zeros(len(vectors) + 1, np.int64)
        np.cumsum([len(v.hashes) for v in vectors], out=indptr[1:])
        if not vectors:
            return np.zeros(0, np.uint64), np.zeros(0, np.float64), indptr
        hashes = np.concatenate([np.asarray(v.hashes, np.uint64) for v in vectors])
        weights = np.concatenate([np.asarray(v.weights, np.float64) for v in vectors])
        return hashes, weights, indptr

    def take(self, positions: Sequence[int]) -> Articles:
        chosen = list(positions)
        return Articles(
            self.ids[chosen],
            self.fingerprints[chosen],
            self.clusters[chosen],
            lambda j: self.vector(chosen[j]),
            self.texts,
        )


class DuplicateCriterion:
    """Whether an article duplicates any of several others (see the module docstring).

    Args:
        judge: the pairwise near-duplicate criterion.
        text_cosine: pairs outside one cluster whose stored vectors' cosine is at least this
            are decided on their texts when both have one (``neardup.list_text_cosine``; None,
            the setting's 1.0: never).
    """

    def __init__(self, judge: NearDupCriterion, text_cosine: float | None = None) -> None:
        self.judge = judge
        self.text_cosine = text_cosine

    @classmethod
    def from_settings(cls, settings: Settings) -> DuplicateCriterion:
        floor = settings.neardup.list_text_cosine
        return cls(NearDupCriterion.from_settings(settings), floor if floor < 1.0 else None)

    def match(
        self,
        fingerprint: int,
        cluster: int,
        vector: Callable[[], SparseVector],
        others: Articles,
        text: Callable[[], Compared] | None = None,
    ) -> Matches:
        """Which of ``others`` the article duplicates, and why.

        Args:
            fingerprint / cluster: the article's (cluster = canonical id or NO_CLUSTER).
            vector: returns the article's stored vector (called at most once).
            others: the articles to compare with.
            text: returns what the criterion compares of the article's text (called at most
                once; None: the texts are not read, see the module docstring).
        """
        prints = np.asarray(others.fingerprints, dtype=np.uint64)
        distance = hamming_many(np.array(fingerprint, dtype=np.uint64), prints).astype(np.int64)
        same = (others.clusters == cluster) & (cluster != NO_CLUSTER)
        dup = same.copy()
        cosines = np.full(len(prints), np.nan)
        near = np.flatnonzero((distance <= self.judge.k) & ~same)
        mine: SparseVector | None = None
        if len(near):
            mine = vector()
            for j in near.tolist():
                verdict = self.judge.judge(fingerprint, mine, int(prints[j]), others.vector(j))
                dup[j], cosines[j] = verdict.duplicate, verdict.cosine
        rules = np.full(len(prints), "", dtype=object)
        scores = np.full(len(prints), np.nan)
        floor = self.text_cosine
        if text is None or others.texts is None or floor is None:
            return Matches(dup, distance, same, cosines, rules, scores)
        mine = vector() if mine is None else mine
        own: Compared | None = None
        rest = np.flatnonzero(~dup)
        close = rest[others.cosines(mine)[rest] >= floor].tolist()
        others.texts.want(others.ids[close].tolist())
        for j in close:
            own = text() if own is None else own
            decision = self.judge.verify(fingerprint, int(prints[j]), own, others.compared(j))
            if decision is not None:
                dup[j], rules[j], scores[j] = True, decision.rule, decision.score
        return Matches(dup, distance, same, cosines, rules, scores)


@dataclass(frozen=True)
class Matches:
    """The criterion on one article against ``n`` others, in parallel arrays.

    Attributes:
        duplicate: ``bool (n,)`` the article duplicates that one.
        distance: ``int64 (n,)`` Hamming distance of the fingerprints.
        same_cluster: ``bool (n,)`` both are in one cluster (a duplicate by that alone).
        cosine: ``float64 (n,)`` cosine of the stored vectors where the judge ran (within the
            radius, outside a shared cluster), NaN elsewhere.
        text_rule: ``object (n,)`` the rule (``resemblance`` / ``containment``) where the texts
            made the pair a duplicate, ``""`` elsewhere; ``text_score`` ``float64 (n,)`` its
            figure, NaN elsewhere.
    """

    duplicate: npt.NDArray[np.bool_]
    distance: npt.NDArray[np.int64]
    same_cluster: npt.NDArray[np.bool_]
    cosine: npt.NDArray[np.float64]
    text_rule: npt.NDArray[np.object_]
    text_score: npt.NDArray[np.float64]
