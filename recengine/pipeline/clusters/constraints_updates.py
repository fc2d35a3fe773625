"""The constrained rule kept right incrementally: ``relink`` over the leader pass's state.

The full recluster computes the editors' rule as a plain leader pass with a rules-aware
verification (``pipeline.clusters.constraints_pass``): the pass decides *units* (a ``same_article``
unit by its head, an article alone otherwise), refuses a canonical whose cluster holds an apart
partner placed before, and the rows are made from its result afterwards (a unit's other
articles follow their head; a cluster holding a pinned article points to its earliest pinned
one). A write keeps that right the way ``pipeline.clusters.leader_updates.relink`` keeps the plain
pass right: :class:`RuledView` shows ``relink`` the *pass's* state, and
``pipeline.clusters.constraints_relink`` turns the re-decided units back into rows
(:meth:`RuledView.row` is one):

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

from recengine.index.neardup.radius import IdArray
from recengine.pipeline.clusters.constraints import EDITOR, ClusterRules, Pair, pair
from recengine.pipeline.clusters.leader_rule import Edge, Member
from recengine.pipeline.clusters.leader_updates import ClusterView, Ids, Rank


class BaseView(ClusterView, Protocol):
    """The stored rows as they are (``pipeline.clusters.plan.SqlClusterView``)."""

    def measure(self, a: int, b: int) -> tuple[int, float]:
        """Distance and score of a pair (a row the editors put there)."""
        ...

    def earliest(self, canonical_id: int) -> int:
        """The earliest-ranked article of a stored cluster (its canonical and members,
        deleted ones included)."""
        ...


class RuledView:
    """:class:`~recengine.pipeline.clusters.leader_updates.ClusterView` of the pass's state (module
    docstring).

    Args:
        base: the stored rows.
        rules: the cluster overrides of the articles concerned (live, with features).
        suspects: articles that may have been pinned canonicals when the rows were made
            (an override change's articles).
    """

    def __init__(self, base: BaseView, rules: ClusterRules, suspects: Iterable[int] = ()):
        self.base = base
        named = sorted(rules.named)
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
