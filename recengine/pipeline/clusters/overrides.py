"""Editors' cluster overrides on the clustering paths of ``pipeline.clusters.upkeep``: work bounded
like the plain paths, whatever the size of the cluster an override names (issue 13.1).

The rule with overrides is :func:`recengine.pipeline.clusters.constraints.constrained_assign`
(leader clustering of ``same_article`` units with ``not_duplicate`` refusals; pinned canonicals
choose which article of a cluster is its canonical). No path computes it from every verified pair of
a component any more (a clique of n templated pages an editor touched cost n^2 / 2
verifications); each computes it the way the plain rule is computed, one verification per
article against the canonicals in its reach:

* **full recluster / reindex** (and Spark's, which clusters on the driver the same way): the
  plain leader pass in rank blocks driven by the rules (``pipeline.clusters.constraints_pass``),
  with the rules of :func:`cluster_rules`; without cluster overrides it is the plain pass itself;
* **ingest / incremental**: the plain re-decision (``pipeline.clusters.leader_updates.relink``) is
kept unless
  one of the articles it re-decided or looked at as a candidate is in the *override region*
  (:func:`override_region`: an article a cluster override names, or one stored in the same
  cluster as one); inside, ``relink`` runs again over the leader pass's state under the rules
  (``pipeline.clusters.constraints_updates``), seeded with the changed articles and the articles an
  override names with them (:func:`with_partners`);
* **an override change** re-decides the same way the articles it names (added or removed), and
  the articles other overrides name with them.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Protocol

import numpy as np
from sqlalchemy.orm import Session

from recengine.features.neardup import Decision
from recengine.index.neardup.radius import IdArray
from recengine.pipeline.clusters.constraints import ClusterRules, Measure
from recengine.storage.rows.clusters import canonicals_of, members_of_all
from recengine.storage.rows.overrides import (
    CLUSTER_KINDS,
    Relation,
    live_ids,
    relations_of_kinds,
    relations_touching,
)


class Judging(Protocol):
    """The criterion over one model version's stored features and texts
    (``pipeline.clusters.upkeep``)."""

    def decision(self, a: int, b: int) -> Decision | None:
        """The criterion's decision on the pair's texts; None when either has no features."""
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


def with_partners(session: Session, ids: Iterable[int]) -> set[int]:
    """``ids`` and every article a cluster override names with one of them (their decisions
    read each other's: a unit's, a refusal's)."""
    mine = sorted(set(ids))
    return set(mine) | named_ids(
        relations_touching(session=session, article_ids=mine, kinds=CLUSTER_KINDS)
    )


def _measure(judging: Judging) -> Measure:
    """``judging``'s distance and score of a pair of articles with features."""

    def measure(x: int, y: int) -> tuple[int, float]:
        v = judging.decision(x, y)
        if v is None:
            raise ValueError(f"no features for {x} or {y}")
        return v.distance, v.score

    return measure
