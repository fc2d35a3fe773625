"""Freshness: a candidate's score decays by its age, with a half-life (``related.half_life_days``).

::

    score' = score * 2 ** (-age_days / half_life_days)

* related lists: ``age = |published(candidate) - published(article)|``: the articles written
  around the same time as the one being read come first, whenever that was (an archive page of
  2019 gets 2019's follow-ups, not this week's news); a list stays a pure function of the
  stored articles, so it is cached like any other;
* feeds: ``age = now - published`` (an article dated in the future counts as new, never more).

Worked example, ``half_life_days = 7``: an article published on 10 May; candidate A (score
0.30) published on 9 May is 1 day away, factor ``2 ** (-1/7) = 0.906``, score 0.272; candidate
B (score 0.40) published on 12 April is 28 days away, factor ``2 ** -4 = 0.0625``, score 0.025:
A comes first, and B, now under the floor (``related.min_score = 0.04``), leaves the list. A
week halves a score, a month divides it by 16, a year by ``2 ** 52``.

**Undated articles are neither boosted nor punished**: an undated candidate gets the median
factor of the dated candidates of the same list (it ranks as an article of typical age would);
when the article itself (lists) is undated there is no age to measure and nothing decays. A
factor of 1 would put every undated article above every dated one of the same score (a boost),
a factor of 0 would bury them (a punishment).

The decay reorders the candidate pool (``related.candidates`` best by score, grown when
suppression needs more); an article outside it is not promoted. The factor is bounded by 1, so
no candidate outside the pool could have outranked the pool's lowest score. Pins keep the
editor's order and are not decayed.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from recengine.index.related.segment import NO_DATE
from recengine.index.related.view import Hits, IndexView

DAY_SECONDS = 86_400.0

F64 = npt.NDArray[np.float64]
I64 = npt.NDArray[np.int64]


def factors(
    published: I64, reference: int, half_life_days: float, *, before_only: bool = False
) -> F64:
    """``float64 (n,)``: each article's decay factor in (0, 1] (see the module docstring).

    Args:
        published: Unix seconds, ``NO_DATE`` where unknown.
        reference: the article's date (lists) or now (feeds), Unix seconds; ``NO_DATE``: no
            decay at all (every factor 1).
        half_life_days: > 0.
        before_only: feeds: an article dated after ``reference`` is of age 0 (not the
            distance to it).

    >>> factors(np.array([0, 7 * 86_400, NO_DATE]), 0, 7.0).round(3).tolist()
    [1.0, 0.5, 0.75]
    """
    if half_life_days <= 0:
        raise ValueError(f"half_life_days must be > 0, got {half_life_days}")
    published = np.asarray(published, np.int64)
    out = np.ones(len(published), np.float64)
    if reference == NO_DATE:
        return out
    dated = published != NO_DATE
    seconds = reference - published[dated].astype(np.float64)
    ages = np.maximum(seconds, 0.0) if before_only else np.abs(seconds)
    out[dated] = np.exp2(-ages / (half_life_days * DAY_SECONDS))
    if (~dated).any() and dated.any():
        out[~dated] = float(np.median(out[dated]))
    return out


def published_of(view: IndexView, hits: Hits) -> I64:
    """``int64 (len(hits),)``: each hit's publication time (``NO_DATE`` when unknown)."""
    out = np.full(len(hits), NO_DATE, np.int64)
    for i, part in enumerate(view.parts):
        mine = np.flatnonzero(hits.part == i)
        out[mine] = part.segment.published[hits.row[mine]]
    return out


@dataclass(frozen=True, eq=False)
class Decayed:
    """Hits re-scored by their factors and re-sorted (score desc, then id asc), and each
    one's factor by article id (what its explanation shows, ``reasons.freshness``)."""

    hits: Hits
    factor_of: dict[int, float]


def decay(
    view: IndexView,
    hits: Hits,
    reference: int,
    half_life_days: float,
    *,
    before_only: bool = False,
) -> Decayed:
    """``hits`` with scores (and dense shares) times their factors, best first.

    Args:
        reference / before_only: as for :func:`factors` (a reference of ``NO_DATE``: the
            hits as they are, no factors).
    """
    if reference == NO_DATE:
        return Decayed(hits, {})
    f = factors(published_of(view, hits), reference, half_life_days, before_only=before_only)
    scores = hits.scores * f
    order = np.lexsort((hits.ids, -scores))
    dense = None if hits.dense is None else (hits.dense * f)[order]
    out = Hits(
        hits.part[order],
        hits.row[order],
        hits.ids[order],
        scores[order],
        hits.fingerprints[order],
        dense,
    )
    return Decayed(out, dict(zip(hits.ids.tolist(), f.tolist(), strict=True)))
