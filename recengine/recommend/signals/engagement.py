"""Engagement: how readers of a list click its items, as a bounded boost of their scores.

The counts (``storage.rows.engagement``, written by ``pipeline.feedback``): per list article
``s`` and item ``i``, clicks ``c`` and *examinations* ``x``, the sum over the item's impressions
of the chance its slot was looked at at all (``pipeline.feedback.examination``, the stated
position-bias model). ``c / x`` then estimates how often the item is clicked when seen,
wherever it was shown: a top slot does not earn its item credit for being on top.

Beta smoothing, in three levels, each shrunk towards the one above with ``m`` pseudo
examinations (``signals.prior_strength``):

* the site:   ``mu  = (C + m * p0) / (X + m)``, ``p0 = signals.prior_ctr`` (no data yet);
* the item:   ``r_i = (c_i + m * mu) / (x_i + m)``, its counts summed over every list;
* the pair:   ``r_si = (c_si + m * r_i) / (x_si + m)``, used where the item has at least
  ``signals.min_pair_examined`` examinations in this list, else ``r_i``.

The rate's posterior is ``Beta(alpha, beta)`` with ``alpha = c + m * prior``, ``beta = x - c +
m * (1 - prior)`` (its mean is the rate above; ``x`` is taken as at least ``c``: a clicked item
was looked at, whatever the model said of its slot): exploration samples from it
(``recommend.signals.exploration``).

The boost is bounded: ``score * (1 + w * tanh(ln(r / mu)))``, ``w = related.engagement_weight``,
so a list item's score moves by at most the share ``w`` either way whatever its clicks (an item
clicked twice as often as the site's average gets ``+0.6 w``, one clicked half as often
``-0.6 w``), and the order among items of equal engagement stays the content's. What keeps
clicks from feeding on themselves: the debiasing (a top slot's clicks count for less), the
smoothing (an item needs evidence to move), the bound, and exploration (new items get seen).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date

import numpy as np
import numpy.typing as npt
from sqlalchemy.orm import Session

from recengine.config import SignalsSettings
from recengine.recommend.signals.window import Halves
from recengine.storage.rows.engagement import PairTotals, pair_totals

F64 = npt.NDArray[np.float64]
I64 = npt.NDArray[np.int64]


@dataclass(frozen=True)
class Totals:
    """The engagement counts of some days: per pair (sorted by source, item), per item
    (sorted ids) and for the whole site."""

    pairs: PairTotals
    items: I64
    item_clicks: F64
    item_examined: F64
    clicks: float
    examined: float

    @classmethod
    def of(cls, pairs: PairTotals) -> Totals:
        items, where = np.unique(pairs.item, return_inverse=True)
        clicks = np.bincount(where, pairs.clicks, len(items)).astype(np.float64)
        examined = np.bincount(where, pairs.examined, len(items)).astype(np.float64)
        return cls(
            pairs, items, clicks, examined, float(pairs.clicks.sum()), float(pairs.examined.sum())
        )

    @classmethod
    def empty(cls) -> Totals:
        return cls.of(PairTotals.empty())

    def item_counts(self, items: I64) -> tuple[F64, F64]:
        """Clicks and examinations of each of ``items`` (0 for an item never counted)."""
        return _lookup(self.items, items, self.item_clicks, self.item_examined)

    def pair_counts(self, source: int, items: I64) -> tuple[F64, F64]:
        """Clicks and examinations of each of ``items`` in ``source``'s list."""
        p = self.pairs
        lo, hi = np.searchsorted(p.source, [source, source + 1])
        return _lookup(p.item[lo:hi], items, p.clicks[lo:hi], p.examined[lo:hi])


def _lookup(keys: I64, wanted: I64, clicks: F64, examined: F64) -> tuple[F64, F64]:
    """``clicks`` and ``examined`` at each of ``wanted`` in the sorted ``keys`` (0: absent)."""
    if not len(keys):
        zero = np.zeros(len(wanted), np.float64)
        return zero, zero
    at = np.searchsorted(keys, wanted).clip(max=len(keys) - 1)
    found = keys[at] == wanted
    return np.where(found, clicks[at], 0.0), np.where(found, examined[at], 0.0)


def read_totals(session: Session, first: date, last: date, past: bool = False) -> Totals:
    """The :class:`Totals` of the days ``first`` .. ``last`` (a ``signals.window.Build``)."""
    return Totals.of(pair_totals(session=session, first=first, last=last))


@dataclass(frozen=True)
class Posterior:
    """Per item of a list: the Beta posterior of its click rate when seen, and the site's
    mean rate (``mu``)."""

    alpha: F64
    beta: F64
    mu: float

    @property
    def mean(self) -> F64:
        out: F64 = self.alpha / (self.alpha + self.beta)
        return out


def posterior(
    halves: Halves[Totals], source: int, items: I64, settings: SignalsSettings
) -> Posterior:
    """The posterior of each of ``items`` in ``source``'s list (see the module docstring)."""
    m, past, today = settings.prior_strength, halves.past, halves.today
    clicks = past.clicks + today.clicks
    mu = (clicks + m * settings.prior_ctr) / (max(past.examined + today.examined, clicks) + m)
    ci, xi = (a + b for a, b in zip(past.item_counts(items), today.item_counts(items), strict=True))
    cp, xp = (
        a + b
        for a, b in zip(
            past.pair_counts(source, items), today.pair_counts(source, items), strict=True
        )
    )
    xi, xp = np.maximum(xi, ci), np.maximum(xp, cp)  # a click was looked at (its slot, at least)
    r_item = (ci + m * mu) / (xi + m)
    own = (xp >= settings.min_pair_examined) & (xp > 0)
    prior = np.where(own, r_item, mu)
    c, x = np.where(own, cp, ci), np.where(own, xp, xi)
    alpha = c + m * prior
    beta = np.maximum(x - c, 0.0) + m * (1.0 - prior)  # a click was looked at: x >= c
    return Posterior(alpha, beta, float(mu))


def boost(rate: F64, mu: float, weight: float) -> F64:
    """The factor an item's score is multiplied by: ``1 + w * tanh(ln(rate / mu))``, within
    ``(1 - w, 1 + w)`` whatever the rate."""
    ratio = np.log(np.maximum(rate, 1e-12) / mu)
    out: F64 = 1.0 + weight * np.tanh(ratio)
    return out
