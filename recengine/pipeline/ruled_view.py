"""The constrained rule kept right incrementally: ``relink`` over the leader pass's state.

The full recluster computes the editors' rule as a plain leader pass with a rules-aware
verification (``pipeline.ruled_pass``): the pass decides *units* (a ``same_article`` unit by
its head, an article alone otherwise), refuses a canonical whose cluster holds an apart
partner placed before, and the rows are made from its result afterwards (a unit's other
articles follow their head; a cluster holding a pinned article points to its earliest pinned
one). A write keeps that right the way ``pipeline.leader.relink`` keeps the plain pass right:
:class:`RuledView` shows ``relink`` the *pass's* state, and :func:`ruled_relink` turns the
re-decided units back into rows:

* **the pass's state from the stored rows**: a stored cluster's pass canonical is its
  earliest-ranked article (units join earlier canonical units; a unit's other articles rank
  after its head). It differs from the stored canonical only in a cluster whose canonical is
  pinned (a *shadow*: found by one read of the cluster's earliest article per pinned
  canonical); the view maps those, and hides the units' other articles (candidates pointing
  at one are redirected to its head, as the pass's extra pairs do);
* **verification**: refused canonicals are left to ``relink`` (``partners``: an article whose
  cluster changes has its later partners re-decided); an edge between two units is any
  allowed verified candidate edge between their articles;
* **rows**: every re-decided unit and its followers get the row the full path gives them;
  a cluster whose target (earliest pinned article, else its pass canonical) changed, or whose
  target was itself changed, has its other rows re-pointed (linear in that cluster: a pin
  added or removed, a pinned article moving).

Cost: what ``relink`` costs (a write into a cluster verifies against its canonical, ~1
verification), plus one read per pinned canonical. An edited article of a pinned cluster
(its publication time may have moved, so the stored rows no longer tell which article the
pass led with) re-decides that cluster whole: linear.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Protocol

import numpy as np

from recengine.index.neardup import IdArray
from recengine.pipeline.cluster_rules import EDITOR, ClusterRules, Pair, pair
from recengine.pipeline.clustering import Edge, Member
from recengine.pipeline.leader import ClusterView, Ids, Rank, relink


class BaseView(ClusterView, Protocol):
    """The stored rows as they are (``pipeline.cluster_view.SqlClusterView``)."""

    def measure(self, a: int, b: int) -> tuple[int, float]:
        """Distance and score of a pair (a row the editors put there)."""
        ...

    def earliest(self, canonical_id: int) -> int:
        """The earliest-ranked article of a stored cluster (its canonical and members,
        deleted ones included)."""
        ...


class RuledView:
    """:class:`~recengine.pipeline.leader.ClusterView` of the pass's state (module docstring).

    Args:
        base: the stored rows.
        rules: the cluster overrides of the articles concerned (live, with features).
        suspects: articles that may have been pinned canonicals when the rows were made
            (an override change's articles).
    """

    def __init__(self, base: BaseView, rules: ClusterRules, suspects: Iterable[int] = ()):
        self.base = base
        named = sorted(_named(rules))
        self.rank = dict(base.ranks(named))
        present = self.rank.__contains__
        self.forced = {
            pair(e.a, e.b): e
            for e in rules.together
            if present(e.a) and present(e.b) and e.a != e.b
        }
        self.mates = self._units()
        self.head_of = {x: h for h, unit in self.mates.items() for x in unit}
        self.followers = np.array(
            sorted(x for unit in self.mates.values() for x in unit[1:]), np.int64
        )
        self.apart = {p for p in rules.apart if present(p[0]) and present(p[1])}
        self.alone = {x for x in rules.alone if present(x)}
        self.leaders = sorted((x for x in rules.leaders if present(x)), key=self.rank.__getitem__)
        self.refusing = self._refusing(self.apart - self.forced.keys())
        self.shadow = self._shadows({*self.leaders, *suspects})  # stored canonical -> leader
        self.lead = {lead: k for k, lead in self.shadow.items()}

    def _units(self) -> dict[int, list[int]]:
        parent: dict[int, int] = {}

        def find(x: int) -> int:
            while parent.get(x, x) != x:
                x = parent[x]
            return x

        for a, b in self.forced:
            ra, rb = find(a), find(b)
            if ra != rb:
                parent[max(ra, rb)] = min(ra, rb)
        groups: dict[int, list[int]] = {}
        for x in sorted({x for p in self.forced for x in p}, key=self.rank.__getitem__):
            groups.setdefault(find(x), []).append(x)
        return {unit[0]: unit for unit in groups.values()}

    def _refusing(self, apart: Iterable[Pair]) -> dict[int, list[int]]:
        out: dict[int, set[int]] = {}
        for a, b in apart:
            ha, hb = self.head_of.get(a, a), self.head_of.get(b, b)
            if ha != hb:
                out.setdefault(ha, set()).add(hb)
                out.setdefault(hb, set()).add(ha)
        return {h: sorted(ps) for h, ps in out.items()}

    def _shadows(self, ids: Iterable[int]) -> dict[int, int]:
        """Stored canonicals (of those of ``ids``) whose cluster the pass led with another
        article: the earliest-ranked one."""
        ids = sorted(ids)
        members = self.base.stored(ids)
        out = {}
        for k in ids:
            if k not in members:
                first = self.base.earliest(k)
                if first != k:
                    out[k] = first
        return out

    def partners(self, x: int) -> Sequence[int]:
        """The units whose cluster X's unit may not join (``relink``'s ``partners``)."""
        return self.refusing.get(x, ())

    def heads(self, ids: Ids) -> IdArray:
        """``ids`` with the units' other articles replaced by their heads (sorted, once)."""
        out = np.asarray(ids, dtype=np.int64).reshape(-1)
        if not len(self.followers) or not len(out):
            return np.unique(out)
        hidden = np.isin(out, self.followers)
        more = [self.head_of[int(y)] for y in out[hidden].tolist()]
        return np.unique(np.concatenate([out[~hidden], np.array(more, np.int64)]))

    def unit(self, x: int) -> list[int]:
        return self.mates.get(x, [x])

    # -- ClusterView -------------------------------------------------------------------------

    def candidates(self, article_id: int) -> IdArray:
        found = [self.base.candidates(a) for a in self.unit(article_id)]
        out = self.heads(np.concatenate(found))
        kept: IdArray = out[out != article_id]
        return kept

    def canonical_candidates(self, article_id: int) -> IdArray:
        unit = self.unit(article_id)
        found = [np.asarray(self.base.canonical_candidates(a)) for a in unit]
        if self.lead or len(self.followers):  # the leaders of shadows; the heads of followers
            extra = np.array([*self.lead, *self.followers.tolist()], np.int64)
            found += [np.asarray(self.base.among_candidates(a, extra)) for a in unit]
        out = self.heads(np.concatenate(found).astype(np.int64))
        kept: IdArray = out[out != article_id]
        return kept

    def among_candidates(self, article_id: int, ids: Ids) -> IdArray:
        wanted = np.asarray(ids, dtype=np.int64)
        if not len(wanted):
            return wanted
        wide = np.concatenate([wanted, *(np.array(self.unit(int(i)), np.int64) for i in wanted)])
        found = [np.asarray(self.base.among_candidates(a, wide)) for a in self.unit(article_id)]
        out = self.heads(np.concatenate(found).astype(np.int64))
        kept: IdArray = out[np.isin(out, wanted) & (out != article_id)]
        return kept

    def stored(self, article_ids: Sequence[int]) -> Mapping[int, int]:
        out = {}
        for x, k in self.base.stored(article_ids).items():
            lead = self.shadow.get(k, k)
            if x != lead:
                out[x] = lead
        out.update((k, self.shadow[k]) for k in article_ids if k in self.shadow)
        return out

    def unclustered(self, article_ids: Ids) -> Sequence[int]:
        free = set(int(i) for i in self.base.unclustered(article_ids)) - self.shadow.keys()
        free |= {int(i) for i in np.asarray(article_ids).tolist() if int(i) in self.lead}
        return sorted(free - set(self.followers.tolist()))

    def members(self, canonical_ids: Sequence[int]) -> Sequence[int]:
        mine = [c for c in canonical_ids if c not in self.shadow]
        stored = [self.lead.get(c, c) for c in mine]
        found = set(self.base.members(stored)) | {self.lead[c] for c in mine if c in self.lead}
        found -= set(mine) | set(self.followers.tolist())
        return sorted(found)

    def ranks(self, article_ids: Sequence[int]) -> Mapping[int, Rank]:
        return self.base.ranks(article_ids)

    def verify(self, article_id: int, canonical_id: int) -> Edge | None:
        """Any allowed verified candidate edge between the two units (the pair itself first:
        its edge is the row; another one makes the row the editors')."""
        x, c = article_id, canonical_id
        if x not in self.mates and c not in self.mates:  # relink asks candidates only
            return self.base.verify(x, c) if self.allows(x, c) else None
        if self.allows(x, c) and len(self.base.among_candidates(x, [c])):
            edge = self.base.verify(x, c)
            if edge is not None:
                return edge
        others = np.array(self.unit(c), np.int64)
        for a in self.unit(x):
            for b in np.asarray(self.base.among_candidates(a, others)).tolist():
                if (a, b) != (x, c) and self.allows(a, b) and self.base.verify(a, b):
                    return Edge(x, c, *self.base.measure(x, c), EDITOR)
        return None

    def allows(self, a: int, b: int) -> bool:
        return not (pair(a, b) in self.apart or a in self.alone or b in self.alone)

    def row(self, x: int, k: int) -> Member:
        """``x``'s row under the canonical ``k`` (as ``RuledPass._row``)."""
        forced = self.forced.get(pair(x, k))
        if forced is not None:
            return Member(x, k, forced.distance, forced.score, forced.rule)
        if self.allows(x, k) and len(self.base.among_candidates(x, [k])):
            edge = self.base.verify(x, k)
            if edge is not None:
                return Member(x, k, edge.distance, edge.score, edge.rule)
        return Member(x, k, *self.base.measure(x, k), EDITOR)


