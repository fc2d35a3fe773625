"""Fallback: a related list left shorter than ``related.min_items`` is filled, never emptied.

After suppression and the relevance floor, when fewer than ``min_items`` items remain (an
article with little or nothing related: a short notice, a new topic), the list is filled up to
``min_items`` with articles of the article's category (the whole site when it has none), each
marked ``reasons.fallback`` with where it came from (score 0: it was not ranked):

* ``"newest"``: the newest first (``IndexView.newest``: published desc, undated last);
* ``"most_clicked"`` (``related.fallback``): the most clicked over the last
  ``related.fallback_days`` days (``storage.rows.feedback.most_clicked``: the feedback
  counters count clicks per list article, i.e. readers of that article's page going on to
  read: its traffic and its engagement), then the newest for what they cannot fill (a site
  without counters yet still gets a full list).

A fallback item is never the article itself, never an item of the list or one suppressed from
it, never excluded or blocked by an editor, always within the request's filters, and goes
through the same suppression as every item (``recommend.lists.suppress``: it must duplicate
neither the article nor any item above it nor another fallback item; of a copy and its
original, the original is shown, as ``related.prefer_canonical`` says). It is appended after the
list's items, which the floor made complete, so every page of a list cuts the same
``items + fallback`` (paging stays consistent). A server's cached answer
(``recommend.answers``) keeps its most-clicked fill until the next change it applies.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from datetime import UTC, datetime, timedelta

import numpy as np
from sqlalchemy.orm import Session

from recengine.derived.rows import label_hash
from recengine.features.tfidf import SparseVector
from recengine.index.related.view import Hits, RowFilter
from recengine.recommend.lists.criterion import Articles, DuplicateCriterion
from recengine.recommend.lists.curation import Curation, concat, take
from recengine.recommend.lists.facts import Facts
from recengine.recommend.lists.listing import Texts, hit_vectors, with_clusters
from recengine.recommend.lists.suppress import Picked, Suppressed, pick
from recengine.recommend.live import Snapshot
from recengine.storage.rows.feedback import most_clicked

NEWEST, MOST_CLICKED = "newest", "most_clicked"


@dataclass(frozen=True)
class Anchor:
    """The article a list is about, as suppression sees it."""

    id: int
    fingerprint: int
    vector: SparseVector
    category: str | None


@dataclass(frozen=True)
class Need:
    """What a fill needs: how many items, from where, against what."""

    count: int
    mode: str  # NEWEST or MOST_CLICKED
    pool: int  # candidates read per source
    days: int  # MOST_CLICKED: the counters' days
    filt: RowFilter  # the request's filters (the article and its blocked partners excluded)
    prefer_canonical: bool = True  # related.prefer_canonical: a copy gives way to its original


@dataclass(frozen=True, eq=False)
class Filled:
    """The list's hits with the fallback's appended, the picked positions with the fallback's
    kept ones after the list's, and each fallback position's source (``reasons.fallback``)."""

    hits: Hits
    picked: Picked
    source: dict[int, str]


def fill(
    session: Session,
    snap: Snapshot,
    hits: Hits,
    picked: Picked,
    anchor: Anchor,
    need: Need,
    criterion: DuplicateCriterion,
    curation: Curation,
    texts: Texts,
    facts: Facts,
) -> Filled:
    """The list ``picked`` (positions in ``hits``) filled up to ``need.count`` items (see the
    module docstring); unchanged when it has that many or no fallback article fits."""
    missing = need.count - len(picked.kept)
    filt = _within_category(need.filt, anchor.category)
    if missing <= 0 or filt is None:
        return Filled(hits, picked, {})
    taken = [int(hits.ids[i]) for i in picked.kept]
    taken += [int(hits.ids[s.position]) for s in picked.suppressed]
    filt = replace(filt, exclude_ids=np.union1d(filt.exclude_ids, np.array(taken, np.int64)))
    found, source = candidates(session, snap, need, filt, anchor.category)
    found = curation.without_excluded(session, found)
    if not len(found):
        return Filled(hits, picked, {})
    anchors = _anchors(facts, snap, hits, picked, anchor, texts)
    walk = pick(
        with_clusters(facts, found.ids, found.fingerprints, hit_vectors(snap, found), texts),
        anchors,
        criterion,
        missing,
        curation=curation,
        prefer_canonical=0 if need.prefer_canonical else None,
    )
    base, before = len(hits), len(picked.kept)
    kept = picked.kept + [base + i for i in walk.kept]
    cut = [Suppressed(base + s.position, s.reason, before + s.kept_before) for s in walk.suppressed]
    out = Picked(kept, picked.suppressed + cut, picked.stands_for)
    labels = {base + i: source[int(found.ids[i])] for i in walk.kept}
    return Filled(concat(hits, found), out, labels)


def candidates(
    session: Session, snap: Snapshot, need: Need, filt: RowFilter, category: str | None
) -> tuple[Hits, dict[int, str]]:
    """Fallback candidates in order (most clicked first, then the newest), and the source of
    each by article id."""
    newest = snap.view.newest(need.pool, filt)
    if need.mode != MOST_CLICKED:
        return newest, dict.fromkeys(newest.ids.tolist(), NEWEST)
    since = datetime.now(UTC).date() - timedelta(days=need.days - 1)
    ids = np.array(
        most_clicked(session=session, since=since, category=category, limit=need.pool), np.int64
    )
    parts, rows = snap.view.locate_many(ids)
    live = parts >= 0
    parts, rows, ids = parts[live], rows[live], ids[live]
    ok = snap.view.allowed(parts, rows, filt)
    prints = np.array(
        [
            snap.view.parts[p].segment.fingerprints[r]
            for p, r in zip(parts[ok], rows[ok], strict=True)
        ],
        np.uint64,
    )
    clicked = Hits(parts[ok], rows[ok], ids[ok], np.zeros(int(ok.sum())), prints)
    rest = take(newest, np.flatnonzero(~np.isin(newest.ids, clicked.ids)))
    source = dict.fromkeys(rest.ids.tolist(), NEWEST)
    source.update(dict.fromkeys(clicked.ids.tolist(), MOST_CLICKED))
    return concat(clicked, rest), source


def _within_category(filt: RowFilter, category: str | None) -> RowFilter | None:
    """The request's filters narrowed to the article's category (None: the request's
    categories leave it out, so nothing can fill)."""
    if category is None:
        return filt
    mine = np.array([label_hash(category)], np.uint64)
    if filt.categories is not None and not np.isin(mine, filt.categories).all():
        return None
    return replace(filt, categories=mine)


def _anchors(
    facts: Facts, snap: Snapshot, hits: Hits, picked: Picked, anchor: Anchor, texts: Texts
) -> Articles:
    """The article and the list's items: nothing filled in may duplicate one of them."""
    shown = take(hits, picked.kept)
    stored = hit_vectors(snap, shown)
    ids = np.concatenate((np.array([anchor.id], np.int64), shown.ids))
    prints = np.concatenate((np.array([anchor.fingerprint], np.uint64), shown.fingerprints))
    return with_clusters(
        facts, ids, prints, lambda j: anchor.vector if j == 0 else stored(j - 1), texts
    )
