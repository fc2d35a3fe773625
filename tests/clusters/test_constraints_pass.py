"""The constrained rule by the bounded leader pass (pipeline/clusters/constraints_pass.py) equals
cluster_rules.constrained_assign over every verified candidate pair, on random corpora and
random graphs with random overrides of every kind, whatever the block size; and a clique with a
pinned canonical and not_duplicate members costs verifications linear in its size."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from hypothesis import given
from hypothesis import settings as examples
from hypothesis import strategies as st

from recengine.index.neardup.radius import IdArray, Pairs
from recengine.pipeline.clusters.constraints import (
    EDITOR,
    ClusterRules,
    Measure,
    constrained_assign,
)
from recengine.pipeline.clusters.constraints_pass import ruled_leader_blocks
from recengine.pipeline.clusters.leader_pass import leader_blocks
from recengine.pipeline.clusters.leader_rule import Edge, Member
from tests.clusters.test_leader_pass import (
    Judge,
    Rank,
    candidate_pairs,
    key,
    pass_input,
    random_corpus,
)


class FakeGraph:
    """A candidate relation given as pairs."""

    def __init__(self, pairs: Sequence[tuple[int, int]]) -> None:
        self.adjacent: dict[int, set[int]] = {}
        for a, b in pairs:
            self.adjacent.setdefault(a, set()).add(b)
            self.adjacent.setdefault(b, set()).add(a)

    def of(self, article_id: int) -> IdArray:
        return np.array(sorted(self.adjacent.get(article_id, ())), np.int64)

    def among(self, article_id: int, ids: IdArray) -> IdArray:
        mine = np.array(sorted(self.adjacent.get(article_id, ())), np.int64)
        kept: IdArray = ids[np.isin(ids, mine)]
        return kept


def measure_of(judge: Judge) -> Measure:
    def measure(a: int, b: int) -> tuple[int, float]:
        e = judge.edge(a, b)
        return e.distance, e.score

    return measure


def random_rules(
    rng: np.random.Generator, ids: list[int], cands: list[tuple[int, int]], judge: Judge
) -> ClusterRules:
    """A few overrides of every kind: pairs drawn from the candidate pairs (where they matter)
    and from any two articles; must-links may contradict cannot-links (must-link wins)."""
    if len(ids) < 2:
        return ClusterRules()

    def pairs(count: int) -> set[tuple[int, int]]:
        out = set()
        for _ in range(count):
            if cands and rng.random() < 0.7:
                out.add(cands[int(rng.integers(0, len(cands)))])
            else:
                a, b = (int(x) for x in rng.choice(ids, size=2, replace=False))
                out.add((min(a, b), max(a, b)))
        return out

    def some(count: int) -> frozenset[int]:
        return frozenset(int(x) for x in rng.choice(ids, size=min(count, len(ids)), replace=False))

    measure = measure_of(judge)
    together = tuple(
        Edge(a, b, *measure(a, b), EDITOR) for a, b in sorted(pairs(int(rng.integers(0, 5))))
    )
    return ClusterRules(
        apart=frozenset(pairs(int(rng.integers(0, 6)))),
        alone=some(int(rng.integers(0, 3))),
        together=together,
        leaders=some(int(rng.integers(0, 4))),
    )


def ruled(
    ids: list[int],
    fps: dict[int, int],
    ranks: dict[int, Rank],
    extra: set,
    rules: ClusterRules,
    graph: FakeGraph,
    judge: Judge,
    block: int,
    k: int = 3,
) -> list[Member]:
    order, prints, pairs = pass_input(ids, fps, ranks, extra)
    return ruled_leader_blocks(
        order,
        prints,
        k,
        pairs,
        rules,
        graph,
        judge.verify,
        measure_of(judge),
        block=block,
    )


@examples(max_examples=300, deadline=None)
@given(
    st.integers(0, 2**32),
    st.integers(0, 40),
    st.integers(0, 12),
    st.integers(0, 6),
    st.integers(1, 9),
)
def test_ruled_pass_equals_constrained_assign(
    seed: int, n: int, clique: int, fail: int, block: int
) -> None:
    rng = np.random.default_rng(seed)
    ids, fps, ranks, extra = random_corpus(rng, n, clique, k=3)
    judge = Judge(fps, fail, seed)
    cands = candidate_pairs(ids, fps, 3, extra)
    rules = random_rules(rng, ids, cands, judge)
    edges = [judge.edge(a, b) for a, b in cands if judge.ok(a, b)]
    expected = constrained_assign(ranks, edges, rules, measure_of(judge))
    got = ruled(ids, fps, ranks, extra, rules, FakeGraph(cands), judge, block)
    assert key(got) == key(expected)


def test_ruled_pass_equals_constrained_assign_on_random_graphs() -> None:
    """Candidate graphs given as extra pairs only (fingerprints too far apart), dense enough
    for chains of refusals and units joining units."""
    rng = np.random.default_rng(11)
    for round_ in range(300):
        n = int(rng.integers(2, 30))
        ids = [int(i) for i in rng.choice(5 * n, size=n, replace=False)]
        ranks = {i: (0, float(rng.integers(0, 5)), i) for i in ids}
        fps = {i: (i * 0x0F0F0F0F0F0F0F0F) % 2**64 for i in ids}  # pairwise > 0 bits apart
        extra = {(min(a, b), max(a, b)) for a in ids for b in ids if a != b and rng.random() < 0.15}
        judge = Judge(fps, int(rng.integers(0, 5)), round_)
        cands = sorted(extra)
        rules = random_rules(rng, ids, cands, judge)
        edges = [judge.edge(a, b) for a, b in cands if judge.ok(a, b)]
        expected = constrained_assign(ranks, edges, rules, measure_of(judge))
        block = int(rng.integers(1, 8))
        got = ruled(ids, fps, ranks, extra, rules, FakeGraph(cands), judge, block, k=0)
        assert key(got) == key(expected)


def test_without_rules_the_ruled_pass_is_the_plain_pass() -> None:
    rng = np.random.default_rng(5)
    ids, fps, ranks, extra = random_corpus(rng, 60, 30, k=3)
    judge = Judge(fps, 2, 5)
    plain = ruled(ids, fps, ranks, extra, ClusterRules(), FakeGraph([]), judge, 8)
    order = sorted(ids, key=ranks.__getitem__)
    a = np.array([p[0] for p in sorted(extra)], dtype=np.int64)
    b = np.array([p[1] for p in sorted(extra)], dtype=np.int64)
    reference = leader_blocks(
        np.array(order, dtype=np.int64),
        np.array([fps[i] for i in order], dtype=np.uint64),
        3,
        Pairs(a, b, np.zeros(len(a), np.uint8)),
        judge.verify,
        block=8,
    )
    assert key(plain) == key(reference)


class Clique:
    """Every article a candidate of every other (a templated page type), without the n^2
    pairs."""

    def __init__(self, ids: IdArray) -> None:
        self.ids = ids

    def of(self, article_id: int) -> IdArray:
        kept: IdArray = self.ids[self.ids != article_id]
        return kept

    def among(self, article_id: int, ids: IdArray) -> IdArray:
        kept: IdArray = ids[np.isin(ids, self.ids) & (ids != article_id)]
        return kept


def test_a_clique_of_2000_with_a_pinned_canonical_costs_linear_verifications() -> None:
    """A pinned canonical, a page not_duplicate against all, a not_duplicate pair and a
    same_article pair in a clique of 2,000: about two verifications per page (the pass, then
    the rows re-pointed to the pinned page), not one per pair (2e6)."""
    n = 2_000
    rng = np.random.default_rng(1)
    fps = np.uint64(0xDEADBEEF12345678) ^ (
        np.uint64(1) << rng.integers(0, 64, size=n).astype(np.uint64)
    )
    ids = np.arange(1, n + 1, dtype=np.int64)
    calls: list[tuple[int, int]] = []
    measured: list[tuple[int, int]] = []

    def verify(a: int, c: int) -> Edge | None:
        calls.append((a, c))
        return Edge(min(a, c), max(a, c), 2, 0.9, "rule")

    def measure(a: int, c: int) -> tuple[int, float]:
        measured.append((a, c))
        return 2, 0.9

    pinned, alone, apart, mate = 1_000, 500, (1, 700), (300, 1_500)
    rules = ClusterRules(
        apart=frozenset({apart}),
        alone=frozenset({alone}),
        together=(Edge(*mate, 2, 0.9, EDITOR),),
        leaders=frozenset({pinned}),
    )
    empty = Pairs(np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros(0, np.uint8))
    rows = ruled_leader_blocks(ids, fps, 3, empty, rules, Clique(ids), verify, measure)
    head = {m.article_id: m.canonical_id for m in rows}
    assert alone not in head and apart[1] not in head  # a singleton, and its own canonical
    assert pinned not in head and head[1] == pinned
    assert set(head.values()) == {pinned} and len(head) == n - 3
    assert head[mate[1]] == pinned and head[mate[0]] == pinned
    assert len(calls) + len(measured) <= 3 * n  # linear: ~n in the pass, ~n re-pointing
