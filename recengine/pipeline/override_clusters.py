"""Editors' cluster overrides on the bounded clustering paths of ``pipeline.dedup``.

The rule with overrides is :func:`recengine.pipeline.cluster_rules.constrained_assign`: a pure
function of one connected component of the graph of verified candidate pairs and
``same_article`` pairs, equal to the plain leader rule in a component no cluster override names.
The plain paths (``pipeline.leader.relink`` at ingest, ``rank_blocks.leader_blocks`` at reindex)
verify only what the plain rule needs, so they stay as they are wherever no override can matter,
and the components an override can matter in are recomputed whole:

* **ingest / incremental** (:func:`override_region`): the plain re-decision is kept unless one of
  the articles it re-decided or looked at as a candidate is in the *override region*: an
  article a cluster override names, or one stored in the same cluster as one (a pinned
  canonical's members, the other article of a ``same_article`` pair, ...). Outside the region
  an article's decision under the overrides is the plain one (its unit is itself, it refuses
  nothing, its candidate canonicals are plain), and the stored rows it reads are right. Inside,
  the component of the changed articles is recomputed (:func:`component`, every candidate
  pair in it verified) and clustered under the overrides: the cost of an override region is
  its component's pairs, once per write that touches it (overrides are rare, and small).
* **full recluster / reindex** (and Spark's, which clusters on the driver the same way): the
  plain leader pass in rank blocks driven by the rules (``pipeline.ruled_pass``, with the
  rules of :func:`cluster_rules`): one verification per article against the canonicals in
  its reach, never the pairs of a component.
* **an override change** recomputes the component of the articles it names (added or removed:
  the region of a removed override is gone, its old rows are reached through the stored rows).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Protocol

import numpy as np
from sqlalchemy.orm import Session

from recengine.features.neardup import Verdict
from recengine.index.candidates import Candidates
from recengine.index.neardup import IdArray
from recengine.pipeline.cluster_rules import ClusterRules, Measure, constrained_assign, pair
from recengine.pipeline.clustering import Edge, Member, assign, rank_key
from recengine.storage.clusters import canonicals_of, members_of_all, published
from recengine.storage.overrides import (
    CLUSTER_KINDS,
    SAME_ARTICLE,
    Relation,
    live_ids,
    relations_of_kinds,
    relations_touching,
)


class Judging(Protocol):
    """The criterion over one model version's stored features and texts (``pipeline.dedup``)."""

    def prefetch(self, ids: set[int]) -> None:
        """Load the features and texts of ``ids`` at once (those not loaded yet)."""
        ...

    def known(self, article_id: int) -> bool:
        """Whether the article has features under the version (after :meth:`prefetch`)."""
        ...

    def verdict(self, a: int, b: int) -> Verdict | None:
        """The criterion's verdict on the pair; None when either has no features."""
        ...


def named_ids(relations: Iterable[Relation]) -> set[int]:
    return {x for r in relations for x in (r.article_id, r.other_id) if x is not None}


def override_region(session: Session, version: int) -> set[int]:
    """The override region of ``version`` (module docstring): empty when no cluster override
    exists (one read of the overrides)."""
    named = named_ids(relations_of_kinds(session=session, kinds=CLUSTER_KINDS))
    if not named:
        return set()
    heads = canonicals_of(session=session, version=version, article_ids=sorted(named))
    region = named | set(heads.values())
    region |= set(members_of_all(session=session, version=version, canonical_ids=sorted(region)))
    return region


