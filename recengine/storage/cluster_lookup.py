"""Read-only look-ups in ``cluster_members`` (written by the near-duplicate clustering).

A row maps an article to the canonical article of its near-duplicate cluster, with the
Hamming distance between the two fingerprints. A canonical article has no row of its own or a
row pointing at itself; both read as "its own cluster".
"""

from __future__ import annotations

from collections.abc import Sequence

from sqlalchemy import literal, select, union_all
from sqlalchemy.orm import Session

from recengine.storage.articles import IN_CHUNK
from recengine.storage.models import ClusterMember


def canonical_of(*, session: Session, ids: Sequence[int]) -> dict[int, tuple[int, int]]:
    """``article id -> (canonical id, distance to it)`` for the given articles in a cluster.

    Articles in no cluster are absent; a canonical article maps to itself at distance 0 when
    it heads a cluster of two or more (some member points at it).
    """
    out: dict[int, tuple[int, int]] = {}
    unique = sorted(set(ids))
    for start in range(0, len(unique), IN_CHUNK):
        chunk = unique[start : start + IN_CHUNK]
        members = select(
            ClusterMember.article_id, ClusterMember.canonical_id, ClusterMember.distance
        ).where(ClusterMember.article_id.in_(chunk))
        heads = (
            select(ClusterMember.canonical_id, ClusterMember.canonical_id, literal(0))
            .where(ClusterMember.canonical_id.in_(chunk))
            .distinct()
        )
        for article_id, canonical_id, distance in session.execute(union_all(members, heads)):
            if article_id not in out or out[article_id][0] == article_id:
                out[article_id] = (canonical_id, distance)
    return out