def ruled_relink(
    base: BaseView,
    rules: ClusterRules,
    changed: Iterable[int],
    removed: Iterable[int] = (),
    suspects: Iterable[int] = (),
    moved: bool = True,
) -> dict[int, Member | None]:
    """New rows under the overrides after ``changed`` articles were added or edited (or the
    overrides naming them changed) and ``removed`` ones deleted (module docstring).

    Args:
        base: the stored rows.
        rules: the cluster overrides in force now (of live articles with features).
        changed, removed: as :func:`~recengine.pipeline.leader.relink`'s; an override change
            names its articles (and every article an override pairs with them) as changed.
        suspects: articles that may have been pinned when the rows were made.
        moved: whether a changed article's rank may have moved (an edit; not an override).

    Returns:
        article id -> its new row, or None (a canonical or a singleton), for every article
        whose row may have changed.
    """
    gone = set(removed)
    pins = {*rules.leaders, *suspects, *gone}  # a deleted one may have been pinned
    view = RuledView(base, rules, pins)
    seeds = set(changed) - gone
    if moved:
        seeds |= _pinned_clusters(base, seeds, pins)
    units = {view.head_of[x] for x in seeds | gone if x in view.head_of}
    follow = {y for h in units for y in view.mates[h][1:]}
    # a unit's head (its rank) or cluster may have changed: its partners' refusals read it
    seeds |= units
    seeds = (seeds | {p for x in seeds for p in view.partners(view.head_of.get(x, x))}) - follow
    decided = relink(view, seeds, gone | follow, view.partners)
    return _Rows(view, decided, seeds | gone | set(changed)).of(gone, units)