def component(
    session: Session,
    version: int,
    index: Candidates,
    seeds: Iterable[int],
    judging: Judging,
    stored: bool = True,
) -> tuple[set[int], list[Edge]]:
    """Closure of ``seeds`` under verified candidate pairs of ``index``, ``same_article``
    overrides and, when ``stored``, the stored cluster rows of ``version`` (so that the old
    rows of a changed component are replaced too); returns its articles and verified edges."""
    nodes: set[int] = set()
    edges: dict[tuple[int, int], Edge] = {}
    seen: set[tuple[int, int]] = set()
    frontier = set(seeds)
    while frontier:
        nodes |= frontier
        grown = _stored_links(session, version, frontier) if stored else set()
        live = [x for x in sorted(frontier) if x in index]
        found = {x: index.of(x).tolist() for x in live}
        judging.prefetch(set(live) | {y for ys in found.values() for y in ys})
        for x, ys in found.items():
            for key in {pair(x, y) for y in ys} - seen:
                seen.add(key)
                v = judging.verdict(*key)
                if v is not None and v.duplicate:
                    edges[key] = Edge(key[0], key[1], v.distance, v.score, v.rule)
        linked = relations_touching(
            session=session, article_ids=sorted(frontier), kinds=[SAME_ARTICLE]
        )
        grown |= {x for x in named_ids(linked) if x in index}
        frontier = ({x for e in edges.values() for x in (e.a, e.b)} | grown) - nodes
    return nodes, list(edges.values())


def _stored_links(session: Session, version: int, ids: set[int]) -> set[int]:
    """The canonicals of those of ``ids`` that are members, the members of those that are
    canonicals."""
    heads = set(canonicals_of(session=session, version=version, article_ids=sorted(ids)).values())
    return heads | set(members_of_all(session=session, version=version, canonical_ids=sorted(ids)))


def constrained_rows(
    session: Session, edges: Sequence[Edge], relations: Sequence[Relation], judging: Judging
) -> list[Member]:
    """Leader clustering of ``edges`` under the cluster overrides ``relations`` (those naming
    an article deleted or without features under the version are left out, kept in SQL)."""
    named = named_ids(relations)
    judging.prefetch(live_ids(session=session, article_ids=sorted(named)))
    alive = {x for x in live_ids(session=session, article_ids=sorted(named)) if judging.known(x)}

    def measure(x: int, y: int) -> tuple[int, float]:
        v = judging.verdict(x, y)
        if v is None:  # both are alive: they have features
            raise ValueError(f"no features for {x} or {y}")
        return v.distance, v.score

    rules = ClusterRules.of(relations, alive, measure)
    ids = sorted({x for e in edges for x in (e.a, e.b)} | alive)
    dates = published(session=session, article_ids=ids)
    ranks = {i: rank_key(i, dates.get(i)) for i in ids}
    if rules.empty:
        return assign(ranks, edges)
    return constrained_assign(ranks, edges, rules, measure)


def regroup(
    session: Session, version: int, index: Candidates, seeds: Iterable[int], judging: Judging
) -> tuple[set[int], list[Member]]:
    """The component of ``seeds`` (stored rows included) clustered under the overrides that
    name its articles: the articles whose rows to replace, and their new member rows."""
    nodes, edges = component(session, version, index, seeds, judging)
    relations = relations_touching(session=session, article_ids=sorted(nodes), kinds=CLUSTER_KINDS)
    return nodes, constrained_rows(session, edges, relations, judging)


def cluster_rules(
    session: Session, judging: Judging, present: Callable[[IdArray], IdArray]
) -> ClusterRules:
    """The cluster overrides in force: those naming an article deleted or not ``present``
    (without features under the version: ``present`` keeps those of an id array that have
    them) are left out, kept in SQL; ``same_article`` pairs measured by ``judging``."""
    relations = relations_of_kinds(session=session, kinds=CLUSTER_KINDS)
    named = np.array(sorted(named_ids(relations)), dtype=np.int64)
    if not len(named):
        return ClusterRules()
    alive = live_ids(session=session, article_ids=present(named).tolist())
    return ClusterRules.of(relations, alive, _measure(judging))


def _measure(judging: Judging) -> Measure:
    """``judging``'s distance and score of a pair of articles with features."""

    def measure(x: int, y: int) -> tuple[int, float]:
        v = judging.verdict(x, y)
        if v is None:
            raise ValueError(f"no features for {x} or {y}")
        return v.distance, v.score

    return measure
