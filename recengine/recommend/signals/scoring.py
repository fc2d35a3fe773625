"""The step a related list calls to rank with its readers' signals, after the content ranking.

For one list (``recommend.related``), with the weights of its A/B variant (:class:`Weights`,
``related.*`` unless the variant sets its own; all 0 by default: the list is the content's):

1. :meth:`Signals.with_coreads`: the article's co-read neighbours (``signals.coreads``) join
   the candidates, scored exactly like the others (the TF-IDF cosine blended with the dense
   part), before editors' exclusions and the variant's parts;
2. :meth:`Signals.rescore`: ``score + coread_weight * coread`` (the co-read part), times the
   bounded engagement boost (``signals.engagement``), re-sorted (score, then id); then
   exploration places its draws in the last slots of the first page of ``k`` items
   (``signals.exploration``), so the pages of a list paged ``k`` at a time are slices of one
   list (an item explored onto the first page is not on the second, nor is one skipped).

Duplicate suppression, the floor and the pins come after, as for any list: a co-read or
explored article that duplicates the article or an item above is suppressed like any other.
Each item's ``reasons`` say what the signals gave it: ``coread`` (the co-read part's share of
the score), ``engagement`` (the boost's share, negative for an item clicked less than the
site's average; absent while no click moves it) and ``explore`` (placed by exploration, not
by its score).
"""

from __future__ import annotations

from collections.abc import Callable, Hashable
from dataclasses import dataclass
from datetime import date, datetime
from functools import partial

import numpy as np
import numpy.typing as npt
from sqlalchemy.orm import Session, sessionmaker

from recengine.config import Settings, SignalsSettings
from recengine.index.ids import among
from recengine.index.related.view import Hits, IndexView, RowFilter
from recengine.recommend.lists.blend import DenseQuery, blended
from recengine.recommend.lists.reasons import Reasons
from recengine.recommend.signals.coreads import CoCounts, LateReads, neighbours, read_counts
from recengine.recommend.signals.engagement import Totals, boost, posterior, read_totals
from recengine.recommend.signals.exploration import explore, seed_of
from recengine.recommend.signals.window import Halves, Window, utc_now

F64 = npt.NDArray[np.float64]
I64 = npt.NDArray[np.int64]
NO_NEIGHBOURS = (np.zeros(0, np.int64), np.zeros(0, np.float64))


@dataclass(frozen=True)
class Weights:
    """How much each signal counts in one list (0: not at all)."""

    engagement: float = 0.0
    coread: float = 0.0
    explore: float = 0.0

    @property
    def any(self) -> bool:
        return bool(self.engagement or self.coread or self.explore)


def in_use(settings: Settings) -> Weights:
    """The largest weight of each signal over the settings and every variant."""
    r, variants = settings.related, settings.experiment.variants.values()
    named = list(variants) if settings.experiment.name else []

    def most(name: str) -> float:
        values = [getattr(v, name) for v in named if getattr(v, name) is not None]
        return float(max([getattr(r, name), *values]))

    return Weights(most("engagement_weight"), most("coread_weight"), most("explore_share"))


