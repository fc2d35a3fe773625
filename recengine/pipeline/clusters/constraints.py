"""Editors' cluster overrides as constraints of leader clustering: a pure function, shared by
every engine through :func:`recengine.pipeline.clusters.leader_rule.assign`.

The overrides (``storage.rows.overrides``): ``not_duplicate`` pairs (*cannot-link*),
``not_duplicate`` articles against all, ``same_article`` pairs (*must-link*), pinned
``canonical`` articles. The clustering (``pipeline.clusters.leader_rule``'s rule, unchanged when
there are none):

1. **Automatic edges** (verified pairs) are dropped when the pair is ``not_duplicate`` or either
   article is ``not_duplicate`` against all, unless the pair is also ``same_article``.
2. **Units**: ``same_article`` pairs join articles into units (connected components of the
   must-link graph); a unit's rank is that of its earliest-ranked article, its *head*. A
   single article is a unit of one.
3. **Leader clustering of units**, in rank order: a unit joins the earliest-ranked canonical
   unit it has an automatic edge to (any article of one to any article of the other) *whose
   cluster so far holds no article it may not be with* (cannot-link against every article
   already in that cluster: two articles kept apart by an editor never end up side by side
   under a third); otherwise it is a canonical unit. This is leader clustering with
   cannot-link constraints; with no overrides every unit is one article and the result is
   exactly the original rule's.
4. **The canonical** of a cluster is the head of its canonical unit, unless the cluster holds
   a pinned ``canonical`` article: then the earliest-ranked pinned one. Every other article of
   the cluster gets a member row pointing to it (its own edge's distance and score when it
   has an edge to the canonical, else ``measure(article, canonical)``). Its rule is the
   criterion's rule of that edge, or ``"editor"`` when an override put it there (a
   ``same_article`` pair, or no edge to the canonical).

A must-link group that contains a cannot-link pair is a contradiction the write side refuses
(``recommend.overrides``); given one anyway, must-link wins. Like the original rule, the result
depends only on the connected component (of automatic and ``same_article`` edges) an article is
in. This function is the specification: the engines compute the same rows without verifying
every pair of a component (``pipeline.clusters.constraints_pass`` for a full recluster,
``pipeline.clusters.constraints_updates`` for a write or an override change), and the property tests
compare them with it.
"""

from __future__ import annotations

from collections.abc import Callable, Container, Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from recengine.pipeline.clusters.leader_rule import Edge, Member
from recengine.storage.rows.overrides import CANONICAL, NOT_DUPLICATE, SAME_ARTICLE, Relation

Rank = tuple[int, float, int]
Pair = tuple[int, int]
EDITOR = "editor"  # cluster_members.rule of a member an override, not the criterion, put there
# (article, canonical) -> (Hamming distance, verification score) for rows without an edge
Measure = Callable[[int, int], tuple[int, float]]


def pair(a: int, b: int) -> Pair:
    return (a, b) if a < b else (b, a)


@dataclass(frozen=True)
class ClusterRules:
    """The cluster overrides that apply to some articles (see the module docstring)."""

    apart: frozenset[Pair] = frozenset()
    alone: frozenset[int] = frozenset()
    together: tuple[Edge, ...] = ()  # same_article pairs, measured (distance, score)
    leaders: frozenset[int] = frozenset()

    @property
    def empty(self) -> bool:
        return not (self.apart or self.alone or self.together or self.leaders)

    @classmethod
    def of(
        cls, relations: Iterable[Relation], alive: Container[int], measure: Measure
    ) -> ClusterRules:
        """The rules of stored overrides, for the articles in ``alive`` (an override naming a
        deleted article, or one without features in the version, is left out: kept in SQL, in
        force again when the article is stored again).

        ``same_article`` pairs get the distance and score ``measure`` gives them (the member
        row of a pair the criterion may reject).
        """
        apart: set[Pair] = set()
        alone: set[int] = set()
        leaders: set[int] = set()
        together: dict[Pair, Edge] = {}
        for r in relations:
            if r.article_id not in alive or (r.other_id is not None and r.other_id not in alive):
                continue
            if r.kind == NOT_DUPLICATE and r.other_id is None:
                alone.add(r.article_id)
            elif r.kind == NOT_DUPLICATE and r.other_id is not None:
                apart.add(pair(r.article_id, r.other_id))
            elif r.kind == SAME_ARTICLE and r.other_id is not None:
                a, b = pair(r.article_id, r.other_id)
                together[(a, b)] = Edge(a, b, *measure(a, b), EDITOR)
            elif r.kind == CANONICAL:
                leaders.add(r.article_id)
        return cls(frozenset(apart), frozenset(alone), tuple(together.values()), frozenset(leaders))

    @property
    def named(self) -> set[int]:
        """Every article the rules name."""
        out = set(self.alone) | set(self.leaders) | {x for p in self.apart for x in p}
        return out | {x for e in self.together for x in (e.a, e.b)}

    def allows(self, edge: Edge) -> bool:
        """Whether an automatic edge stays (``not_duplicate`` drops it)."""
        return not (
            pair(edge.a, edge.b) in self.apart or edge.a in self.alone or edge.b in self.alone
        )


