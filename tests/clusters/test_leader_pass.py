"""The reindex's leader pass in rank blocks (pipeline/clusters/leader_pass.py) gives exactly the
clusters of the reference (every candidate pair of a brute-force self-join verified, then
clustering.assign), on random data with ties, passage pairs and a large clique, whatever the
block size; and a cluster whose articles are all within the radius of each other costs one
verification per article, not one per pair."""

from __future__ import annotations

import random
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
import pytest
from hypothesis import given
from hypothesis import settings as examples
from hypothesis import strategies as st
from sqlalchemy import select
from sqlalchemy.orm import Session, sessionmaker

from recengine.config import Settings
from recengine.features.neardup import NearDupCriterion
from recengine.features.tfidf import SparseVector
from recengine.index.neardup.radius import IdArray, Pairs
from recengine.pipeline.clusters import leader_pass
from recengine.pipeline.clusters.leader_pass import leader_blocks, rank_order
from recengine.pipeline.clusters.leader_rule import Edge, Member, assign, rank_key, verify_pairs
from recengine.pipeline.clusters.upkeep import Deduplicator
from recengine.pipeline.featurize import Featurizer
from recengine.pipeline.ingest.ingester import Ingester
from recengine.pipeline.reindex.full import reindex
from recengine.storage.db import transaction
from recengine.storage.models import Article, ArticleFeatures
from recengine.storage.state import read_state
from tests.neardup_helpers import clusters, corpus

Rank = tuple[int, float, int]


class Judge:
    """A symmetric "verifies" relation: a pair passes unless its hash falls in ``fail``
    tenths; counts the calls."""

    def __init__(self, fps: dict[int, int], fail: int, seed: int) -> None:
        self.fps, self.fail, self.seed, self.calls = fps, fail, seed, 0

    def ok(self, a: int, b: int) -> bool:
        lo, hi = min(a, b), max(a, b)
        return (lo * 1_000_003 + hi * 7_919 + self.seed) % 10 >= self.fail

    def edge(self, a: int, b: int) -> Edge:
        lo, hi = min(a, b), max(a, b)
        distance = (self.fps[lo] ^ self.fps[hi]).bit_count()
        return Edge(lo, hi, distance, 1.0 - (lo + hi) % 7 / 10, "rule")

    def verify(self, a: int, b: int) -> Edge | None:
        self.calls += 1
        return self.edge(a, b) if self.ok(a, b) else None

    def edges(self, pairs: list[tuple[int, int]]) -> list[Edge]:
        """``edge`` of each of ``pairs`` (smaller id first) that is ``ok``, in their order: the
        same arithmetic on arrays (the big clique's ~720,000 pairs one by one took ~3 s; a
        difference from ``verify``'s edges would fail the tests, never pass them)."""
        both = np.array(pairs, dtype=np.int64).reshape(-1, 2)
        lo, hi = both[:, 0], both[:, 1]
        ok = (lo * 1_000_003 + hi * 7_919 + self.seed) % 10 >= self.fail
        lo, hi = lo[ok], hi[ok]
        prints = np.zeros(max(self.fps, default=0) + 1, np.uint64)  # by id
        prints[list(self.fps)] = list(self.fps.values())
        distance = np.bitwise_count(prints[lo] ^ prints[hi]).tolist()
        score = (1.0 - (lo + hi) % 7 / 10).tolist()
        return [
            Edge(a, b, d, s, "rule")
            for a, b, d, s in zip(lo.tolist(), hi.tolist(), distance, score, strict=True)
        ]


def reference(
    ids: list[int], fps: dict[int, int], ranks: dict[int, Rank], k: int, extra: set, judge: Judge
) -> list[Member]:
    """Every pair within ``k`` (brute force) or in ``extra``, verified, then ``assign``."""
    edges = judge.edges(candidate_pairs(ids, fps, k, extra))
    return assign({i: ranks[i] for e in edges for i in (e.a, e.b)}, edges)


