"""The page of a related list: what its items show and why, and what it suppressed.

A list is ranked and suppressed over many more candidates than it shows; only the page's
items (``offset .. offset + k`` of what was kept) and the suppressed entries between them get
their briefs, their reasons and their shared terms, which are found for all of them together
(``recommend.lists.explain.SharedTerms``). The floor (:func:`under_floor`) is applied before,
to the kept list, since it decides which places of the page stay empty.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np

from recengine.index.briefs import Brief
from recengine.index.related.view import Hits
from recengine.recommend.lists.explain import Item, SharedTerms
from recengine.recommend.lists.facts import Facts
from recengine.recommend.lists.listing import cut_entries, item
from recengine.recommend.lists.query import Query
from recengine.recommend.lists.reasons import Reasons
from recengine.recommend.lists.suppress import Picked
from recengine.recommend.live import Snapshot


class Given(Protocol):
    """What readers' signals gave each item, by article id (``recommend.signals.scoring.Gave``:
    the signals sit above the lists)."""

    def get(self, article: int, default: Reasons) -> Reasons: ...


@dataclass(frozen=True)
class Explaining:
    """How a page's reasons are written: the dense part's weight (``related.dense_weight``)
    and how many shared terms each item shows (``related.explain_terms``)."""

    dense_weight: float
    terms: int


@dataclass(frozen=True)
class Shown:
    """What a list's page is made from.

    Attributes:
        snap: the snapshot the list was ranked on (the items' stored vectors).
        query: the article the list is about.
        facts: briefs and clusters of the snapshot.
        hits: the candidates, pins first (``n_pinned`` of them), then the fallback's appended.
        picked: the positions of ``hits`` kept and suppressed.
        n_pinned: the editors' pins at the head of ``hits``.
        source: each fallback position's source (``reasons.fallback``).
        factors: the freshness factor of each decayed candidate, by id.
        given: what readers' signals gave each item.
    """

    snap: Snapshot
    query: Query
    facts: Facts
    hits: Hits
    picked: Picked
    n_pinned: int
    source: Mapping[int, str]
    factors: Mapping[int, float]
    given: Given


def page_body(shown: Shown, offset: int, k: int, explaining: Explaining) -> dict[str, Any]:
    """``article``, ``items`` and ``suppressed`` of the page ``offset .. offset + k``: what
    each item shows and its explanation, computed for the page's items only."""
    query, hits, picked = shown.query, shown.hits, shown.picked
    page = picked.kept[offset : offset + k]
    cut = [s for s in picked.suppressed if offset <= s.kept_before < offset + k]
    ids = [int(hits.ids[i]) for i in page] + [int(hits.ids[s.position]) for s in cut]
    briefs = shown.facts.briefs(ids + [s.duplicate_of for s in cut])
    external = {i: row.external_id for i, row in briefs.items()}
    external[query.id] = query.external_id
    items = _items(shown, page, briefs, explaining)
    cuts = [(int(hits.ids[s.position]), s.reason) for s in cut]
    suppressed = cut_entries(shown.facts, cuts, external)
    return {"article": query.external_id, "items": items, "suppressed": suppressed}


def _items(
    shown: Shown, page: list[int], briefs: dict[int, Brief], explaining: Explaining
) -> list[dict[str, Any]]:
    """The page's items (positions ``page`` of the hits) with their reasons; the shared terms
    of all of them found together (``SharedTerms.assign``)."""
    query, hits = shown.query, shown.hits
    items: list[dict[str, Any]] = []
    explained: list[Reasons] = []  # the items' reasons, their shared terms set below
    vectors: list[Item] = []
    for i in page:
        article = int(hits.ids[i])
        row = briefs.get(article)
        if row is None:  # deleted since the index caught up
            continue
        if i in shown.source:
            same = bool(query.category) and row.category == query.category
            items.append(item(row, 0.0, {"fallback": shown.source[i], "same_category": same}))
            continue
        # NaN: a pin, scored by the TF-IDF cosine alone (curation.concat)
        dense = None if hits.dense is None or np.isnan(hits.dense[i]) else float(hits.dense[i])
        factor = shown.factors.get(article) if i >= shown.n_pinned else None
        reasons, scale = item_reasons(query, row, explaining.dense_weight, dense, factor)
        if i < shown.n_pinned:
            reasons["pinned"] = True
        else:
            reasons.update(shown.given.get(article, {}))
        explained.append(reasons)
        vectors.append((*shown.snap.view.vector(int(hits.part[i]), int(hits.row[i])), scale))
        items.append(item(row, float(hits.scores[i]), reasons))
    SharedTerms(query.vector, query.names).assign(explained, vectors, explaining.terms)
    return items


def item_reasons(
    query: Query,
    row: Brief,
    dense_weight: float,
    dense: float | None = None,
    factor: float | None = None,
) -> tuple[Reasons, float]:
    """The explanation of one item but its shared terms, and the scale of their shares: the
    dense part's share (``dense``: None when the list has no dense part), shared category and
    tags, and the freshness factor the score was multiplied by (``factor``: None when it was
    not decayed; the shares are then scaled by it, so that they still add up to the score).
    The shared terms of a page's items are found together (``SharedTerms.assign``) and set
    under ``shared_terms``, which comes first."""
    tags = [t for t in (row.tags or ()) if t in query.tags]
    scale = (1.0 if dense is None else 1.0 - dense_weight) * (factor or 1.0)
    reasons: Reasons = {
        "shared_terms": [],
        "dense": 0.0 if dense is None else round(dense, 6),
        "same_category": bool(query.category) and row.category == query.category,
        "shared_tags": tags,
    }
    if factor is not None:
        reasons["freshness"] = round(factor, 4)
    return reasons, scale


def under_floor(
    hits: Hits, picked: Picked, floor: float, offset: int, k: int, exempt: int = 0
) -> tuple[Picked, int]:
    """``picked`` without what scores below ``floor`` (except the first ``exempt`` hits: the
    pins), and how many of the page's places (``offset`` .. ``offset + k``) that left empty. A
    canonical standing in for its copy is held to the copy's score (its place)."""
    if floor <= 0:
        return picked, 0
    scores = hits.scores
    kept = [i for i in picked.kept if i < exempt or scores[picked.place_of(i)] >= floor]
    page = len(picked.kept[offset : offset + k])
    suppressed = [
        s for s in picked.suppressed if s.position < exempt or scores[s.position] >= floor
    ]
    stands_for = {c: p for c, p in picked.stands_for.items() if c in kept}
    return Picked(kept, suppressed, stands_for), page - len(kept[offset : offset + k])