@dataclass
class _Units:
    """Union-find of the must-link pairs over the articles of one clustering."""

    parent: dict[int, int] = field(default_factory=dict)

    def find(self, x: int) -> int:
        root = x
        while self.parent.get(root, root) != root:
            root = self.parent[root]
        while self.parent.get(x, x) != root:
            self.parent[x], x = root, self.parent[x]
        return root

    def union(self, a: int, b: int) -> None:
        ra, rb = self.find(a), self.find(b)
        if ra != rb:
            self.parent[max(ra, rb)] = min(ra, rb)


def constrained_assign(
    ranks: Mapping[int, Rank],
    edges: Sequence[Edge],
    rules: ClusterRules,
    measure: Measure | None = None,
) -> list[Member]:
    """Leader clustering of units under the rules (see the module docstring).

    Args:
        ranks: rank keys of every live article in ``edges`` and in the rules' pairs (pairs
            naming an article without a rank, e.g. a deleted one, are left out).
        edges: verified pairs (each unordered pair at most once).
        rules: the overrides.
        measure: distance and score of a member row without an edge to its canonical.

    Returns:
        Member rows sorted by article id; canonicals and singletons have none.
    """
    forced = [e for e in rules.together if e.a in ranks and e.b in ranks and e.a != e.b]
    forced_pairs = {pair(e.a, e.b) for e in forced}
    auto = [e for e in edges if rules.allows(e) or pair(e.a, e.b) in forced_pairs]
    units = _Units()
    for e in forced:
        units.union(e.a, e.b)
    articles: dict[int, list[int]] = {}
    for x in sorted({x for e in (*auto, *forced) for x in (e.a, e.b)}, key=ranks.__getitem__):
        articles.setdefault(units.find(x), []).append(x)  # a unit's head is its first
    head = {u: members[0] for u, members in articles.items()}
    adjacent: dict[int, set[int]] = {}
    for e in auto:
        ua, ub = units.find(e.a), units.find(e.b)
        if ua != ub:
            adjacent.setdefault(ua, set()).add(ub)
            adjacent.setdefault(ub, set()).add(ua)
    apart_of: dict[int, set[int]] = {}
    for a, b in rules.apart - forced_pairs:
        apart_of.setdefault(a, set()).add(b)
        apart_of.setdefault(b, set()).add(a)
    clusters = _leader_units(
        sorted(articles, key=lambda u: ranks[head[u]]), head, ranks, adjacent, articles, apart_of
    )
    by_pair = {pair(e.a, e.b): e for e in (*auto, *forced)}
    return _rows(clusters, ranks, rules.leaders, by_pair, measure)


def _leader_units(
    order: Sequence[int],
    head: Mapping[int, int],
    ranks: Mapping[int, Rank],
    adjacent: Mapping[int, set[int]],
    articles: Mapping[int, list[int]],
    apart_of: Mapping[int, set[int]],
) -> dict[int, list[int]]:
    """Canonical unit -> the articles of its cluster (its own first, then by joining order)."""
    canonical_of: dict[int, int] = {}
    clusters: dict[int, list[int]] = {}
    held: dict[int, set[int]] = {}
    for unit in order:
        mine = articles[unit]
        refused = {y for x in mine for y in apart_of.get(x, ())}
        choices = sorted(
            (c for c in adjacent.get(unit, ()) if canonical_of.get(c) == c),
            key=lambda c: ranks[head[c]],
        )
        target = next((c for c in choices if not refused & held[c]), None)
        if target is None:
            canonical_of[unit] = unit
            clusters[unit] = list(mine)
            held[unit] = set(mine)
        else:
            canonical_of[unit] = target
            clusters[target].extend(mine)
            held[target].update(mine)
    return clusters


def _rows(
    clusters: Mapping[int, list[int]],
    ranks: Mapping[int, Rank],
    leaders: Iterable[int],
    by_pair: Mapping[Pair, Edge],
    measure: Measure | None,
) -> list[Member]:
    pinned = set(leaders)
    out: list[Member] = []
    for members in clusters.values():
        chosen = sorted((x for x in members if x in pinned), key=ranks.__getitem__)
        canonical = chosen[0] if chosen else members[0]
        for x in members:
            if x == canonical:
                continue
            edge = by_pair.get(pair(x, canonical))
            if edge is not None:
                out.append(Member(x, canonical, edge.distance, edge.score, edge.rule))
            elif measure is not None:
                out.append(Member(x, canonical, *measure(x, canonical), EDITOR))
            else:
                raise ValueError(f"no edge from {x} to its canonical {canonical} and no measure")
    out.sort(key=lambda m: m.article_id)
    return out
