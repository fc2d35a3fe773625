"""Leader clustering kept right by bounded work per change: the incremental form of
:func:`recengine.pipeline.clusters.leader_rule.assign`.

The rule (unchanged, :mod:`recengine.pipeline.clusters.leader_rule`): in rank order (earliest
published first), an article joins the earliest-ranked *canonical* that ranks before it, is one of
its candidates (within the fingerprint radius or sharing a passage) and passes the criterion;
otherwise it is a canonical. An article's assignment therefore depends only on the
assignments of articles ranked before it, which is what lets a change be applied by
re-deciding only the articles it can affect, in rank order (a heap), each at most once:

* a **new or changed** article X is decided: its candidates that are canonicals and rank
  before it are verified against it, earliest first, until one passes. That is the whole cost
  of the usual write (a newly published repost), whatever the size of the cluster it joins:
  one verification per earlier canonical among its candidates, not one per pair of the cluster.
  Only the canonicals among its candidates are looked up (``ClusterView.canonical_candidates``:
  the canonicals' own index, plus those this run turned into canonicals), never the members.
* if X **becomes a canonical** (new, or no longer a member), the later articles that could
  now prefer it are re-decided: its candidates that rank after it and are canonicals or
  members of a canonical ranked after it. An earlier-published copy that arrives after its
  cluster formed takes the cluster over this way: each member is checked against it once.
* if X **stops being a canonical** (it joined an earlier one, was deleted, or its text
  changed), each of its members is re-decided, against the canonicals its own candidates
  offer (a member that no longer passes the new canonical starts its own cluster or joins
  another).

Everything else keeps its assignment: a member's own change never affects anyone (members are
never joined). The result equals a full recluster of the same articles (the property tests
check it against :func:`~recengine.pipeline.clusters.leader_rule.assign` on random graphs and
orders). Cost: a write into a cluster verifies once against its canonical; a change of canonical
(the canonical deleted or edited, or an earlier-published copy arriving) verifies each member
against the new canonical once: linear in the cluster, never quadratic.

Array contracts: ids are ``int`` article ids; ranks are
:func:`~recengine.pipeline.clusters.leader_rule. rank_key` tuples (smaller = earlier).
"""

from __future__ import annotations

import heapq
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Protocol

import numpy as np
import numpy.typing as npt

from recengine.pipeline.clusters.leader_rule import Edge, Member

Rank = tuple[int, float, int]
Ids = Sequence[int] | npt.NDArray[np.int64]  # article ids: a list, or an int64 array
Partners = Callable[[int], Sequence[int]]  # article -> those it may not share a cluster with


class ClusterView(Protocol):
    """What re-deciding needs to read (``pipeline.clusters.upkeep`` implements it over SQL +
    indexes)."""

    def candidates(self, article_id: int) -> Ids:
        """Live articles in the candidate relation with ``article_id`` (symmetric)."""
        ...

    def canonical_candidates(self, article_id: int) -> Ids:
        """Those of :meth:`candidates` that had no stored member row when the run began (it
        may return more: they are filtered): what deciding an article searches, so that a
        write into a large cluster is not answered with all its members."""
        ...

    def among_candidates(self, article_id: int, ids: Ids) -> Ids:
        """Those of ``ids`` that are in :meth:`candidates` (``ids`` are few)."""
        ...

    def stored(self, article_ids: Sequence[int]) -> Mapping[int, int]:
        """The stored assignment of those that are members: member id -> canonical id."""
        ...

    def unclustered(self, article_ids: Ids) -> Sequence[int]:
        """Those of ``article_ids`` with no stored member row (canonicals and singletons):
        the one read whose size is the candidate list's (a write into a large cluster has
        every member as a candidate), so it returns only the few that qualify."""
        ...

    def members(self, canonical_ids: Sequence[int]) -> Sequence[int]:
        """The stored members of those canonicals (one read for all)."""
        ...

    def ranks(self, article_ids: Sequence[int]) -> Mapping[int, Rank]:
        """Rank keys of live articles (absent: deleted)."""
        ...

    def verify(self, article_id: int, canonical_id: int) -> Edge | None:
        """The verified edge of the pair, or None when the criterion does not hold."""
        ...


