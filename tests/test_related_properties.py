"""Suppression invariants as properties: of the greedy pick, and of whole related lists."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sqlalchemy import delete, insert, select
from sqlalchemy.orm import Session, sessionmaker

from recengine.config import Settings
from recengine.features.simhash import hamming
from recengine.pipeline.featurize import Featurizer
from recengine.recommend.criterion import NO_CLUSTER, DuplicateCriterion
from recengine.recommend.live import LiveIndex
from recengine.recommend.related import RelatedArticles
from recengine.recommend.suppress import Articles, pick
from recengine.storage.models import Article, ArticleFeatures, ClusterMember
from tests.factories import javaguide_records
from tests.test_related import load, repost

K = 3


def near(base: int, flips: int, seed: int) -> int:
    rng = np.random.default_rng(seed)
    for bit in rng.choice(64, flips, replace=False):
        base ^= 1 << int(bit)
    return base


@settings(max_examples=200, deadline=None)
@given(
    seed=st.integers(0, 2**32 - 1),
    n=st.integers(0, 40),
    limit=st.integers(1, 15),
    n_clusters=st.integers(1, 6),
)
def test_pick_keeps_no_duplicates(seed: int, n: int, limit: int, n_clusters: int) -> None:
    rng = np.random.default_rng(seed)
    roots = rng.integers(0, 2**63, 4, dtype=np.int64).astype(np.uint64) * 2
    prints = np.array(
        [near(int(roots[rng.integers(4)]), int(rng.integers(0, 7)), seed + i) for i in range(n)],
        dtype=np.uint64,
    )
    clusters = np.where(rng.random(n) < 0.5, rng.integers(0, n_clusters, n), NO_CLUSTER)
    candidates = Articles(np.arange(1, n + 1, dtype=np.int64), prints, clusters.astype(np.int64))
    query = Articles(
        np.array([0], np.int64),
        np.array([near(int(roots[0]), 2, seed)], np.uint64),
        np.array([rng.integers(-1, n_clusters)], np.int64),
    )
    criterion = DuplicateCriterion(K)
    got = pick(candidates, query, criterion, limit)

    def dup(a: int, ca: int, b: int, cb: int) -> bool:
        return hamming(a, b) <= K or (ca == cb and ca != NO_CLUSTER)

    q = (int(query.fingerprints[0]), int(query.clusters[0]))
    kept = [(int(prints[i]), int(clusters[i])) for i in got.kept]
    assert len(kept) <= limit and got.kept == sorted(got.kept)
    assert not any(dup(*q, *x) for x in kept)
    assert not any(dup(*a, *b) for i, a in enumerate(kept) for b in kept[i + 1 :])
    seen = set(got.kept) | {s.position for s in got.suppressed}
    last = max(seen, default=-1)
    assert seen == set(range(last + 1))  # every candidate up to the last is accounted for
    for s in got.suppressed:
        other = (
            q
            if s.duplicate_of == 0
            else (int(prints[s.duplicate_of - 1]), int(clusters[s.duplicate_of - 1]))
        )
        me = (int(prints[s.position]), int(clusters[s.position]))
        assert dup(*me, *other) and s.distance == hamming(me[0], other[0])
        assert s.duplicate_of == 0 or s.duplicate_of - 1 in got.kept


def facts(factory: sessionmaker[Session]) -> tuple[dict[str, int], dict[int, int]]:
    with factory() as session:
        ids = dict(session.execute(select(Article.external_id, Article.id)).all())
        prints = dict(
            session.execute(select(ArticleFeatures.article_id, ArticleFeatures.fingerprint)).all()
        )
    return ids, prints


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
    internal, prints = facts(factory)
    names = sorted(internal)

    @settings_for_db
    @given(
        query=st.sampled_from(names),
        k=st.integers(1, 20),
        clusters=st.dictionaries(st.sampled_from(names), st.sampled_from(names), max_size=25),
    )
    def check(query: str, k: int, clusters: dict[str, str]) -> None:
        with factory() as session, session.begin():
            session.execute(delete(ClusterMember))
            if clusters:
                session.execute(
                    insert(ClusterMember),
                    [
                        {"article_id": internal[a], "canonical_id": internal[c], "distance": 0}
                        for a, c in clusters.items()
                    ],
                )
        with factory() as session:
            body = service.related(query, session=session, k=k)
        assert_no_duplicates(body, query, clusters, internal, prints)

    check()


settings_for_db = settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)


def assert_no_duplicates(
    body: dict[str, Any],
    query: str,
    clusters: dict[str, str],
    internal: dict[str, int],
    prints: dict[int, int],
) -> None:
    heads = set(clusters.values())

    def cluster(x: str) -> str | None:
        return clusters.get(x, x if x in heads else None)

    def dup(a: str, b: str) -> bool:
        same = cluster(a) is not None and cluster(a) == cluster(b)
        return same or hamming(prints[internal[a]], prints[internal[b]]) <= K

    shown = [e["id"] for e in body["items"]]
    assert query not in shown
    assert not any(dup(query, x) for x in shown)
    assert not any(dup(a, b) for i, a in enumerate(shown) for b in shown[i + 1 :])
    for s in body["suppressed"]:
        assert s["duplicate_of"] == query or s["duplicate_of"] in shown
        assert dup(s["id"], s["duplicate_of"])
        assert s["distance"] == hamming(
            prints[internal[s["id"]]], prints[internal[s["duplicate_of"]]]
        )
