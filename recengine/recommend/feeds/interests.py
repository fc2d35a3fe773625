"""A reader's interests: their reads grouped by similarity, weighted by recency and share.

See ``recommend.feed`` for how feeds use them. Formulas::

    weight(read) = sum over its events of 0.5 ** (age_days / half_life_days)
    centroid(I)  = sum over reads r in I of weight(r) * vector(r), cut to its topic_terms
                   largest terms and scaled to unit length
    share(I)     = sum of weight(r) over I / sum of weight(r) over the whole history

Reads are grouped heaviest first (ties by article id), each joining the interest whose
centroid it is most similar to when that cosine is at least ``topic_similarity``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime

import numpy as np
from sqlalchemy.orm import Session

from recengine.config import FeedSettings
from recengine.features.hashing import TermHasher
from recengine.features.tfidf import SparseVector
from recengine.storage.rows.events import recent_events
from recengine.storage.rows.index_source import features_by_id

EXAMPLES = 3


@dataclass(frozen=True)
class Read:
    id: int
    weight: float
    vector: SparseVector


@dataclass(frozen=True, eq=False)
class Interest:
    """A query for the index: ``vector`` (unit length, largest first), its share, examples."""

    vector: SparseVector
    share: float
    examples: tuple[int, ...]

    @property
    def hashes(self) -> np.ndarray[tuple[int], np.dtype[np.uint64]]:
        return self.vector.hashes

    @property
    def weights(self) -> np.ndarray[tuple[int], np.dtype[np.float32]]:
        return self.vector.weights


def history_of(
    session: Session,
    version: int,
    user_id: str,
    f: FeedSettings,
    now: datetime,
    since: datetime | None = None,
) -> list[Read]:
    """The reader's weighted reads of live articles with features, heaviest first (from
    ``since`` on: older reads are past the retention)."""
    events = recent_events(session=session, user_id=user_id, limit=f.history_limit, since=since)
    weights: dict[int, float] = {}
    for event in events:
        age_days = max(0.0, (now - event.at).total_seconds() / 86_400)
        weights[event.article_id] = weights.get(event.article_id, 0.0) + 0.5 ** (
            age_days / f.half_life_days
        )
    found = features_by_id(session=session, version=version, ids=list(weights))
    reads = [
        Read(i, w, SparseVector.from_bytes(found[i].vector))
        for i, w in weights.items()
        if i in found
    ]
    return sorted((r for r in reads if len(r.vector)), key=lambda r: (-r.weight, r.id))


@dataclass
class _Group:
    sums: dict[str, float] = field(default_factory=dict)
    weight: float = 0.0
    members: list[int] = field(default_factory=list)

    def cosine(self, vector: SparseVector) -> float:
        norm = sum(v * v for v in self.sums.values()) ** 0.5
        dot = sum(
            self.sums.get(t, 0.0) * float(w)
            for t, w in zip(vector.terms, vector.weights.tolist(), strict=True)
        )
        return dot / norm if norm else 0.0

    def add(self, read: Read) -> None:
        for term, w in zip(read.vector.terms, read.vector.weights.tolist(), strict=True):
            self.sums[term] = self.sums.get(term, 0.0) + read.weight * w
        self.weight += read.weight
        self.members.append(read.id)


def find_interests(reads: list[Read], f: FeedSettings) -> list[Interest]:
    """Group reads into at most ``max_topics`` interests, heaviest first."""
    groups: list[_Group] = []
    for read in reads:
        scores = [g.cosine(read.vector) for g in groups]
        best = int(np.argmax(scores)) if scores else -1
        if best >= 0 and scores[best] >= f.topic_similarity:
            groups[best].add(read)
        else:
            groups.append(_Group())
            groups[-1].add(read)
    total = sum(g.weight for g in groups)
    groups.sort(key=lambda g: (-g.weight, g.members[0]))
    hasher = TermHasher()
    return [
        Interest(_centroid(g, f.topic_terms, hasher), g.weight / total, tuple(g.members[:EXAMPLES]))
        for g in groups[: f.max_topics]
    ]


def _centroid(group: _Group, limit: int, hasher: TermHasher) -> SparseVector:
    terms = sorted(group.sums, key=lambda t: (-group.sums[t], hasher.hash(t)))[:limit]
    weights = np.array([group.sums[t] for t in terms], dtype=np.float64)
    weights /= np.sqrt(np.dot(weights, weights))
    return SparseVector(tuple(terms), hasher.hashes(terms), weights.astype(np.float32))
