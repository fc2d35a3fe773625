"""Reader feeds: what to read next, from what a reader has read, with duplicates taken out.

1. History: the reader's latest ``feed.history_limit`` reads of live articles. A read weighs
   ``0.5 ** (age / half_life_days)``; reading an article again adds up.
2. Interests (``recommend.feeds.interests``): reads are grouped greedily, heaviest first: a read
joins
   the interest whose centroid it is most similar to (cosine >= ``topic_similarity``), else
   starts one. An interest's *share* is its weight over the whole history's, so a topic read
   once in a long history gets a small share instead of dominating. The ``max_topics`` heaviest
   are kept.
3. Candidates: each interest's centroid (its ``topic_terms`` largest terms, unit length) is a
   query of the related-articles index, excluding everything the reader has read.
4. Slots go to interests in proportion to their shares (D'Hondt order: the next slot goes to
   the interest with the largest ``share / (slots + 1)``), which also interleaves them.
5. Suppression (``recommend.lists.suppress``): nothing within the duplicate criterion of any read
   article or of an item above (texts read for the close pairs outside one cluster, as in
   related lists: ``recommend.lists.criterion``); at most one article per cluster; an item with
   cosine above ``max_pair_similarity`` to one above is skipped (diversity).
6. Too few items (or no history at all): the newest articles fill the rest, de-duplicated the
   same way, with ``reasons = {"fresh": true}``. Interest items scoring below the floor
   (``feed.min_score``, or the request's ``min_score``) leave their places to them.
7. Signals (``recommend.signals``): with ``related.half_life_days`` an interest's candidates
   decay by their age against now (``reasons.freshness``; the floor applies to the decayed
   score, as in related lists: an old item gives its place to the newest articles); with
   ``related.diversity``
   each interest's first ``related.diversity_candidates`` candidates are reordered by maximal
   marginal relevance before the slots are dealt.
8. Editors' overrides (``recommend.lists.curation``): an interest's queue starts with the pins of
its
   reads (in the editor's order; ``reasons.pinned``), which still go through suppression
   (though not the diversity rule); excluded articles never appear; an article blocked with a
   read article or with an item above is skipped; ``not_duplicate`` / ``same_article`` correct
   suppression as in related lists.

Body: ``{"user": id, "items": [...], "suppressed": [...]}``, items and suppressed shaped as in
the related-articles body.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import numpy as np
from sqlalchemy.orm import Session

from recengine.config import Settings
from recengine.errors import InvalidRequest, NotFound
from recengine.features.tfidf import EMPTY_VECTOR, SparseVector
from recengine.index.related.view import Hits, RowFilter
from recengine.recommend.feeds.interests import Interest, find_interests, history_of
from recengine.recommend.feeds.retention import cutoff
from recengine.recommend.feeds.slate import Slate
from recengine.recommend.lists.criterion import Articles, DuplicateCriterion, anonymous
from recengine.recommend.lists.curation import Curation, concat
from recengine.recommend.lists.explain import Item, SharedTerms
from recengine.recommend.lists.facts import Facts, facts_of
from recengine.recommend.lists.listing import (
    Texts,
    above,
    cut_entries,
    hits_in_order,
    item,
    to_row_filter,
    with_clusters,
)
from recengine.recommend.lists.params import Filters, check_id, check_int, check_time
from recengine.recommend.lists.reasons import Reasons
from recengine.recommend.live import LiveIndex, Snapshot, search_params
from recengine.recommend.signals.diversity import diversify_hits
from recengine.recommend.signals.freshness import decay
from recengine.storage.rows.events import add_events, read_article_ids
from recengine.storage.rows.features import features_of
from recengine.storage.rows.index_source import briefs, fingerprints_by_id, internal_ids
from recengine.storage.rows.overrides import pins_of
from recengine.storage.state import lock_writers
from recengine.text.cleaning.excerpt import card_rule
from recengine.text.neardup.kept import KeptTexts


class ReaderFeeds:
    """Feeds and the reads they are built from. One per process; thread-safe.

    Args:
        settings: ``feed``, ``related`` and ``features.hamming_k`` settings.
        index: the process's live related-articles index.
        kept: what is compared of texts, kept across answers (shared with the process's
            related lists; None: a store of its own, ``related.kept_compared_mb``).
    """

    def __init__(self, settings: Settings, index: LiveIndex, kept: KeptTexts | None = None) -> None:
        self.settings = settings
        self.index = index
        self.criterion = DuplicateCriterion.from_settings(settings)
        self.card_rule = card_rule(settings.ingest.summary_chars)
        self.kept = KeptTexts(settings.related.kept_compared_mb << 20) if kept is None else kept

    def record_reads(
        self,
        user_id: str,
        article_ids: list[str],
        *,
        session: Session,
        at: datetime | str | float | None = None,
    ) -> int:
        """Store that ``user_id`` read these articles (caller ids), in the caller's transaction.

        ``at`` is when (the one rule for times, ``recengine.times``; default: now). Nothing is
        committed here: the caller commits (or rolls back) its session. An event stored
        already (same reader, article and time) is not stored again, and counts as recorded
        (a retried request gets the same answer). Events take the writers' lock but no change
        sequence number: related lists and clusters do not depend on them, so no worker's
        cached answers are dropped for a read.

        Raises:
            InvalidRequest: bad user id, article ids or time (a time more than
                ``events.max_future_seconds`` ahead of the clock, or older than
                ``events.retention_days``, too). NotFound: an article does not exist (then
                nothing is written).
        """
        user_id = check_id(user_id, "user id")
        wanted = list(dict.fromkeys(check_id(a) for a in article_ids))
        now = datetime.now(UTC)
        when = check_time(at, "at", self.settings.ingest.zone) or now
        self._check_when(when, now)
        lock_writers(session=session)
        found = internal_ids(session=session, external_ids=wanted)
        live = briefs(session=session, ids=list(found.values()))
        missing = [a for a in wanted if found.get(a) not in live]
        if missing:
            raise NotFound.article(missing[0])
        rows = [
            {"user_id": user_id, "article_id": found[a], "kind": "read", "at": when} for a in wanted
        ]
        add_events(session=session, rows=rows)
        return len(rows)

    def _check_when(self, when: datetime, now: datetime) -> None:
        """Refuse a read in the future (beyond the clocks' skew) or past the retention."""
        ahead = self.settings.events.max_future_seconds
        if when > now + timedelta(seconds=ahead):
            raise InvalidRequest(
                f"at: {when.isoformat()} is in the future (more than {ahead:g} s after the "
                f"server's clock, {now.isoformat(timespec='seconds')}; events.max_future_seconds)"
            )
        oldest = cutoff(self.settings, now)
        if oldest is not None and when < oldest:
            raise InvalidRequest(
                f"at: {when.isoformat()} is older than events.retention_days "
                f"({self.settings.events.retention_days} days): it would be erased at once"
            )

    def feed(
        self,
        user_id: str,
        *,
        session: Session,
        k: int | str | None = None,
        offset: int | str = 0,
        **filters: Any,
    ) -> dict[str, Any]:
        """The feed body for ``user_id`` (see the module docstring).

        Args:
            offset: items skipped (paging: the page after ``offset`` items of the same feed,
                at most ``feed.max_offset``).
            filters: as for related articles (``exclude``, ``categories``, ``tags``,
                ``published_after``, ``published_before``, ``min_score``).

        Raises:
            InvalidRequest: a bad parameter. ModelMissing: no IDF model yet.
        """
        f = self.settings.feed
        user_id = check_id(user_id, "user id")
        k = check_int(f.default_k if k is None else k, "k", 1, f.max_k)
        offset = check_int(offset, "offset", 0, f.max_offset)
        parsed = Filters.parse(
            self.settings.related.max_filter_values, self.settings.ingest.zone, **filters
        )
        snap = self.index.current(session=session)
        facts = facts_of(snap, session, self.card_rule)
        factors: dict[int, float] = {}
        slate = self._slate(session, snap, facts, user_id, parsed, offset + k, factors)
        return self._body(facts, snap, user_id, slate, offset, factors)

    def _slate(
        self,
        session: Session,
        snap: Snapshot,
        facts: Facts,
        user_id: str,
        parsed: Filters,
        k: int,
        factors: dict[int, float],
    ) -> Slate:
        """The feed's first ``k`` entries (interests' items, then the newest articles); the
        freshness factors of the candidates are added to ``factors``."""
        f = self.settings.feed
        now = datetime.now(UTC)
        since = cutoff(self.settings, now)  # reads past the retention count for nothing
        read = sorted(read_article_ids(session=session, user_id=user_id, since=since))
        history = history_of(session, snap.version, user_id, f, now, since)
        interests = find_interests(history, f)
        row_filter = to_row_filter(facts, parsed, exclude=read)
        texts = Texts(session, self.settings.features.strip_boilerplate, self.kept, facts.seq_of)
        anchors = self._anchors(session, facts, snap, read, texts)
        curation = Curation.of_articles(session, read)
        slate = Slate(
            snap, anchors, self.criterion, f.max_pair_similarity, k, curation, texts, facts
        )
        floor = f.min_score if parsed.min_score is None else parsed.min_score
        for interest, found in self._candidates(snap, interests, row_filter, floor, k):
            hits = self._signals(snap, found, now, factors, floor)
            pins = pinned_for(session, snap, interest, row_filter)
            slate.offer(session, interest, concat(pins, hits), pinned=len(pins))
        slate.fill()
        if len(slate) < k:
            fresh = snap.view.newest(f.fresh_pool, row_filter)
            slate.offer(session, None, fresh)
            slate.fill()
        return slate

    def _signals(
        self, snap: Snapshot, hits: Hits, now: datetime, factors: dict[int, float], floor: float
    ) -> Hits:
        """An interest's candidates decayed by age (their factors added to ``factors``; those
        the decay put below ``floor`` left out) and diversified (``recommend.signals``); as
        they are with both off."""
        r = self.settings.related
        if r.half_life_days > 0:
            decayed = decay(
                snap.view, hits, int(now.timestamp()), r.half_life_days, before_only=True
            )
            hits = above(decayed.hits, floor)
            factors.update(decayed.factor_of)
        return diversify_hits(snap.view, hits, r.diversity, r.diversity_candidates)

    def _anchors(
        self, session: Session, facts: Facts, snap: Snapshot, read: list[int], texts: Texts
    ) -> Articles:
        """Every read article with features: nothing in the feed may duplicate one of them."""
        prints = fingerprints_by_id(session=session, version=snap.version, ids=read)
        ids = np.fromiter(prints.keys(), np.int64, len(prints))

        def vector(j: int) -> SparseVector:
            where = snap.view.locate(int(ids[j]))
            if where is not None:
                return anonymous(*snap.view.vector(*where))
            stored = features_of(session=session, version=snap.version, article_ids=[int(ids[j])])
            return SparseVector.from_bytes(stored[0].vector) if stored else EMPTY_VECTOR

        return with_clusters(
            facts, ids, np.fromiter(prints.values(), np.uint64, len(prints)), vector, texts
        )

    def _candidates(
        self,
        snap: Snapshot,
        interests: list[Interest],
        row_filter: RowFilter,
        min_score: float,
        k: int,
    ) -> list[tuple[Interest, Hits]]:
        params = search_params(self.settings, max(self.settings.related.candidates, 3 * k))
        out = []
        for interest in interests:
            hits = snap.view.search(interest.hashes, interest.weights, params, row_filter)
            out.append((interest, above(hits, min_score)))
        return out

    def _body(
        self,
        facts: Facts,
        snap: Snapshot,
        user_id: str,
        slate: Slate,
        offset: int,
        factors: dict[int, float],
    ) -> dict[str, Any]:
        """The page after ``offset`` entries, with what was suppressed while it was filled
        (``factors``: the freshness factor of each decayed candidate, by id)."""
        ids = slate.all_ids()
        shown = facts.briefs(ids)
        items = []
        # each interest's items, explained together against it: by interest, its reasons and
        # their items' vectors (``SharedTerms.assign``)
        interests: dict[int, Interest] = {}
        explained: dict[int, list[Reasons]] = {}
        vectors: dict[int, list[Item]] = {}
        for entry in slate.kept[offset:]:
            row = shown.get(entry.id)
            if row is None:
                continue
            if entry.interest is None:
                items.append(item(row, 0.0, {"fresh": True}))
                continue
            hashes, weights = snap.view.vector(entry.part, entry.row)
            factor = None if entry.pinned else factors.get(entry.id)
            reasons: Reasons = {
                "because_you_read": [
                    shown[i].external_id for i in entry.interest.examples if i in shown
                ],
                "interest_share": round(entry.interest.share, 4),
                "shared_terms": [],
            }
            if factor is not None:
                reasons["freshness"] = round(factor, 4)
            if entry.pinned:
                reasons["pinned"] = True
            key = id(entry.interest)
            interests[key] = entry.interest
            explained.setdefault(key, []).append(reasons)
            vectors.setdefault(key, []).append((hashes, weights, factor or 1.0))
            items.append(item(row, entry.score, reasons))
        limit = self.settings.related.explain_terms
        for key, interest in interests.items():
            SharedTerms(interest.vector).assign(explained[key], vectors[key], limit)
        external = {i: row.external_id for i, row in shown.items()}
        cuts = [(s.id, s.reason) for s in slate.suppressed if s.kept_before >= offset]
        suppressed = cut_entries(facts, cuts, external)
        return {"user": user_id, "items": items, "suppressed": suppressed}


def pinned_for(session: Session, snap: Snapshot, interest: Interest, row_filter: RowFilter) -> Hits:
    """The pins of an interest's reads (read by read, each in the editor's order) that are in
    the index and pass the filters, scored against the interest."""
    wanted: list[int] = []
    for read in interest.examples:
        wanted += [p[1] for p in pins_of(session=session, article_id=read) if p[1] not in wanted]
    return hits_in_order(snap, wanted, interest.hashes, interest.weights, row_filter)
