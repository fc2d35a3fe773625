"""The constrained rule computed by the leader pass: work bounded like the plain full recluster.

:func:`recengine.pipeline.clusters.constraints.constrained_assign` is the rule with the editors'
cluster overrides (leader clustering of ``same_article`` *units* in rank order, each joining
the earliest canonical unit it has an allowed verified edge to whose cluster so far holds no
article it is ``not_duplicate`` with; pinned canonicals only choose which article of a cluster
is its canonical). Computed from every verified candidate pair of a component, it costs the
square of a cluster of templated pages (every page within the radius of every other). This
module gives the same result from the plain pass (:func:`~recengine.pipeline.clusters.leader_pass.
leader_blocks`, one verification per article against the earlier canonicals in its reach)
driven by a rules-aware ``verify``, because every rule is a local test of one decision:

* **not_duplicate against all**: such an article, unless a ``same_article`` pair holds it in a
  unit, is a singleton nobody joins: it takes no part in the pass (``skip``);
* **not_duplicate pairs**: an automatic edge of the pair is never an edge, and a candidate
  canonical ``c`` is *refused* for a unit when an apart partner of one of its articles already
  sits in ``c``'s cluster: a partner whose unit's head ranks before this unit's head, so its
  decision is final when read (the pass decides in rank order, and an article of the current
  block still open when another reads it can only end in a canonical of this block);
* **same_article units**: the unit's head (earliest-ranked article) decides for the unit with
  the candidates of all its articles (``extra``: every candidate pair of a non-head article
  redirected to its head, both ends), and passes when any allowed verified candidate edge
  joins an article of the unit to one of the canonical unit; the other articles follow their
  head (``skip`` in the pass, a row to the cluster's canonical afterwards);
* **pinned canonicals**: after the pass, each cluster holding a pinned article gets every row
  re-pointed to its earliest-ranked pinned one (one verification or measure per member:
  linear in the cluster, :meth:`RuledPass.rows`).

Rows match ``constrained_assign``'s exactly: a member's row is its verified edge to the
canonical when an allowed candidate pair verifies (or the measured ``same_article`` pair),
otherwise the pair measured, with the rule ``"editor"``. ``tests/clusters/test_constraints_pass.py``
checks the equality on random graphs with random overrides of every kind, and counts the
verifications of a large clique with a pinned canonical and ``not_duplicate`` members.

Array contracts: ids ``int64 (n,)`` in rank order (position ``p`` is the ``p``-th earliest);
the pass's extra pairs as :class:`recengine.index.neardup.radius.Pairs` (ids, distances unused).
"""

from __future__ import annotations

import heapq
from collections.abc import Callable, Iterable, Sequence
from typing import Protocol

import numpy as np
import numpy.typing as npt

from recengine.index.neardup.radius import IdArray, Pairs
from recengine.pipeline.clusters.constraints import EDITOR, ClusterRules, Measure, Pair, pair
from recengine.pipeline.clusters.leader_pass import leader_blocks
from recengine.pipeline.clusters.leader_rule import Edge, Member

Verify = Callable[[int, int], Edge | None]
Load = Callable[[set[int]], None]
LOAD_CHUNK = 1_024  # members whose texts one re-pointing step loads at once


class Graph(Protocol):
    """The candidate relation (``index.neardup.candidates.Candidates`` implements it)."""

    def of(self, article_id: int) -> IdArray:
        """Every candidate of a stored article (not itself)."""
        ...

    def among(self, article_id: int, ids: IdArray) -> IdArray:
        """Those of ``ids`` that are candidates of ``article_id``."""
        ...