def answers_epoch(settings: Settings, now: float) -> Hashable:
    """What a cached answer also depends on (``web.api.answers``): with readers' signals in
    use, the refresh period of their summaries (``signals.refresh_s``) and the exploration
    period; without, nothing (a constant)."""
    used, s = in_use(settings), settings.signals
    if not used.any:
        return 0
    refresh = int(now // s.refresh_s) if s.refresh_s > 0 else now
    return refresh, int(now // s.explore_period_s) if used.explore else 0


@dataclass(frozen=True)
class ListSignals:
    """What one list reads of the signals: its article, weights, co-read neighbours (ids and
    scores, best first) and the engagement summaries (None: not used)."""

    source: int
    weights: Weights
    neighbours: tuple[I64, F64]
    engagement: Halves[Totals] | None
    period: int


@dataclass(frozen=True)
class Scored:
    """The hits re-ranked, and what the signals gave each item (by article id)."""

    hits: Hits
    reasons: Gave


@dataclass(frozen=True, eq=False)
class Gave:
    """What the signals gave each candidate, said for the few a page shows (:meth:`get`):
    ``ids`` ``int64 (n,)``, their co-read part and engagement share ``float64 (n,)``, and the
    explored ones."""

    ids: I64
    coread: F64
    engagement: F64
    explored: frozenset[int]

    @classmethod
    def none(cls) -> Gave:
        return cls(np.zeros(0, np.int64), np.zeros(0), np.zeros(0), frozenset())

    def get(self, article: int, default: Reasons) -> Reasons:
        """The item's reasons from the signals (``default`` when they gave it nothing)."""
        at = np.flatnonzero(self.ids == article)
        if not len(at):
            return default
        i = int(at[0])
        reasons: Reasons = {}
        if self.coread[i] > 0:
            reasons["coread"] = round(float(self.coread[i]), 6)
        share = round(float(self.engagement[i]), 6)
        if share:  # 0 without clicks (every rate at the site's): nothing to say
            reasons["engagement"] = share
        if article in self.explored:
            reasons["explore"] = True
        return reasons or default


class Signals:
    """Readers' signals of one process (summaries refreshed from SQL, ``signals.window``).

    Args:
        settings: ``signals`` settings.
        clock: the time now (tests and the click simulator pass their own).
        factory: sessions to refresh the summaries with in a thread of their own (servers);
            None: in the thread of the list that finds them due.
    """

    def __init__(
        self,
        settings: Settings,
        clock: Callable[[], datetime] = utc_now,
        factory: sessionmaker[Session] | None = None,
    ) -> None:
        s = self.settings = settings.signals
        self.clock = clock
        self.engagement = Window(
            read_totals, Totals.empty(), s.engagement_days, s.refresh_s, clock, None, factory
        )
        build = partial(_coread_counts, settings=s)
        self.coreads = Window(
            build, CoCounts.empty(), s.coread_days, s.refresh_s, clock, LateReads(), factory
        )

    def of_list(self, session: Session, source: int, weights: Weights) -> ListSignals:
        """The signals of ``source``'s list (summaries read only for the signals weighed)."""
        found = NO_NEIGHBOURS
        if weights.coread > 0:
            found = neighbours(self.coreads.current(session), source, self.settings)
        engagement = None
        if weights.engagement > 0 or weights.explore > 0:
            engagement = self.engagement.current(session)
        period = int(self.clock().timestamp() // self.settings.explore_period_s)
        return ListSignals(source, weights, found, engagement, period)

    def with_coreads(
        self,
        lists: ListSignals,
        view: IndexView,
        hits: Hits,
        query: tuple[npt.NDArray[np.uint64], npt.NDArray[np.float32]],
        row_filter: RowFilter,
        dense: DenseQuery | None,
    ) -> Hits:
        """``hits`` and the co-read neighbours that are not among them (live, passing the
        filters), scored exactly like them, best first."""
        ids = lists.neighbours[0]
        ids = ids[~among(ids, hits.ids)]
        if not len(ids):
            return hits
        parts, rows = view.locate_many(ids)
        parts, rows = parts[parts >= 0], rows[parts >= 0]
        keep = view.allowed(parts, rows, row_filter)
        both = _joined(hits, blended(view.score(parts[keep], rows[keep], *query), dense))
        return both.take(np.lexsort((both.ids, -both.scores)))

    def rescore(
        self, lists: ListSignals, hits: Hits, *, floor: float, k: int, key: str | None
    ) -> Scored:
        """``hits`` with the co-read part, the engagement boost and exploration (see the module
        docstring); as they are when the list weighs no signal."""
        w = lists.weights
        if not w.any or not len(hits):
            return Scored(hits, Gave.none())
        ids, scores = hits.ids, hits.scores.astype(np.float64)
        coread = _coread_of(ids, *lists.neighbours) * w.coread
        base = scores + coread
        post = None
        if lists.engagement is not None:
            post = posterior(lists.engagement, lists.source, ids, self.settings)
        final = base
        if post is not None and w.engagement > 0:
            final = base * boost(post.mean, post.mu, w.engagement)
        order = np.lexsort((ids, -final))
        explored: frozenset[int] = frozenset()
        if w.explore > 0 and post is not None:  # every page: slices of one explored list
            rng = np.random.default_rng(seed_of(key, lists.period, lists.source))
            eligible = final[order] >= floor
            picked = explore(
                ids[order],
                post.alpha[order],
                post.beta[order],
                eligible,
                k,
                w.explore,
                self.settings.explore_pool,
                rng,
            )
            order, explored = order[picked.order], picked.explored
        out = hits.take(order)
        out = Hits(out.part, out.row, out.ids, final[order], out.fingerprints, out.dense)
        return Scored(out, Gave(ids, coread, final - base, explored))


def _coread_of(ids: I64, nb_ids: I64, nb_scores: F64) -> F64:
    """Each of ``ids``' co-read score with the list's article (0: not a neighbour)."""
    if not len(nb_ids):
        return np.zeros(len(ids), np.float64)
    order = np.argsort(nb_ids)
    keys, values = nb_ids[order], nb_scores[order]
    at = np.searchsorted(keys, ids).clip(max=len(keys) - 1)
    return np.where(keys[at] == ids, values[at], 0.0)


def _joined(first: Hits, second: Hits) -> Hits:
    dense = None
    if first.dense is not None and second.dense is not None:
        dense = np.concatenate((first.dense, second.dense))
    return Hits(
        np.concatenate((first.part, second.part)),
        np.concatenate((first.row, second.row)),
        np.concatenate((first.ids, second.ids)),
        np.concatenate((first.scores, second.scores)),
        np.concatenate((first.fingerprints, second.fingerprints)),
        dense,
    )


def _coread_counts(
    session: Session, first: date, last: date, past: bool, *, settings: SignalsSettings
) -> CoCounts:
    """The co-read counts of some days (a ``signals.window.Build``); the past half pruned."""
    return read_counts(session, first, last, settings, keep=past)