class _State:
    """Assignments as decided so far: decisions of this run over the stored ones."""

    def __init__(self, view: ClusterView) -> None:
        self.view = view
        self.decided: dict[int, Member | None] = {}  # None: canonical (or singleton)
        self.rank: dict[int, Rank] = {}
        # decided canonical in this run, stored as members: canonical_candidates misses them
        self.promoted: list[int] = []

    def canonical(self, ids: Sequence[int]) -> dict[int, int]:
        """id -> its canonical (itself for a canonical)."""
        out = {i: i for i in ids}
        missing = [i for i in ids if i not in self.decided]
        out.update(self.view.stored(missing))
        for i in ids:
            m = self.decided.get(i)
            if i in self.decided:
                out[i] = m.canonical_id if m is not None else i
        return out

    def canonicals_among(self, ids: npt.NDArray[np.int64]) -> list[int]:
        """Those of ``ids`` that are canonicals now (decisions of this run first).

        Vectorised: a write into a large cluster has every member among ``ids``."""
        mine = np.zeros(len(ids), bool)
        if self.decided:
            mine = np.isin(ids, np.fromiter(self.decided, np.int64, len(self.decided)))
        undecided = ids[~mine]
        out = [int(i) for i in self.view.unclustered(undecided)] if len(undecided) else []
        return out + [i for i in ids[mine].tolist() if self.decided[i] is None]

    def ranks(self, ids: Iterable[int]) -> dict[int, Rank]:
        missing = [i for i in ids if i not in self.rank]
        if missing:
            self.rank.update(self.view.ranks(missing))
        return {i: self.rank[i] for i in ids if i in self.rank}


def relink(
    view: ClusterView,
    changed: Iterable[int],
    removed: Iterable[int] = (),
    partners: Partners | None = None,
) -> dict[int, Member | None]:
    """New assignments after ``changed`` articles were added or edited and ``removed`` ones
    deleted (see the module docstring).

    Args:
        partners: the editors' cannot-link constraints (``pipeline.clusters.constraints_updates``):
        an article's
            partners, whose cluster it may not join when they were placed before it. A
            candidate canonical holding such a partner is refused, and an article whose
            cluster changes has its later partners re-decided.

    Returns:
        article id -> its new member row, or None for a canonical / singleton (no row), for
        every article whose row may have changed; removed articles map to None.
    """
    state = _State(view)
    heap: list[tuple[Rank, int]] = []
    queued: set[int] = set()

    def push(ids: Iterable[int]) -> None:
        fresh = [i for i in ids if i not in queued]
        for i, r in state.ranks(fresh).items():
            queued.add(i)
            heapq.heappush(heap, (r, i))

    gone = set(removed)
    for x in gone:
        state.decided[x] = None
    seeds = sorted(set(changed) - gone)
    was = state.canonical(seeds)
    # the members of a removed canonical lose it; those of an edited one are checked again
    push(view.members(sorted(gone | {x for x in seeds if was[x] == x})))
    push(seeds)
    while heap:
        _, x = heapq.heappop(heap)
        if x in gone:
            continue
        old = state.canonical([x])[x]
        new = _decide(state, x, partners)
        state.decided[x] = new
        if new is None and old != x:
            state.promoted.append(x)
        head = new.canonical_id if new is not None else x
        if old == x and head != x and x not in was:
            push(view.members([x]))
        elif head == x and (old != x or x in seeds):
            push(_may_prefer(state, x))
        if partners is not None and head != old:
            push(_later(state, x, partners(x)))
    return state.decided


def _later(state: _State, x: int, ids: Sequence[int]) -> list[int]:
    """Those of ``ids`` ranked after X (their decision reads X's cluster)."""
    if not ids:
        return []
    mine = state.ranks([x])[x]
    return [i for i, r in state.ranks(ids).items() if r > mine]


def _refused(state: _State, x: int, ids: Sequence[int]) -> set[int]:
    """The clusters (canonicals) of those of ``ids`` ranked before X: its decision is final
    when read (the heap pops in rank order)."""
    if not ids:
        return set()
    mine = state.ranks([x])[x]
    before = [i for i, r in state.ranks(ids).items() if r < mine]
    return set(state.canonical(before).values())


def _decide(state: _State, x: int, partners: Partners | None = None) -> Member | None:
    """X's assignment given the (final) assignments of everything ranked before it."""
    mine = state.ranks([x])[x]
    found = np.asarray(state.view.canonical_candidates(x), dtype=np.int64)
    if state.promoted:
        promoted = np.asarray(state.promoted, dtype=np.int64)
        more = np.asarray(state.view.among_candidates(x, promoted), dtype=np.int64)
        found = np.union1d(found, more)
    canonicals = state.canonicals_among(found[found != x])
    earlier = sorted((r, c) for c, r in state.ranks(canonicals).items() if r < mine)
    refused = _refused(state, x, partners(x)) if partners is not None else set()
    for _, c in earlier:
        if c in refused:
            continue
        edge = state.view.verify(x, c)
        if edge is not None:
            return Member(x, c, edge.distance, edge.score, edge.rule)
    return None


def _may_prefer(state: _State, x: int) -> list[int]:
    """Candidates of a (new) canonical X that rank after it and whose canonical does too."""
    mine = state.ranks([x])[x]
    others = [c for c in np.asarray(state.view.candidates(x), dtype=np.int64).tolist() if c != x]
    heads = state.canonical(others)
    ranks = state.ranks(set(heads.values()) | set(others))
    return [
        c
        for c in others
        if c in ranks and ranks[c] > mine and heads[c] in ranks and ranks[heads[c]] > mine
    ]
