"""Ranking variants (A/B tests of related lists): which readers see which ranking.

A variant (``[experiment.variants.<name>]`` in settings) names the parameters of the ranking
it tests, any of:

* ``k``: how many items a list shows (it replaces the request's ``k``);
* ``min_score``: the relevance floor (it replaces ``related.min_score`` and the request's);
* ``candidates``: the candidate pool scored exactly (``related.candidates``);
* ``weights``: how the parts of the ranking are blended (:data:`PARTS`), the score being
  ``sum(weight[p] * part[p])``: ``cosine`` (of the TF-IDF vectors, weight 1 by default),
  ``category`` (1 when the item shares the query's category) and ``tags`` (the share of the
  query's tags the item carries). The floor applies to the blended score. A part added to the
  ranking later (e.g. a dense LSA similarity) is added here and becomes a parameter too;
* the signals of ``recommend.signals``: ``half_life_days`` (freshness), ``diversity`` (MMR)
  and ``min_items`` (the fallback), each replacing the ``related`` setting of that name (0
  turns it off for the variant). ``recengine report`` names each variant's parameters beside
  its CTR (:meth:`Ranking.describe`), so a variant testing freshness reads as such.
* readers' signals (``recommend.signals``): ``engagement_weight`` (the bounded boost of an
  item by its readers' clicks), ``coread_weight`` (the co-read part) and ``explore_share`` (the
  share of slots that explore), each replacing the ``related.*`` setting of that name; a
  variant that sets one is how its effect on clicks is measured (``recengine report``
  compares each variant's CTR with the first's).

Assignment: a list asked for with a split key (a reader id, else a session id) gets the
variant at ``u = sha256(experiment name + key)`` read as a fraction in [0, 1), each variant
taking a range proportional to its ``share`` in the order the settings list them. The same key
gets the same variant in every process and on every day (no stored state); renaming the
experiment reshuffles everyone. A list asked for without a key gets the first variant (the
control). With no experiment configured every list is variant ``"default"`` (the settings as
they are).
"""

from __future__ import annotations

import hashlib
from bisect import bisect_right
from dataclasses import dataclass
from itertools import accumulate

import numpy as np

from recengine.config import ExperimentSettings, RelatedSettings, Settings
from recengine.index.related.segment import NO_LABEL, gather_ranges
from recengine.index.related.view import Hits, IndexView
from recengine.recommend.lists.curation import take
from recengine.recommend.signals.scoring import Weights

PARTS = ("cosine", "category", "tags")
DEFAULT_WEIGHTS = (("cosine", 1.0),)
DEFAULT = "default"


@dataclass(frozen=True)
class Ranking:
    """One variant's ranking parameters (None: the request's or the settings' value)."""

    name: str
    k: int | None = None
    min_score: float | None = None
    candidates: int | None = None
    weights: tuple[tuple[str, float], ...] = DEFAULT_WEIGHTS
    half_life_days: float | None = None
    diversity: float | None = None
    min_items: int | None = None
    engagement_weight: float | None = None
    coread_weight: float | None = None
    explore_share: float | None = None

    @property
    def blended(self) -> bool:
        return self.weights != DEFAULT_WEIGHTS

    def describe(self) -> str:
        """What the variant changes, ``"min_score=0.08, half_life_days=7"`` (``"as configured"``
        when nothing)."""
        named = [
            (n, getattr(self, n))
            for n in (
                "k",
                "min_score",
                "candidates",
                "half_life_days",
                "diversity",
                "min_items",
                "engagement_weight",
                "coread_weight",
                "explore_share",
            )
        ]
        out = [f"{n}={v:g}" for n, v in named if v is not None]
        if self.blended:
            out.append("weights: " + ", ".join(f"{p}={w:g}" for p, w in self.weights))
        return ", ".join(out) or "as configured"

    def signals(self, related: RelatedSettings) -> Weights:
        """The weights of readers' signals in this variant's lists (the settings' where the
        variant sets none)."""

        def pick(mine: float | None, default: float) -> float:
            return default if mine is None else mine

        return Weights(
            pick(self.engagement_weight, related.engagement_weight),
            pick(self.coread_weight, related.coread_weight),
            pick(self.explore_share, related.explore_share),
        )


