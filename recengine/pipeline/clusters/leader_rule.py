"""Near-duplicate clusters from verified pairs: a pure function, shared by every engine.

Rule (documented in README and DESIGN):

* articles are ranked by publication time, earliest first; articles without ``published_at``
  come after every dated one; ties (and undated articles) go by ingest order (the internal id,
  which grows with first ingest);
* in rank order, an article joins the *earliest-ranked canonical* it is a near-duplicate of
  (by :class:`recengine.features.neardup.NearDupCriterion`); if there is none, it is a
  canonical itself. This is the "leader" clustering of Manku et al.'s setting: every member is
  within the criterion of its canonical, so A~B~C never merges A with an unrelated C (no
  chaining drift);
* a canonical has no row in ``cluster_members``; each member has one (its canonical, Hamming
  distance and verification score). A singleton has none.

The result depends only on the verified pairs and the ranks, not on the order articles were
ingested or processed in: with distinct publication times, any ingest order gives the same
clusters. It is also local: an article's assignment depends only on the connected component of
the near-duplicate graph it is in, which is what lets ingest recompute just the components an
article change touches and still get exactly what a full recluster gives.

Array contracts: ids ``int64 (n,)``; ranks ``int64 (n,)`` (smaller = earlier); pairs as
``int64 (m,)`` id arrays with ``uint8`` distances and ``float32`` scores.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime

import numpy as np
import numpy.typing as npt

from recengine.features.neardup import Decision, NearDupCriterion, Verdict
from recengine.features.tfidf import SparseVector
from recengine.index.neardup.candidates import Candidates
from recengine.index.neardup.passages import PassageIndex
from recengine.index.neardup.radius import NearDupIndex
from recengine.text.neardup.compare import Compared


@dataclass(frozen=True)
class Member:
    """One ``cluster_members`` row: ``article_id`` is a near-duplicate of ``canonical_id``."""

    article_id: int
    canonical_id: int
    distance: int
    score: float
    rule: str = ""  # the criterion's rule that joined it (features.neardup.Verdict.rule)


@dataclass(frozen=True)
class Edge:
    """A verified near-duplicate pair: distance, the figure and name of the rule that matched."""

    a: int
    b: int
    distance: int
    score: float
    rule: str = ""


def rank_key(article_id: int, published_at: datetime | None) -> tuple[int, float, int]:
    """The canonical order: dated before undated, earlier first, then ingest order (id)."""
    if published_at is None:
        return (1, 0.0, article_id)
    return (0, published_at.timestamp(), article_id)


def assign(ranks: Mapping[int, tuple[int, float, int]], edges: Sequence[Edge]) -> list[Member]:
    """Leader clustering of the articles in ``edges`` (see the module docstring).

    Args:
        ranks: article id -> :func:`rank_key`, for every id in ``edges``.
        edges: verified pairs (each unordered pair at most once).

    Returns:
        Member rows, sorted by article id; canonicals and singletons have none.
    """
    neighbours: dict[int, list[Edge]] = {}
    for e in edges:
        neighbours.setdefault(e.a, []).append(e)
        neighbours.setdefault(e.b, []).append(e)
    canonical: set[int] = set()
    members: list[Member] = []
    for node in sorted(neighbours, key=ranks.__getitem__):
        best: tuple[tuple[int, float, int], Edge] | None = None
        for e in neighbours[node]:
            other = e.b if e.a == node else e.a
            earlier = other in canonical and ranks[other] < ranks[node]
            if earlier and (best is None or ranks[other] < best[0]):
                best = (ranks[other], e)
        if best is None:
            canonical.add(node)
            continue
        e = best[1]
        head = e.b if e.a == node else e.a
        members.append(Member(node, head, e.distance, e.score, e.rule))
    members.sort(key=lambda m: m.article_id)
    return members


def verify_pairs(
    a: npt.NDArray[np.int64],
    b: npt.NDArray[np.int64],
    fingerprints: Mapping[int, int],
    vectors: Mapping[int, SparseVector],
    criterion: NearDupCriterion,
    texts: Mapping[int, Compared] | None = None,
) -> list[Edge]:
    """The candidate pairs ``(a[j], b[j])`` that the criterion confirms (on the texts when
    given, see :meth:`NearDupCriterion.judge`)."""
    edges = []
    for x, y in zip(a.tolist(), b.tolist(), strict=True):
        v: Decision | Verdict | None
        if texts is not None:
            v = criterion.verify(fingerprints[x], fingerprints[y], texts[x], texts[y])
        else:
            v = criterion.judge(fingerprints[x], vectors[x], fingerprints[y], vectors[y])
        if v is not None and v.duplicate:
            edges.append(Edge(x, y, v.distance, v.score, v.rule))
    return edges


def cluster_corpus(
    ids: npt.NDArray[np.int64],
    fingerprints: npt.NDArray[np.uint64],
    ranks: Mapping[int, tuple[int, float, int]],
    vectors: Mapping[int, SparseVector],
    criterion: NearDupCriterion,
    texts: Mapping[int, Compared] | None = None,
    passages: Mapping[int, npt.NDArray[np.uint64]] | None = None,
    passage_stop_df: int = 200,
) -> list[Member]:
    """All clusters of a corpus: self-join both candidate sources, verify, assign.

    A pure function of its inputs (the Spark engine runs the same code on the candidate pairs
    it finds). ``vectors`` and ``texts`` are only read for ids in candidate pairs, so lazy
    mappings work. ``passages`` (each id's ``text.neardup.compare.article_passages``) adds the
    second candidate source (``index.neardup.candidates``); without it the radius alone, which at
    the default k = 3 misses the excerpts and digests the passages are there for.
    """
    index = NearDupIndex(criterion.k)
    index.add(ids, fingerprints)
    held = None
    if passages is not None:
        held = PassageIndex(passage_stop_df)
        held.add(ids, [passages[i] for i in ids.tolist()])
    pairs = Candidates(index, held).pairs()
    fps = dict(zip(ids.tolist(), fingerprints.tolist(), strict=True))
    return assign(ranks, verify_pairs(pairs.a, pairs.b, fps, vectors, criterion, texts))
