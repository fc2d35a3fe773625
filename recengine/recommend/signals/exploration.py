"""Exploration: a bounded share of a list's slots goes to candidates whose click rate is still
uncertain, so new and never-shown articles get impressions (and clicks, if they deserve them).

Thompson sampling (Thompson 1933; Chapelle & Li 2011): each candidate of the *pool* (the
``signals.explore_pool`` candidates ranked just below the list's exploited slots, none under the
relevance floor) draws a click rate from its posterior (``recommend.signals.engagement``:
``Beta(alpha, beta)``); the best draws take the last ``n`` slots of the first page, ``n`` being
``related.explore_share x k`` rounded up or down at random so that the share holds on average.
An article never shown draws from the prior, which is wide, so it wins often at first; one
shown many times and seldom clicked draws near its low rate and wins rarely; one that is
clicked rises in the exploited ranking by its boost. The exploited slots above are never
touched, so a list loses at most that share of its best items.

Deterministic under a seed: the draws use a generator seeded with ``sha256(split key, period,
article)`` (``signals.explore_period_s``: an hour by default), so the same reader (or, with no
split key, every reader of the page) gets the same list for the period in every process: the
answer cache and a CDN keep working, and a test can replay it.

Paging: the explored slots are the last of the first page of ``k`` items, whatever page is
asked for, so the pages of a list paged ``k`` at a time are slices of one list (the exploited
item an explored one displaced opens the second page; nothing is shown twice or skipped).
"""

from __future__ import annotations

import hashlib
import math
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

I64 = npt.NDArray[np.int64]
F64 = npt.NDArray[np.float64]


def seed_of(key: str | None, period: int, article: int) -> int:
    """The seed of one list's draws: the split key (None: the page's own, shared by every
    reader), the period number and the article; the same in every process (no ``hash()``)."""
    text = f"{key or ''}\x00{period}\x00{article}"
    return int.from_bytes(hashlib.sha256(text.encode()).digest()[:8], "big")


@dataclass(frozen=True)
class Explored:
    """The list's new order (positions into the hits given) and the items placed by
    exploration that the exploited order would not have shown on the page."""

    order: npt.NDArray[np.intp]
    explored: frozenset[int]


def explore(
    ids: I64,
    alpha: F64,
    beta: F64,
    eligible: npt.NDArray[np.bool_],
    k: int,
    share: float,
    pool: int,
    rng: np.random.Generator,
) -> Explored:
    """Thompson sampling over the candidates below the exploited slots (see the module
    docstring).

    Args:
        ids: the list's candidates, best first; ``alpha`` / ``beta``: their posteriors.
        eligible: which candidates may be explored (at or above the relevance floor).
        k: the page's length; ``share``: the share of it that explores; ``pool``: how many
            candidates below the exploited slots draw.
    """
    whole = np.arange(len(ids), dtype=np.intp)
    slots = math.floor(share * k) + int(rng.random() < share * k - math.floor(share * k))
    start = k - slots
    if slots <= 0 or start < 0 or len(ids) <= start:
        return Explored(whole, frozenset())
    candidates = whole[start : start + pool]
    candidates = candidates[eligible[candidates]]
    draws = rng.beta(alpha[candidates], beta[candidates])
    chosen = candidates[np.lexsort((candidates, -draws))[:slots]]
    rest = np.setdiff1d(whole[start:], chosen, assume_unique=True)
    order = np.concatenate((whole[:start], chosen, rest))
    shown = set(whole[:k].tolist())
    return Explored(order, frozenset(int(ids[i]) for i in chosen if int(i) not in shown))