class Variants:
    """The variants of the settings' experiment, and the assignment of split keys to them."""

    def __init__(self, experiment: ExperimentSettings) -> None:
        self.salt = experiment.name
        named = experiment.variants
        if not experiment.name or not named:
            self.rankings: tuple[Ranking, ...] = (Ranking(DEFAULT),)
            self.bounds: tuple[float, ...] = (1.0,)
            return
        self.rankings = tuple(
            Ranking(
                name,
                v.k,
                v.min_score,
                v.candidates,
                tuple(sorted({"cosine": 1.0, **v.weights}.items())),
                v.half_life_days,
                v.diversity,
                v.min_items,
                v.engagement_weight,
                v.coread_weight,
                v.explore_share,
            )
            for name, v in named.items()
        )
        total = sum(v.share for v in named.values())
        self.bounds = tuple(b / total for b in accumulate(v.share for v in named.values()))

    @classmethod
    def from_settings(cls, settings: Settings) -> Variants:
        return cls(settings.experiment)

    @property
    def splits(self) -> bool:
        """Whether lists differ by split key (an experiment with two variants or more): only
        then do clients need to send one."""
        return len(self.rankings) > 1

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(r.name for r in self.rankings)

    def described(self) -> dict[str, str]:
        """What each variant changes, in words (``Ranking.describe``), by name: what
        ``recengine report`` shows beside its CTR."""
        return {r.name: r.describe() for r in self.rankings}

    def by_name(self, name: str) -> Ranking | None:
        return next((r for r in self.rankings if r.name == name), None)

    def assign(self, key: str | None) -> Ranking:
        """The variant of a split key (see the module docstring)."""
        if key is None or len(self.rankings) == 1:
            return self.rankings[0]
        digest = hashlib.sha256(f"{self.salt}\x00{key}".encode()).digest()
        u = int.from_bytes(digest[:8], "big") / 2.0**64
        return self.rankings[min(bisect_right(self.bounds, u), len(self.rankings) - 1)]


def split_key(reader: str | None, session: str | None) -> str | None:
    """The key traffic is split by: the reader id when given, else the session id."""
    if reader:
        return f"reader:{reader}"
    if session:
        return f"session:{session}"
    return None


def blend(
    view: IndexView,
    hits: Hits,
    weights: tuple[tuple[str, float], ...],
    category: int,
    tags: np.ndarray,  # uint64 (t,) label hashes of the query's tags
) -> Hits:
    """``hits`` scored by the weighted parts and re-sorted (score desc, then id asc).

    Args:
        category: the query's category label hash (``NO_LABEL``: none; the part is then 0).
    """
    w = dict(weights)
    scores = w.get("cosine", 0.0) * hits.scores
    located = list(zip(hits.part.tolist(), hits.row.tolist(), strict=True))
    if w.get("category") and category != NO_LABEL:
        same = [view.parts[p].segment.category[r] == category for p, r in located]
        scores = scores + w["category"] * np.array(same, dtype=np.float64)
    if w.get("tags") and len(tags):
        share = np.zeros(len(hits), np.float64)
        for j, (p, r) in enumerate(located):
            seg = view.parts[p].segment
            idx, _ = gather_ranges(seg.tag_indptr, np.array([r]))
            share[j] = np.isin(tags, seg.tag_hashes[idx]).sum() / len(tags)
        scores = scores + w["tags"] * share
    order = np.lexsort((hits.ids, -scores))
    out = take(hits, order)
    dense = None if out.dense is None else w.get("cosine", 0.0) * out.dense
    return Hits(out.part, out.row, out.ids, scores[order], out.fingerprints, dense)
