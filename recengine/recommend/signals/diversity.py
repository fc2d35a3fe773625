"""Diversity: maximal marginal relevance over the top of a list (``related.diversity``).

Carbonell & Goldstein (SIGIR 1998): the next item is the one of the rest that maximises ::

    (1 - d) * score(item) - d * max(cosine(item, chosen) for chosen above it)

``d = related.diversity`` in [0, 1] (0: the list as ranked; 1: only unlikeness counts); the
cosine is that of the two articles' stored TF-IDF vectors (unit length, the same space as
the score's main part, so the two terms are on one scale). Only the first
``related.diversity_candidates`` items are reordered (a few dozen: the work is
``O(m^2)`` products of stored vectors), the rest follow in their order; the choice is
deterministic (equal values go to the item ranked higher). Pins stay first, in the editor's
order, and count as chosen.

Related lists reorder the items kept after suppression and the floor (the duplicates are
gone before, so diversity is never spent on a copy); a page after ``offset`` is cut from the
same reordered list, so pages stay consistent. Feeds reorder each interest's candidates before
the slots are dealt (the slots already spread the interests; ``feed.max_pair_similarity``
still skips the near-alike).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

from recengine.index.related.view import Hits, IndexView
from recengine.recommend.lists.criterion import anonymous
from recengine.recommend.lists.curation import take
from recengine.recommend.lists.suppress import Picked, pairwise_cosines

F64 = npt.NDArray[np.float64]


def mmr_order(
    scores: Sequence[float] | F64,
    similarities: npt.NDArray[np.floating],
    diversity: float,
    fixed: int = 0,
) -> list[int]:
    """Positions ``0 .. m-1`` in MMR order (see the module docstring).

    Args:
        scores: ``(m,)``, the items' scores, in their ranked order.
        similarities: ``(m, m)``, the items' pairwise cosines.
        diversity: ``d`` in [0, 1].
        fixed: how many leading items keep their places (pins); they count as chosen.

    >>> mmr_order([0.5, 0.45, 0.3], np.array([[1, .9, 0], [.9, 1, 0], [0, 0, 1]]), 0.5)
    [0, 2, 1]
    """
    if not 0.0 <= diversity <= 1.0:
        raise ValueError(f"diversity must be within 0..1, got {diversity}")
    values = np.asarray(scores, np.float64)
    sims = np.asarray(similarities, np.float64)
    m = len(values)
    chosen = list(range(min(fixed, m)))
    rest = np.arange(len(chosen), m)
    closest = sims[:, chosen].max(axis=1) if chosen else np.zeros(m)
    while len(rest):
        gains = (1.0 - diversity) * values[rest] - diversity * closest[rest]
        best = int(np.argmax(gains))  # the first of equal gains: the higher-ranked item
        j = int(rest[best])
        chosen.append(j)
        rest = np.delete(rest, best)
        closest = np.maximum(closest, sims[:, j])
    return chosen


def similarities(view: IndexView, hits: Hits, positions: Sequence[int]) -> npt.NDArray[np.float32]:
    """``float32 (m, m)``: pairwise cosines of the stored vectors of ``hits[positions]``."""
    vectors = [anonymous(*view.vector(int(hits.part[i]), int(hits.row[i]))) for i in positions]
    return pairwise_cosines(vectors)


def diversify_kept(
    view: IndexView, hits: Hits, picked: Picked, diversity: float, pool: int, fixed: int = 0
) -> Picked:
    """``picked`` with its first ``pool`` kept items in MMR order (a related list: the first
    ``fixed`` are the pins). An item's score is that of its place (a canonical standing in for
    its copy ranks by the copy's, ``Picked.place_of``)."""
    if diversity <= 0 or len(picked.kept) - fixed < 2:
        return picked
    top = picked.kept[: max(pool, fixed)]
    scores = [float(hits.scores[picked.place_of(i)]) for i in top]
    order = mmr_order(scores, similarities(view, hits, top), diversity, fixed)
    kept = [top[j] for j in order] + picked.kept[len(top) :]
    return Picked(kept, picked.suppressed, picked.stands_for)


def diversify_hits(view: IndexView, hits: Hits, diversity: float, pool: int) -> Hits:
    """``hits`` (best first) with the first ``pool`` in MMR order (a feed's interest)."""
    if diversity <= 0 or len(hits) < 2:
        return hits
    top = list(range(min(pool, len(hits))))
    order = mmr_order(hits.scores[top], similarities(view, hits, top), diversity)
    return take(hits, order + list(range(len(top), len(hits))))
