"""Related articles: candidates -> exact cosine -> filters -> duplicate suppression -> explanations.

:meth:`RelatedArticles.related` returns the body of DESIGN.md's HTTP contract::

    {"article": "id",
     "items": [{"id", "title", "url", "score", "reasons": {"shared_terms": [...], ...}}],
     "suppressed": [{"id", "duplicate_of", "distance", "rule", "score", "via"}],
     "floor": {"min_score", "dropped"}}

``score`` (6 decimals) is the cosine of the two stored TF-IDF vectors, blended with the cosine
of their dense (LSA) vectors where the version has a dense part (``recommend.lists.blend``:
``(1 - w) * cosine + w * dense cosine``, ``w = related.dense_weight``); items are ordered by
score, ties by the earlier-ingested article. An item's ``reasons`` say where its score came
from: ``shared_terms`` (each term's ``(1 - w) * q_t * d_t``), ``dense`` (``w * dense cosine``,
0 without a dense part); the shares shown plus those of the terms not shown add up to the
score. ``suppressed`` lists what would have been on this
page but is a near-duplicate (``recommend.lists.criterion``) of the article itself
(``duplicate_of`` = the article) or of an item ranked above it (``duplicate_of`` = that item),
with the Hamming distance of their fingerprints and the rule that made them the same article
(``rule``: ``resemblance`` / ``containment`` of the texts for a cluster, ``cosine`` of the
vectors outside clusters, ``editor`` for an override; ``score`` its figure; ``via`` the
cluster's canonical when the two met through it: ``recommend.lists.listing.cut_entries``), so an
editor can see why X is not shown.

The relevance floor: items scoring below ``min_score`` (the request's, else
``related.min_score``) are left out, so a list can be shorter than ``k`` rather than padded with
junk; ``floor.dropped`` says how many of this page's places were left empty by it. The floor
cuts the list after suppression (scores only fall down the list, so the items above it, and the
suppressed ones among them, are exactly those of a list ranked with the floor as a filter).

Editors' overrides (``recommend.lists.curation``) are read as the list is made (nothing is read
while none exists at the index's last position check, ``OverridePresence``): the article's pins
come first, in the editor's order, scored like any item (``reasons.pinned``), never cut by the
floor but still suppressed when they duplicate the article or a pin above; excluded articles
and the article's blocked partners never appear; ``not_duplicate`` / ``same_article`` correct
suppression. The ranking is the one of the list's A/B variant (``recommend.ranking``:
``variant`` in the body), assigned by the request's split key (a reader or session id).

Signals (``recommend.signals``, each off by default and settable per A/B variant): with
``related.half_life_days`` the candidates' scores decay by their distance in time from the
article (``reasons.freshness``: the factor; the shares of the explanation are scaled by it, so
they still add up to the score) before suppression and the floor; with ``related.diversity``
the first ``related.diversity_candidates`` items after the floor are reordered by maximal
marginal relevance; with ``related.min_items`` a list left shorter than that is filled with
the newest (or most-clicked) articles of the article's category (``reasons.fallback``).

The query article, the items' briefs and the clusters come from the snapshot (its index and
its briefs, ``recommend.lists.facts``, caught up to the same position), so an article ingested
a moment ago gets related items right away and a list reads no SQL for them; without briefs
(a model opening in the background) they are read from SQL as before.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

import numpy as np
from sqlalchemy.orm import Session

from recengine.config import Settings
from recengine.derived.rows import label_hash, label_hashes
from recengine.index.related.view import Hits, RowFilter
from recengine.recommend.lists.blend import dense_query, ranked
from recengine.recommend.lists.criterion import DuplicateCriterion
from recengine.recommend.lists.curation import Curation, OverridePresence, concat
from recengine.recommend.lists.facts import Facts, facts_of
from recengine.recommend.lists.listing import (
    Texts,
    hit_vectors,
    hits_in_order,
    to_row_filter,
    with_clusters,
)
from recengine.recommend.lists.page import Explaining, Shown, page_body, under_floor
from recengine.recommend.lists.params import Filters, check_id, check_int
from recengine.recommend.lists.query import Query, load_query, query_dense
from recengine.recommend.lists.suppress import Picked, pick
from recengine.recommend.live import LiveIndex, Snapshot, search_params
from recengine.recommend.ranking import Ranking, Variants, blend
from recengine.recommend.signals.diversity import diversify_kept
from recengine.recommend.signals.fallback import Anchor, Filled, Need, fill
from recengine.recommend.signals.freshness import decay
from recengine.recommend.signals.params import SignalParams
from recengine.recommend.signals.scoring import Gave, ListSignals, Signals
from recengine.text.cleaning.excerpt import card_rule
from recengine.text.neardup.kept import KeptTexts

# When suppression and filters leave fewer than offset + k results, candidates grow by this
# factor, at most this many times (then the list is what it is: there are no more).
GROWTH, MAX_ROUNDS = 4, 4


@dataclass(frozen=True)
class Answer:
    """A body with the index snapshot (model version, change sequence) it was computed from."""

    body: dict[str, Any]
    version: int
    seq: int


class RelatedArticles:
    """The related-articles use case. One per process; safe to share between threads.

    Args:
        settings: ``related`` and ``features.hamming_k`` settings.
        index: the process's live index.
        kept: what is compared of texts, kept across answers (shared with the process's
            feeds; None: a store of its own, ``related.kept_compared_mb``).
    """

    def __init__(self, settings: Settings, index: LiveIndex, kept: KeptTexts | None = None) -> None:
        self.settings = settings
        self.index = index
        self.criterion = DuplicateCriterion.from_settings(settings)
        self.variants = Variants.from_settings(settings)
        self.overrides = OverridePresence()
        self.signals = Signals(settings, factory=index.factory if index.background else None)
        self.card_rule = card_rule(settings.ingest.summary_chars)
        self.kept = KeptTexts(settings.related.kept_compared_mb << 20) if kept is None else kept

    def related(
        self,
        article_id: str,
        *,
        session: Session,
        k: int | str | None = None,
        offset: int | str = 0,
        split_by: str | None = None,
        **filters: Any,
    ) -> dict[str, Any]:
        """The related-articles body for ``article_id`` (the caller's id): :meth:`answer`'s."""
        return self.answer(
            article_id, session=session, k=k, offset=offset, split_by=split_by, **filters
        ).body

    def answer(
        self,
        article_id: str,
        *,
        session: Session,
        k: int | str | None = None,
        offset: int | str = 0,
        split_by: str | None = None,
        **filters: Any,
    ) -> Answer:
        """The related-articles body for ``article_id`` (the caller's id), with the index
        snapshot it was computed from (what the answer cache keys on, ``web.api.answers``).

        Args:
            article_id: the article.
            session: a session of the caller (read only; nothing is written).
            k: results wanted (``related.default_k`` when None; at most ``related.max_k``).
            offset: results skipped (paging).
            split_by: the A/B split key (``recommend.ranking.split_key``); None: the first
                variant. A variant's ``k`` and ``min_score`` replace the request's.
            **filters: ``exclude`` (caller ids), ``categories``, ``tags``,
                ``published_after``, ``published_before`` (the rule of ``recengine.times``),
                ``min_score`` (0-1; ``related.min_score`` when not given).

        Raises:
            InvalidRequest: a parameter is invalid. NotFound: no live article has this id.
            ModelMissing: no IDF model has been fitted yet.
        """
        r = self.settings.related
        article_id = check_id(article_id)
        ranking = self.variants.assign(split_by)
        params = SignalParams.of(r, ranking.half_life_days, ranking.diversity, ranking.min_items)
        k = check_int(r.default_k if k is None else k, "k", 1, r.max_k)
        k = k if ranking.k is None else min(ranking.k, r.max_k)
        offset = check_int(offset, "offset", 0, r.max_offset)
        parsed = Filters.parse(r.max_filter_values, self.settings.ingest.zone, **filters)
        floor = r.min_score if parsed.min_score is None else parsed.min_score
        floor = floor if ranking.min_score is None else ranking.min_score
        snap = self.index.current(session=session)
        facts = facts_of(snap, session, self.card_rule)
        query = load_query(session, snap, article_id)
        curation = self._curation(session, query.id)
        blocked = sorted(curation.blocked_with(query.id))
        row_filter = to_row_filter(facts, parsed, exclude=[query.id, *blocked])
        pinned = curation.without_excluded(session, pinned_hits(snap, query, curation, row_filter))
        readers = self.signals.of_list(session, query.id, ranking.signals(r))
        page = _Page(floor, k, split_by)
        lists = _Lists(snap, query, curation, ranking, pinned, params, readers, page, facts)
        ranked_filter = replace(
            row_filter, exclude_ids=np.union1d(row_filter.exclude_ids, pinned.ids)
        )
        ranked = self._ranked(session, lists, ranked_filter, params.wanted(offset, k))
        hits, picked = ranked.hits, ranked.picked
        picked, dropped = under_floor(hits, picked, floor, offset, k, exempt=len(pinned))
        pins_kept = sum(1 for i in picked.kept if i < len(pinned))  # they stay first
        picked = diversify_kept(
            snap.view, hits, picked, params.diversity, params.diversity_candidates, pins_kept
        )
        filled = self._filled(session, lists, hits, picked, row_filter)
        explaining = Explaining(r.dense_weight, r.explain_terms)
        body = page_body(_shown(lists, filled, ranked), offset, k, explaining)
        body["floor"] = {"min_score": floor, "dropped": dropped}
        body["variant"] = ranking.name
        return Answer(body, snap.version, snap.seq)

    def _curation(self, session: Session, article_id: int) -> Curation:
        """The article's overrides; none read when none exists at the index's last position
        check (``recommend.lists.curation.OverridePresence``)."""
        position = self.index.follower.position
        if position is not None and not self.overrides.exist(session, position.seq):
            return Curation.none()
        return Curation.of_article(session, article_id)

    def _ranked(
        self, session: Session, lists: _Lists, row_filter: RowFilter, wanted: int
    ) -> _Ranked:
        """The pins, then candidates of every source best first, the ones kept after
        suppression (``wanted`` at most), the freshness factor of each decayed candidate by id
        (none without ``half_life_days``) and what readers' signals gave each item
        (``recommend.signals.scoring``)."""
        snap, query, ranking = lists.snap, lists.query, lists.ranking
        r = self.settings.related
        n = max(ranking.candidates or r.candidates, 3 * wanted)
        vector = query_dense(snap, query)
        index = snap.dense.index if snap.dense is not None else None
        texts = self._texts(session, lists.facts)  # for every round
        factors: dict[int, float] = {}
        for _ in range(MAX_ROUNDS):
            params = search_params(self.settings, n)
            reach = -(-r.dense_candidates * n // r.candidates)
            dense = dense_query(index, vector, r.dense_weight, reach)
            found, exhausted = ranked(
                snap.view,
                query.vector.hashes,
                query.vector.weights,
                params,
                row_filter,
                query.id,
                dense,
            )
            q = (query.vector.hashes, query.vector.weights)
            found = self.signals.with_coreads(lists.readers, snap.view, found, q, row_filter, dense)
            if ranking.blended:
                category = label_hash(query.category) if query.category else 0
                found = blend(snap.view, found, ranking.weights, category, label_hashes(query.tags))
            if lists.params.half_life_days > 0:
                decayed = decay(snap.view, found, query.published, lists.params.half_life_days)
                found, factors = decayed.hits, decayed.factor_of
            page = lists.page
            ranked_k = max(page.k - len(lists.pinned), 0)  # the first page's unpinned places
            scored = self.signals.rescore(
                lists.readers, found, floor=page.floor, k=ranked_k, key=page.key
            )
            hits = concat(lists.pinned, lists.curation.without_excluded(session, scored.hits))
            picked = self._pick(session, snap, hits, query, wanted, lists, texts)
            if len(picked.kept) >= wanted or exhausted:
                break
            n *= GROWTH
        return _Ranked(hits, picked, factors, scored.reasons)

    def _texts(self, session: Session, facts: Facts) -> Texts:
        """What the criterion compares of texts, for one answer: kept across answers."""
        return Texts(session, self.settings.features.strip_boilerplate, self.kept, facts.seq_of)

    def _filled(
        self, session: Session, lists: _Lists, hits: Hits, picked: Picked, row_filter: RowFilter
    ) -> Filled:
        """The list filled up to ``min_items`` (``recommend.signals.fallback``)."""
        s, query = lists.params, lists.query
        if len(picked.kept) >= s.min_items:
            return Filled(hits, picked, {})
        anchor = Anchor(query.id, query.fingerprint, query.vector, query.category)
        prefer = self.settings.related.prefer_canonical
        need = Need(s.min_items, s.fallback, s.fallback_pool, s.fallback_days, row_filter, prefer)
        texts = self._texts(session, lists.facts)
        return fill(
            session,
            lists.snap,
            hits,
            picked,
            anchor,
            need,
            self.criterion,
            lists.curation,
            texts,
            lists.facts,
        )

    def _pick(
        self,
        session: Session,
        snap: Snapshot,
        hits: Hits,
        query: Query,
        wanted: int,
        lists: _Lists,
        texts: Texts,
    ) -> Picked:
        """Suppression over a growing prefix of ``hits``: clusters are looked up only for the
        candidates it needs (usually a few more than ``wanted``). The pins keep their places;
        after them a canonical takes its best copy's (``related.prefer_canonical``)."""
        prefer = len(lists.pinned) if self.settings.related.prefer_canonical else None
        window = min(len(hits), 2 * wanted + 8)
        stored = hit_vectors(snap, hits)
        while True:
            # one look-up for the query and the candidates: its cluster may have changed too
            ids = np.concatenate((np.array([query.id], np.int64), hits.ids[:window]))
            prints = np.concatenate(
                (np.array([query.fingerprint], np.uint64), hits.fingerprints[:window])
            )
            found = with_clusters(
                lists.facts,
                ids,
                prints,
                lambda j: query.vector if j == 0 else stored(j - 1),
                texts,
            )
            prefix = found.take(range(1, len(ids)))
            picked = pick(
                prefix,
                found.take([0]),
                self.criterion,
                wanted,
                curation=lists.curation,
                prefer_canonical=prefer,
            )
            if len(picked.kept) >= wanted or window >= len(hits):
                return picked
            window = min(len(hits), window * GROWTH)


@dataclass(frozen=True)
class _Lists:
    """What every round of one list's ranking shares."""

    snap: Snapshot
    query: Query
    curation: Curation
    ranking: Ranking
    pinned: Hits
    params: SignalParams
    readers: ListSignals
    page: _Page
    facts: Facts


@dataclass(frozen=True)
class _Page:
    """What the readers' signals' step needs of the request: the floor, the page's length and
    the split key."""

    floor: float
    k: int
    key: str | None


@dataclass(frozen=True)
class _Ranked:
    """A list's candidates (pins first), the ones kept after suppression, and what the
    signals did to them: freshness factors and readers' signals' reasons, by id."""

    hits: Hits
    picked: Picked
    factors: dict[int, float]
    gave: Gave


def _shown(lists: _Lists, filled: Filled, ranked: _Ranked) -> Shown:
    """What the list's page is made from: its hits, the fallback's included, and what the
    signals did to them."""
    return Shown(
        snap=lists.snap,
        query=lists.query,
        facts=lists.facts,
        hits=filled.hits,
        picked=filled.picked,
        n_pinned=len(lists.pinned),
        source=filled.source,
        factors=ranked.factors,
        given=ranked.gave,
    )


def pinned_hits(snap: Snapshot, query: Query, curation: Curation, row_filter: RowFilter) -> Hits:
    """The query's pins that are in the index and pass the request's filters, scored, in the
    editor's order."""
    pins = [a for a in curation.pins if a != query.id]
    return hits_in_order(snap, pins, query.vector.hashes, query.vector.weights, row_filter)