def candidate_pairs(
    ids: list[int], fps: dict[int, int], k: int, extra: set
) -> list[tuple[int, int]]:
    """Every pair within ``k`` (brute force) or in ``extra``, sorted, smaller id first."""
    arr = np.array([fps[i] for i in ids], dtype=np.uint64)
    idx = np.array(ids, dtype=np.int64)
    found = [np.array(sorted(extra), dtype=np.int64).reshape(-1, 2)]
    for row in range(len(ids)):
        near = idx[np.flatnonzero(np.bitwise_count(arr[row + 1 :] ^ arr[row]) <= k) + row + 1]
        found.append(np.stack([np.minimum(near, idx[row]), np.maximum(near, idx[row])], 1))
    both = np.concatenate(found)
    span = int(both.max(initial=0)) + 1
    keys = np.unique(both[:, 0] * span + both[:, 1])  # sorted by (smaller, larger)
    return list(zip((keys // span).tolist(), (keys % span).tolist(), strict=True))


def pass_input(
    ids: list[int], fps: dict[int, int], ranks: dict[int, Rank], extra: set
) -> tuple[IdArray, npt.NDArray[np.uint64], Pairs]:
    """A test corpus as the leader pass takes it: ids and fingerprints in rank order, and the
    extra candidate pairs."""
    order = sorted(ids, key=ranks.__getitem__)
    a = np.array([p[0] for p in sorted(extra)], dtype=np.int64)
    b = np.array([p[1] for p in sorted(extra)], dtype=np.int64)
    return (
        np.array(order, dtype=np.int64),
        np.array([fps[i] for i in order], dtype=np.uint64),
        Pairs(a, b, np.zeros(len(a), np.uint8)),
    )


def blocks(
    ids: list[int],
    fps: dict[int, int],
    ranks: dict[int, Rank],
    k: int,
    extra: set,
    judge: Judge,
    block: int,
) -> list[Member]:
    order, prints, pairs = pass_input(ids, fps, ranks, extra)
    return leader_blocks(order, prints, k, pairs, judge.verify, block=block)


def random_corpus(
    rng: np.random.Generator, n: int, clique: int, k: int
) -> tuple[list[int], dict[int, int], dict[int, Rank], set]:
    """Fingerprints around a few centres (random flips: some within ``k``, some not), a clique
    of ``clique`` all within ``k - 1`` of each other, dates with ties and undated ones, and
    random extra (passage) pairs."""
    centres = rng.integers(0, 2**63, size=max(1, n // 8), dtype=np.uint64)
    ids = [int(i) for i in rng.choice(10 * (n + clique) + 10, size=n + clique, replace=False)]
    fps: dict[int, int] = {}
    for j, i in enumerate(ids):
        if j < clique:  # one centre, at most one bit flipped: pairwise distance <= 2
            fps[i] = int(centres[0]) ^ (1 << int(rng.integers(0, 64)) if rng.random() < 0.9 else 0)
        else:
            fp = int(centres[int(rng.integers(0, len(centres)))])
            for bit in rng.integers(0, 64, size=int(rng.integers(0, k + 3))).tolist():
                fp ^= 1 << bit
            fps[i] = fp
    ranks = {
        i: rank_key(i, None) if rng.random() < 0.1 else (0, float(rng.integers(0, 6)), i)
        for i in ids
    }
    extra = set()
    for _ in range(n // 2):
        a, b = (int(x) for x in rng.choice(ids, size=2, replace=False))
        extra.add((min(a, b), max(a, b)))
    return ids, fps, ranks, extra


def key(members: list[Member]) -> list[tuple[int, int, int, float, str]]:
    return [(m.article_id, m.canonical_id, m.distance, m.score, m.rule) for m in members]


@examples(max_examples=150, deadline=None)
@given(
    st.integers(0, 2**32),
    st.integers(0, 40),
    st.integers(0, 12),
    st.integers(0, 6),
    st.integers(1, 9),
)
def test_blocks_equal_the_reference(seed: int, n: int, clique: int, fail: int, block: int) -> None:
    rng = np.random.default_rng(seed)
    ids, fps, ranks, extra = random_corpus(rng, n, clique, k=3)
    judge = Judge(fps, fail, seed)
    expected = key(reference(ids, fps, ranks, 3, extra, judge))
    assert key(blocks(ids, fps, ranks, 3, extra, judge, block)) == expected


@pytest.fixture(scope="module")
def big_clique() -> tuple[list[int], dict[int, int], dict[int, Rank], set, Judge, list[Member]]:
    """A clique of 1,200 among 600 others, and its reference clusters: computed once for every
    block size (the brute-force reference verifies the clique's ~720,000 pairs one by one)."""
    rng = np.random.default_rng(64)
    ids, fps, ranks, extra = random_corpus(rng, 600, 1_200, k=3)
    judge = Judge(fps, 2, 64)  # one pair in five fails: several canonicals in the clique
    expected = reference(ids, fps, ranks, 3, extra, judge)
    in_clique = set(ids[:1_200])
    heads = {m.canonical_id for m in expected if m.article_id in in_clique}
    assert len([m for m in expected if m.article_id in in_clique]) > 1_000 and len(heads) > 1
    return ids, fps, ranks, extra, judge, expected


@pytest.mark.parametrize("block", [1, 64, 512, 4_096])
def test_a_big_clique_with_others_equals_the_reference(block: int, big_clique: Any) -> None:
    ids, fps, ranks, extra, judge, expected = big_clique
    assert key(blocks(ids, fps, ranks, 3, extra, judge, block)) == key(expected)


def test_leader_blocks_equal_assign_on_random_graphs() -> None:
    """Random candidate graphs given as extra pairs only (fingerprints too far apart)."""
    rng = np.random.default_rng(3)
    for _ in range(200):
        n = int(rng.integers(2, 30))
        a, b = np.triu_indices(n, 1)
        keep = rng.random(len(a)) < 0.2
        a, b = a[keep].astype(np.int64), b[keep].astype(np.int64)
        ok = {(x, y) for x, y in zip(a.tolist(), b.tolist(), strict=True) if rng.random() < 0.6}
        ranks = {i: (0, float(rng.integers(0, 5)), i) for i in range(n)}
        edges = [Edge(x, y, 1, 0.9) for x, y in sorted(ok)]

        def verify(x: int, c: int, ok: set = ok) -> Edge | None:
            pair = (min(x, c), max(x, c))
            return Edge(*pair, 1, 0.9) if pair in ok else None

        order = np.array(sorted(range(n), key=ranks.__getitem__), dtype=np.int64)
        far = order.astype(np.uint64) * np.uint64(0x0F0F0F0F0F0F0F0F)  # pairwise > 0 bits
        extra = Pairs(a, b, np.zeros(len(a), np.uint8))
        lazy = leader_blocks(order, far, 0, extra, verify, block=int(rng.integers(1, 8)))
        full = assign({i: ranks[i] for e in edges for i in (e.a, e.b)}, edges)
        assert [(m.article_id, m.canonical_id) for m in lazy] == [
            (m.article_id, m.canonical_id) for m in full
        ]


def test_a_clique_of_20000_costs_one_verification_and_one_hit_per_article() -> None:
    n = 20_000
    rng = np.random.default_rng(1)
    fps = np.uint64(0xDEADBEEF12345678) ^ (
        np.uint64(1) << rng.integers(0, 64, size=n).astype(np.uint64)
    )
    ids = np.arange(1, n + 1, dtype=np.int64)
    calls: list[tuple[int, int]] = []
    loaded: list[int] = []

    def verify(a: int, c: int) -> Edge | None:
        calls.append((a, c))
        return Edge(min(a, c), max(a, c), 2, 0.9)

    empty = Pairs(np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros(0, np.uint8))
    members = leader_blocks(ids, fps, 3, empty, verify, lambda x: loaded.append(len(x)))
    assert len(members) == n - 1 and {m.canonical_id for m in members} == {1}
    assert len(calls) == n - 1 and {c for _, c in calls} == {1}
    assert max(loaded) <= leader_pass.BLOCK + 1  # a block's own texts and its one canonical


def test_rank_order_is_rank_key_order() -> None:
    ids = np.array([5, 3, 9, 1, 7], dtype=np.int64)
    fps = ids.astype(np.uint64) * np.uint64(3)
    day = datetime(2024, 1, 1, tzinfo=UTC)
    dates = {5: day, 3: None, 9: day.replace(day=2), 1: day}  # 7 missing: undated
    got, got_fps = rank_order(ids, fps, lambda part: {i: dates[i] for i in part if i in dates}, 2)
    assert got.tolist() == sorted(ids.tolist(), key=lambda i: rank_key(i, dates.get(i)))
    assert got.tolist() == [1, 5, 9, 3, 7] and got_fps.tolist() == (got * 3).tolist()


def test_block_must_be_positive() -> None:
    empty = np.zeros(0, np.int64)
    none = Pairs(empty, empty, np.zeros(0, np.uint8))
    with pytest.raises(ValueError, match="block"):
        leader_blocks(empty, empty.astype(np.uint64), 3, none, lambda a, c: None, block=0)


def weather(n: int, start: int) -> list[dict[str, Any]]:
    """Templated pages (one page type, a few values changed): near-duplicates of each other,
    published in a burst with ties, some before the articles they sit beside."""
    rnd = random.Random(start)
    return [
        {
            "id": f"weather-{i}",
            "title": f"北京天气预报 {rnd.randint(1, 12)}月{rnd.randint(1, 28)}日",
            "content": (
                f"北京市气象台今天{rnd.randint(6, 18)}时发布天气预报：今天白天"
                f"{rnd.choice(('晴', '多云', '阴', '小雨'))}，最高气温{rnd.randint(10, 35)}℃，"
                f"最低气温{rnd.randint(-5, 9)}℃。\n气象台提醒：近期早晚温差较大，请市民注意适时"
                "增减衣物，预防感冒；雨天路滑，驾车出行请减速慢行，注意交通安全。空气质量方面，"
                "今天全市空气质量以良为主，首要污染物为细颗粒物，易感人群应适当减少户外活动。更多"
                "天气信息请关注本台官方网站和微信公众号，或拨打气象服务热线查询未来七天的天气预报。"
            ),
            "published_at": f"2024-01-{1 + i // 20:02d}T00:00:00+00:00",
        }
        for i in range(start, start + n)
    ]


def test_reindex_recluster_equals_every_candidate_pair_verified(
    factory: sessionmaker[Session],
    featurizer: Featurizer,
    settings: Settings,
    data_dir: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(leader_pass, "BLOCK", 7)  # many blocks, the clique across them
    bases, reposts = corpus(data_dir, 30, 10)
    ingester = Ingester(factory, featurizer)
    ingester.ingest_records(bases + weather(80, 0) + reposts)
    reindex(factory=factory, featurizer=featurizer)
    got = clusters(factory)
    # the reference: every candidate pair of both sources (radius and passages) verified
    dedup = Deduplicator(settings)
    with transaction(factory) as session:
        index = dedup.synced(session)
        pairs = index.pairs()
        version = read_state(session=session).active_model_version
        feats = session.scalars(
            select(ArticleFeatures).where(ArticleFeatures.model_version == version)
        ).all()
        articles = {a.id: a for a in session.scalars(select(Article))}
    edges = verify_pairs(
        pairs.a,
        pairs.b,
        {f.article_id: f.fingerprint for f in feats},
        {f.article_id: SparseVector.from_bytes(f.vector) for f in feats},
        NearDupCriterion.from_settings(settings),
        {i: featurizer.compared(a.title, a.content) for i, a in articles.items()},
    )
    ranks = {i: rank_key(i, articles[i].published_at) for e in edges for i in (e.a, e.b)}
    names = {i: a.external_id for i, a in articles.items()}
    expected = {
        names[m.article_id]: (names[m.canonical_id], m.distance) for m in assign(ranks, edges)
    }
    assert got == expected
    heads = [head for name, (head, _) in got.items() if name.startswith("weather-")]
    assert len(heads) >= 70 and len(set(heads)) <= 3  # the pages form a cluster
    assert all(got[r["id"]][0] == r["id"].split("-", 1)[1] for r in reposts)
