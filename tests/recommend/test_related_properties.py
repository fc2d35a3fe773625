"""Suppression invariants as properties: of the greedy pick, and of whole related lists."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sqlalchemy import delete, insert, select
from sqlalchemy.orm import Session, sessionmaker

from recengine.config import Settings
from recengine.features.hashing import TermHasher
from recengine.features.neardup import NearDupCriterion
from recengine.features.simhash import hamming
from recengine.features.tfidf import SparseVector
from recengine.pipeline.featurize import Featurizer
from recengine.recommend.lists.criterion import NO_CLUSTER, Articles, DuplicateCriterion
from recengine.recommend.lists.curation import Curation
from recengine.recommend.lists.suppress import pick
from recengine.recommend.live import LiveIndex
from recengine.recommend.related import RelatedArticles
from recengine.storage.models import Article, ArticleFeatures, ClusterMember
from recengine.storage.rows.overrides import mark_changed
from recengine.storage.state import begin_write
from tests.factories import javaguide_records
from tests.recommend.test_related import repost
from tests.templates import load

JUDGE = NearDupCriterion(k=8, min_cosine=0.9)
HASHER = TermHasher()


def near(base: int, flips: int, seed: int) -> int:
    rng = np.random.default_rng(seed)
    for bit in rng.choice(64, flips, replace=False):
        base ^= 1 << int(bit)
    return base


def vector(weights: np.ndarray[Any, Any]) -> SparseVector:
    """A unit vector over terms t0..t19 (zero weights left out), largest first."""
    order = [int(i) for i in np.argsort(-weights, kind="stable") if weights[i] > 0]
    w = weights[order] / np.linalg.norm(weights[order])
    terms = [f"t{i}" for i in order]
    return SparseVector(tuple(terms), HASHER.hashes(terms), w.astype(np.float32))


def articles(seed: int, n: int, n_clusters: int) -> tuple[Articles, Articles]:
    """Candidates and a query around 4 topics: near fingerprints with near vectors, or not."""
    rng = np.random.default_rng(seed)
    roots = rng.integers(0, 2**63, 4, dtype=np.int64).astype(np.uint64) * 2
    bases = rng.random((4, 20)) + 0.01
    prints, vectors, clusters = [], [], []
    for i in range(n + 1):
        topic = int(rng.integers(4)) if i else 0
        prints.append(near(int(roots[topic]), int(rng.integers(0, 12)), seed + i))
        noise = rng.random(20) * (0.05 if rng.random() < 0.6 else 2.0)
        vectors.append(vector(bases[topic] + noise))
        clusters.append(int(rng.integers(0, n_clusters)) if rng.random() < 0.4 else NO_CLUSTER)
    everyone = Articles(
        np.arange(n + 1, dtype=np.int64),
        np.array(prints, np.uint64),
        np.array(clusters, np.int64),
        lambda j: vectors[j],
    )
    return everyone.take(range(1, n + 1)), everyone.take([0])


CANDIDATE_SETS = {  # the random candidate lists of :func:`articles`
    "seed": st.integers(0, 2**32 - 1),
    "n": st.integers(0, 40),
    "limit": st.integers(1, 15),
    "n_clusters": st.integers(1, 6),
}


@settings(max_examples=200, deadline=None)
@given(**CANDIDATE_SETS)
def test_pick_keeps_no_duplicates(seed: int, n: int, limit: int, n_clusters: int) -> None:
    candidates, query = articles(seed, n, n_clusters)
    got = pick(candidates, query, DuplicateCriterion(JUDGE), limit)

    def dup(a: Articles, i: int, b: Articles, j: int) -> bool:
        ca, cb = int(a.clusters[i]), int(b.clusters[j])
        if ca == cb != NO_CLUSTER:
            return True
        fa, fb = int(a.fingerprints[i]), int(b.fingerprints[j])
        return JUDGE.judge(fa, a.vector(i), fb, b.vector(j)).duplicate

    kept = got.kept
    assert len(kept) <= limit and kept == sorted(kept)
    assert not any(dup(query, 0, candidates, i) for i in kept)
    assert not any(dup(candidates, i, candidates, j) for i in kept for j in kept if i < j)
    seen = set(kept) | {s.position for s in got.suppressed}
    assert seen == set(range(max(seen, default=-1) + 1))  # every candidate up to the last
    for s in got.suppressed:
        if s.duplicate_of == 0:
            other, j = query, 0
        else:
            other, j = candidates, s.duplicate_of - 1
            assert j in kept and j < s.position
        assert dup(candidates, s.position, other, j)
        assert s.distance == hamming(
            int(candidates.fingerprints[s.position]), int(other.fingerprints[j])
        )
        # the reason names the rule that matched: the cluster, else the vectors' cosine
        if int(candidates.clusters[s.position]) == int(other.clusters[j]) != NO_CLUSTER:
            assert (s.reason.rule, s.reason.score) == ("cluster", None)
        else:
            verdict = JUDGE.judge(
                int(candidates.fingerprints[s.position]),
                candidates.vector(s.position),
                int(other.fingerprints[j]),
                other.vector(j),
            )
            assert s.reason.rule == "cosine" and s.reason.score == round(verdict.cosine, 4)
            assert verdict.cosine >= JUDGE.min_cosine


def with_canonicals(candidates: Articles, seed: int) -> Articles:
    """The candidates with clusters as stored ones are: a cluster's id is its canonical's id
    (the canonical maps to itself); some canonicals are candidates, some are not."""
    rng = np.random.default_rng(seed)
    clusters = candidates.clusters.copy()
    for c in np.unique(clusters[clusters != NO_CLUSTER]):
        members = np.flatnonzero(clusters == c)
        if rng.random() < 0.7:  # the canonical is one of the candidates, anywhere
            clusters[members] = candidates.ids[rng.choice(members)]
        else:  # not a candidate (filtered out, or beyond the window)
            clusters[members] = 10_000 + int(c)
    return Articles(candidates.ids, candidates.fingerprints, clusters, candidates.vector)


@settings(max_examples=200, deadline=None)
@given(**CANDIDATE_SETS, pins=st.integers(0, 3))
def test_pick_prefers_the_canonical_of_a_cluster(
    seed: int, n: int, limit: int, n_clusters: int, pins: int
) -> None:
    plain, query = articles(seed, n, n_clusters)
    candidates = with_canonicals(plain, seed)
    criterion = DuplicateCriterion(JUDGE)
    got = pick(candidates, query, criterion, limit, prefer_canonical=pins)
    kept, ids, clusters = got.kept, candidates.ids, candidates.clusters
    where = {int(a): p for p, a in enumerate(ids)}
    assert len(kept) <= limit and len(set(kept)) == len(kept)
    pinned = [i for i in kept if i < pins]  # the pins keep their places, first
    assert kept[: len(pinned)] == pinned == sorted(pinned)
    shown = [int(clusters[i]) for i in kept if clusters[i] != NO_CLUSTER]
    assert len(shown) == len(set(shown))  # one article of a cluster at most
    cut = {s.position: s.duplicate_of for s in got.suppressed}
    for i in kept:
        canonical = where.get(int(clusters[i]), -1)
        if i >= pins and canonical not in (-1, i) and canonical >= pins:
            # a copy is shown only where its original, a candidate, was cut for another reason
            assert canonical in cut and cut[canonical] != int(ids[i])
    for canonical, copy in got.stands_for.items():
        assert canonical in kept and copy < canonical
        assert int(clusters[copy]) == int(ids[canonical]) == int(clusters[canonical])
    # with no canonical to move, the walk is the plain one
    if not got.stands_for and all(
        where.get(int(c), -1) <= p for p, c in enumerate(clusters) if c != NO_CLUSTER
    ):
        assert got == pick(candidates, query, criterion, limit)


@settings(max_examples=200, deadline=None)
@given(**CANDIDATE_SETS)
def test_pick_skipping_pairs_that_cannot_be_duplicates_changes_nothing(
    seed: int, n: int, limit: int, n_clusters: int
) -> None:
    """The walk judges only candidates near an anchor or an earlier one (``may_duplicate``);
    with a same_article override somewhere it judges every one: the same answer."""
    candidates, query = articles(seed, n, n_clusters)
    criterion = DuplicateCriterion(JUDGE)
    fast = pick(candidates, query, criterion, limit)
    every = pick(candidates, query, criterion, limit, curation=Curation(together={(-2, -1)}))
    assert fast == every


@dataclass(frozen=True)
class Facts:
    """What the database holds, by caller id, to check answers against the criterion."""

    internal: dict[str, int]
    prints: dict[int, int]
    vectors: dict[int, SparseVector]
    judge: NearDupCriterion

    def distance(self, a: str, b: str) -> int:
        return hamming(self.prints[self.internal[a]], self.prints[self.internal[b]])

    def near_duplicates(self, a: str, b: str) -> bool:
        x, y = self.internal[a], self.internal[b]
        verdict = self.judge.judge(self.prints[x], self.vectors[x], self.prints[y], self.vectors[y])
        return verdict.duplicate


def facts(factory: sessionmaker[Session], settings: Settings) -> Facts:
    with factory() as session:
        ids = dict(session.execute(select(Article.external_id, Article.id)).all())
        rows = session.execute(
            select(ArticleFeatures.article_id, ArticleFeatures.fingerprint, ArticleFeatures.vector)
        ).all()
    return Facts(
        ids,
        {r[0]: r[1] for r in rows},
        {r[0]: SparseVector.from_bytes(r[2]) for r in rows},
        NearDupCriterion.from_settings(settings),
    )


def test_related_lists_never_hold_duplicates(
    settings: Settings,
    factory: sessionmaker[Session],
    featurizer: Featurizer,
    data_dir: Path,
) -> None:
    records = javaguide_records(data_dir, 40)
    records += [repost(records[i], n) for i in (0, 1, 2, 3, 8) for n in (1, 2)]
    load(factory, featurizer, records)
    service = RelatedArticles(settings, LiveIndex(settings, factory, background=False))
    known = facts(factory, settings)
    internal = known.internal
    names = sorted(internal)

    @settings_for_db
    @given(
        query=st.sampled_from(names),
        k=st.integers(1, 20),
        clusters=st.dictionaries(st.sampled_from(names), st.sampled_from(names), max_size=25),
    )
    def check(query: str, k: int, clusters: dict[str, str]) -> None:
        with factory() as session, session.begin():  # as a writer does: members get a seq
            state = begin_write(session=session)
            session.execute(delete(ClusterMember))
            mark_changed(session=session, article_ids=list(internal.values()), seq=state.seq)
            version = state.active_model_version
            if clusters:
                session.execute(
                    insert(ClusterMember),
                    [
                        {
                            "article_id": internal[a],
                            "canonical_id": internal[c],
                            "distance": 0,
                            "model_version": version,
                        }
                        for a, c in clusters.items()
                    ],
                )
        with factory() as session:
            body = service.related(query, session=session, k=k)
        assert_no_duplicates(body, query, clusters, known)

    check()


settings_for_db = settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)


def assert_no_duplicates(
    body: dict[str, Any], query: str, clusters: dict[str, str], known: Facts
) -> None:
    heads = set(clusters.values())

    def cluster(x: str) -> str | None:
        return clusters.get(x, x if x in heads else None)

    def dup(a: str, b: str) -> bool:
        same = cluster(a) is not None and cluster(a) == cluster(b)
        return same or known.near_duplicates(a, b)

    shown = [e["id"] for e in body["items"]]
    assert query not in shown
    assert not any(dup(query, x) for x in shown)
    assert not any(dup(a, b) for i, a in enumerate(shown) for b in shown[i + 1 :])
    for s in body["suppressed"]:
        assert s["duplicate_of"] == query or s["duplicate_of"] in shown
        assert dup(s["id"], s["duplicate_of"])
        assert s["distance"] == known.distance(s["id"], s["duplicate_of"])