class RuledPass:
    """The rules of one full recluster, as the plain pass's ``skip``, ``extra``, ``verify``
    and ``prefetch``, and the rows afterwards (see the module docstring).

    Args:
        rules: the cluster overrides of the articles in ``ids`` (others are ignored).
        ids: every article of the recluster, in rank order.
        graph: their candidate relation.
        verify: the criterion on a pair (both loaded): the edge, or None.
        measure: distance and score of a pair (both loaded), for rows without an edge.
    """

    def __init__(
        self, rules: ClusterRules, ids: IdArray, graph: Graph, verify: Verify, measure: Measure
    ) -> None:
        self.ids, self.graph, self.verify_pair, self.measure = ids, graph, verify, measure
        named = rules.named
        where = np.flatnonzero(np.isin(ids, np.fromiter(named, np.int64, len(named))))
        self.position = dict(zip(ids[where].tolist(), where.tolist(), strict=True))
        present = self.position.__contains__
        self.forced = {
            pair(e.a, e.b): e
            for e in rules.together
            if present(e.a) and present(e.b) and e.a != e.b
        }
        self.mates = self._units(self.forced)  # head -> its unit's articles, in rank order
        self.head_of = {x: h for h, unit in self.mates.items() for x in unit}
        self.apart = {p for p in rules.apart if present(p[0]) and present(p[1])}
        self.alone = {x for x in rules.alone if present(x)}
        self.leaders = {x for x in rules.leaders if present(x)}
        self.refusing = self._refusing(self.apart - self.forced.keys())
        self.joined: dict[int, int] = {}  # unit head or article -> the canonical it joined

    def _units(self, forced: dict[Pair, Edge]) -> dict[int, list[int]]:
        """The units of two or more articles: head -> articles (union-find of ``forced``)."""
        parent: dict[int, int] = {}

        def find(x: int) -> int:
            while parent.get(x, x) != x:
                parent[x] = parent.get(parent[x], parent[x])
                x = parent[x]
            return x

        for a, b in forced:
            ra, rb = find(a), find(b)
            if ra != rb:
                parent[max(ra, rb)] = min(ra, rb)
        groups: dict[int, list[int]] = {}
        for x in sorted({x for p in forced for x in p}, key=self.position.__getitem__):
            groups.setdefault(find(x), []).append(x)
        return {unit[0]: unit for unit in groups.values()}

    def _refusing(self, apart: Iterable[Pair]) -> dict[int, list[int]]:
        """Head (or article) -> the apart partners of its unit's articles (a must-link pair is
        no cannot-link pair: ``same_article`` wins a contradiction)."""
        out: dict[int, set[int]] = {}
        for a, b in apart:
            out.setdefault(self.head_of.get(a, a), set()).add(b)
            out.setdefault(self.head_of.get(b, b), set()).add(a)
        return {h: sorted(ps, key=self.position.__getitem__) for h, ps in out.items()}

    @property
    def skip(self) -> npt.NDArray[np.bool_]:
        """Positions that take no part in the pass: unit articles other than the head, and
        ``not_duplicate``-against-all articles in no unit. ``bool (n,)``."""
        out = np.zeros(len(self.ids), bool)
        followers = [x for h, unit in self.mates.items() for x in unit if x != h]
        for x in [*followers, *(self.alone - self.head_of.keys())]:
            out[self.position[x]] = True
        return out

    def extra(self, plain: Pairs) -> Pairs:
        """``plain`` (the other candidate sources' pairs) and every candidate pair of a
        non-head unit article, both ends mapped to their unit's head."""
        a, b = [plain.a], [plain.b]
        for head, unit in self.mates.items():
            for y in unit[1:]:
                found = self.graph.of(y)
                heads = np.fromiter((self.head_of.get(z, z) for z in found.tolist()), np.int64)
                heads = heads[heads != head]
                a.append(np.full(len(heads), head, np.int64))
                b.append(heads)
        lo, hi = np.concatenate(a), np.concatenate(b)
        return Pairs(lo, hi, np.zeros(len(lo), np.uint8))

    def prefetch(self, load: Load) -> Load:
        """``load`` of a block's ids and, for the unit heads among them, their units."""

        def wider(ids: set[int]) -> None:
            load(ids | {x for h in ids & self.mates.keys() for x in self.mates[h]})

        return wider

    def verify(self, x: int, c: int) -> Edge | None:
        """The pass's verification of unit (or article) ``x`` under canonical ``c``: refused,
        or any allowed verified candidate edge between their units. An edge returned is final
        (``leader_blocks`` joins ``x`` to ``c``): it is recorded for later refusals."""
        if self._refused(x, c):
            return None
        edge = self._edge(x, c)
        if edge is not None:
            self.joined[x] = c
        return edge

    def _refused(self, x: int, c: int) -> bool:
        """Whether an apart partner of ``x``'s unit, placed before it, sits in ``c``'s
        cluster."""
        for p in self.refusing.get(x, ()):
            hp = self.head_of.get(p, p)
            if self.position[hp] < self.position[x] and self.joined.get(hp, hp) == c:
                return True
        return False

    def _edge(self, x: int, c: int) -> Edge | None:
        ux, uc = self.mates.get(x), self.mates.get(c)
        if ux is None and uc is None:  # two plain articles: the pass's pairs are candidates
            return self.verify_pair(x, c) if self._allows(x, c) else None
        if self._allows(x, c) and len(self.graph.among(x, np.array([c], np.int64))):
            edge = self.verify_pair(x, c)
            if edge is not None:
                return edge
        others = np.array(uc or [c], np.int64)
        for a in ux or [x]:
            for b in self.graph.among(a, others).tolist():
                if (a, b) != (x, c) and self._allows(a, b) and self.verify_pair(a, b):
                    return Edge(x, c, *self.measure(x, c), EDITOR)
        return None

    def _allows(self, a: int, b: int) -> bool:
        return not (pair(a, b) in self.apart or a in self.alone or b in self.alone)

    def rows(self, members: Sequence[Member], load: Load) -> list[Member]:
        """The pass's ``members`` (sorted by article id) with the units' other articles
        following their head and the clusters holding a pinned article re-pointed to it
        (``load``: texts to measure). Two scans of the rows, no table of them."""
        named = self.head_of.keys() | self.leaders  # the rows read by id: a few
        canonical = {m.article_id: m.canonical_id for m in members if m.article_id in named}
        leader = {x: canonical.get(h, h) for h, unit in self.mates.items() for x in unit}
        pinned: dict[int, int] = {}  # cluster (its pass canonical) -> its earliest pinned one
        for k in sorted(self.leaders, key=self.position.__getitem__):
            pinned.setdefault(leader.get(k, canonical.get(k, k)), k)
        pinned = {head: k for head, k in pinned.items() if head != k}
        followers = [x for unit in self.mates.values() for x in unit[1:]]
        moved = [(y, leader[y]) for y in followers if leader[y] not in pinned]
        held: dict[int, list[int]] = {head: [head] for head in pinned}
        rows = ((m.article_id, m.canonical_id) for m in members)
        for x, c in [*rows, *((y, leader[y]) for y in followers)]:
            if c in held:
                held[c].append(x)
        for head, k in pinned.items():
            moved += [(x, k) for x in held[head] if x != k]
        changed: dict[int, Member | None] = {k: None for k in pinned.values()}
        for start in range(0, len(moved), LOAD_CHUNK):
            chunk = moved[start : start + LOAD_CHUNK]
            load({x for p in chunk for x in p})
            changed.update((x, self._row(x, k)) for x, k in chunk)
        return _merged(members, changed)

    def _row(self, x: int, k: int) -> Member:
        """``x``'s row under the canonical ``k``: the measured ``same_article`` pair, the
        verified allowed candidate edge, else the pair measured (the editors put it there)."""
        forced = self.forced.get(pair(x, k))
        if forced is not None:
            return Member(x, k, forced.distance, forced.score, forced.rule)
        if self._allows(x, k) and len(self.graph.among(x, np.array([k], np.int64))):
            edge = self.verify_pair(x, k)
            if edge is not None:
                return Member(x, k, edge.distance, edge.score, edge.rule)
        return Member(x, k, *self.measure(x, k), EDITOR)


