"""Incremental leader clustering (pipeline/clusters/leader_updates.py) equals a full recluster
(clustering.assign) after any sequence of additions, edits and deletions, whatever the order,
and does bounded work on a write into a large cluster."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from recengine.pipeline.clusters.leader_rule import Edge, Member, assign, rank_key
from recengine.pipeline.clusters.leader_updates import Rank, relink


class FakeView:
    """A candidate graph, a "verifies" relation and ranks; stored rows as a dict."""

    def __init__(self) -> None:
        self.live: dict[int, Rank] = {}
        self.cands: set[tuple[int, int]] = set()
        self.ok: set[tuple[int, int]] = set()
        self.rows: dict[int, int] = {}
        self.verified = 0
        self._adjacent: dict[int, list[int]] | None = None
        self._seen = -1

    def candidates(self, article_id: int) -> Sequence[int]:
        if self._adjacent is None or self._seen != len(self.cands):
            self._adjacent, self._seen = {}, len(self.cands)
            for a, b in self.cands:
                self._adjacent.setdefault(a, []).append(b)
                self._adjacent.setdefault(b, []).append(a)
        return sorted(c for c in self._adjacent.get(article_id, []) if c in self.live)

    def canonical_candidates(self, article_id: int) -> Sequence[int]:
        # exactly those without a stored row: the run must find the ones it promotes itself
        return [c for c in self.candidates(article_id) if c not in self.rows]

    def among_candidates(self, article_id: int, ids: Sequence[int]) -> Sequence[int]:
        mine = set(self.candidates(article_id))
        return [int(i) for i in ids if int(i) in mine]

    def stored(self, article_ids: Sequence[int]) -> Mapping[int, int]:
        return {i: self.rows[i] for i in article_ids if i in self.rows}

    def unclustered(self, article_ids: Sequence[int]) -> Sequence[int]:
        return [i for i in article_ids if i not in self.rows]

    def members(self, canonical_ids: Sequence[int]) -> Sequence[int]:
        wanted = set(canonical_ids)
        return sorted(m for m, c in self.rows.items() if c in wanted)  # small in tests

    def ranks(self, article_ids: Sequence[int]) -> Mapping[int, Rank]:
        return {i: self.live[i] for i in article_ids if i in self.live}

    def verify(self, article_id: int, canonical_id: int) -> Edge | None:
        self.verified += 1
        pair = (min(article_id, canonical_id), max(article_id, canonical_id))
        return Edge(*pair, 1, 0.9) if pair in self.ok else None

    def apply(self, decided: Mapping[int, Member | None]) -> None:
        for x, m in decided.items():
            self.rows.pop(x, None)
            if m is not None:
                self.rows[x] = m.canonical_id

    def full(self) -> dict[int, int]:
        edges = [
            Edge(a, b, 1, 0.9)
            for a, b in sorted(self.cands & self.ok)
            if a in self.live and b in self.live
        ]
        ids = {x for e in edges for x in (e.a, e.b)}
        return {m.article_id: m.canonical_id for m in assign({i: self.live[i] for i in ids}, edges)}


N = 9
pairs = st.tuples(st.integers(0, N - 1), st.integers(0, N - 1)).filter(lambda p: p[0] < p[1])
ops = st.lists(
    st.tuples(st.sampled_from(["add", "edit", "delete"]), st.integers(0, N - 1), st.integers(0, 5)),
    max_size=25,
)


@settings(max_examples=300, deadline=None)
@given(st.sets(pairs), st.sets(pairs), st.lists(st.integers(0, 5), min_size=N, max_size=N), ops)
def test_incremental_equals_full_recluster(
    cands: set[tuple[int, int]], ok: set[tuple[int, int]], days: list[int], steps: list
) -> None:
    view = FakeView()
    view.cands, view.ok = set(cands), set(ok)
    rng = np.random.default_rng(len(steps))
    for kind, x, day in steps:
        if kind == "delete":
            if x not in view.live:
                continue
            del view.live[x]
            view.apply(relink(view, [], [x]))
        else:
            if kind == "edit":  # its text changed: which of its pairs verify changes
                view.ok = {p for p in view.ok if x not in p}
                view.ok |= {p for p in cands if x in p and rng.random() < 0.5}
            view.live[x] = rank_key(x, None) if day == 0 else (0, float(day * 10 + x % 3), x)
            view.apply(relink(view, [x]))
        assert view.rows == view.full()


def test_a_write_into_a_big_cluster_verifies_once() -> None:
    view = FakeView()
    size = 1_000
    for i in range(size):
        view.live[i] = (0, float(i), i)
    view.cands = {(a, b) for a in range(size) for b in range(a + 1, size) if b - a < 20 or a == 0}
    view.ok = set(view.cands)
    view.apply(relink(view, range(size)))
    assert set(view.rows.values()) == {0} and len(view.rows) == size - 1
    view.verified = 0
    view.live[size] = (0, float(size), size)
    view.cands |= {(a, size) for a in range(size)}
    view.ok |= {(a, size) for a in range(size)}
    view.apply(relink(view, [size]))
    assert view.rows[size] == 0 and view.verified == 1  # checked against the canonical only
    # an earlier-published copy takes the cluster over: each member checked once against it
    view.verified = 0
    view.live[10**6] = (0, -1.0, 10**6)
    view.cands |= {(a, 10**6) for a in range(size + 1)}
    view.ok |= {(a, 10**6) for a in range(size + 1)}
    view.apply(relink(view, [10**6]))
    assert set(view.rows.values()) == {10**6} and view.verified == size + 1


def test_members_left_by_their_canonical_join_the_one_among_them_promoted() -> None:
    # the canonical candidates a view returns are the stored canonicals: a member that this run
    # turns into a canonical (its canonical deleted, or edited away) must still be found
    for change in ("delete", "edit"):
        view = FakeView()
        for i in range(4):
            view.live[i] = (0, float(i), i)
        view.cands = {(a, b) for a in range(4) for b in range(a + 1, 4)}
        view.ok = set(view.cands)
        view.apply(relink(view, range(4)))
        assert view.rows == {1: 0, 2: 0, 3: 0}
        if change == "delete":
            del view.live[0]
            view.apply(relink(view, [], [0]))
        else:
            view.ok = {p for p in view.ok if 0 not in p}
            view.apply(relink(view, [0]))
        assert view.rows == {2: 1, 3: 1} == view.full()