def _pinned_clusters(base: BaseView, seeds: set[int], pins: set[int]) -> set[int]:
    """The whole stored clusters of edited ``seeds`` whose canonical is (or was) pinned: a
    moved publication time may change which article the pass led with, and the stored rows no
    longer tell which one it was."""
    rows = base.stored(sorted(seeds))
    heads = sorted({rows.get(x, x) for x in seeds} & pins)
    return set(base.members(heads)) | set(heads) if heads else set()


class _Rows:
    """The rows of a ``relink`` result under the overrides (``ruled_relink``)."""

    def __init__(
        self, view: RuledView, decided: Mapping[int, Member | None], changed: set[int]
    ) -> None:
        self.view, self.decided, self.changed = view, decided, changed
        nodes = [view.head_of.get(p, p) for p in view.leaders]
        now = self.clusters(nodes)
        self.target: dict[int, int] = {}  # pass canonical -> its earliest pinned article
        for p, node in zip(view.leaders, nodes, strict=True):
            self.target.setdefault(now[node], p)

    def clusters(self, ids: Sequence[int]) -> dict[int, int]:
        """Pass canonical now of each of ``ids`` (units' heads or articles)."""
        stored = self.view.stored([i for i in ids if i not in self.decided])
        out = {}
        for i in ids:
            if i in self.decided:
                m = self.decided[i]
                out[i] = m.canonical_id if m is not None else i
            else:
                out[i] = stored.get(i, i)
        return out

    def of(self, gone: set[int], units: set[int]) -> dict[int, Member | None]:
        out = self.repointed()
        now = self.clusters(sorted(self.decided))
        for x, m in self.decided.items():
            t = self.target.get(now[x], now[x])
            if x in gone or x == t:
                out[x] = None
            elif m is None or m.canonical_id != t:
                out[x] = self.view.row(x, t)
            else:
                out[x] = m
        heads = sorted(h for h in self.view.mates if h in self.decided or h in units)
        for h, c in self.clusters(heads).items():
            t = self.target.get(c, c)
            out.update((y, None if y == t else self.view.row(y, t)) for y in self.view.mates[h][1:])
        for x in gone:
            out[x] = None
        return out

    def repointed(self) -> dict[int, Member | None]:
        """Rows of the clusters (untouched articles) whose target changed, or was changed."""
        before = self.view.stored(sorted(self.decided))
        now = self.clusters(sorted(self.decided))
        touched = sorted({now[x] for x in self.decided} | {before.get(x, x) for x in self.decided})
        still = self.clusters(touched)
        led = [c for c in touched if still[c] == c]
        was_member = self.view.stored(led)
        stored = self.view.base.stored(led)
        out: dict[int, Member | None] = {}
        for c in led:
            if c in was_member:  # a canonical only now: its members were all re-decided
                continue
            old, new = stored.get(c, c), self.target.get(c, c)
            # an edited pass canonical had its members re-decided; an edited pinned one not
            if old == new and (old == c or old not in self.changed):
                continue
            for x in [old, *self.view.base.members([old])]:
                if x not in self.decided:
                    out[x] = None if x == new else self.view.row(x, new)
        return out


def _named(rules: ClusterRules) -> set[int]:
    out = set(rules.alone) | set(rules.leaders)
    out |= {x for p in rules.apart for x in p}
    return out | {x for e in rules.together for x in (e.a, e.b)}