def _merged(members: Sequence[Member], changed: dict[int, Member | None]) -> list[Member]:
    """``members`` (sorted by article id) with the ``changed`` rows replacing, removing (None)
    or joining them, still sorted."""
    kept = [changed.get(m.article_id, m) for m in members]
    ids = {m.article_id for m in members if m.article_id in changed}
    more = sorted(
        (m for x, m in changed.items() if x not in ids and m is not None),
        key=lambda m: m.article_id,
    )
    out = (m for m in kept if m is not None)
    return list(heapq.merge(out, more, key=lambda m: m.article_id))


def ruled_leader_blocks(
    ids: IdArray,
    fps: npt.NDArray[np.uint64],
    k: int,
    extra: Pairs,
    rules: ClusterRules,
    graph: Graph,
    verify: Verify,
    measure: Measure,
    prefetch: Load | None = None,
    block: int | None = None,
) -> list[Member]:
    """``constrained_assign``'s rows by the bounded leader pass (arguments as
    :func:`~recengine.pipeline.clusters.leader_pass.leader_blocks`'s, plus the rules, the candidate
    relation and ``measure``; ``prefetch`` also loads the texts the rows are measured on)."""
    ruled = RuledPass(rules, ids, graph, verify, measure)
    load = prefetch or _nothing
    members = leader_blocks(
        ids, fps, k, ruled.extra(extra), ruled.verify, ruled.prefetch(load), block, ruled.skip
    )
    return ruled.rows(members, load)


def _nothing(ids: set[int]) -> None:
    """A ``prefetch`` for callers whose texts are all loaded."""
