"""The signals' parameters of one list: the settings', or its A/B variant's where it sets them."""

from __future__ import annotations

from dataclasses import dataclass

from recengine.config import RelatedSettings


@dataclass(frozen=True)
class SignalParams:
    """``related`` settings of the signals (see ``config/defaults.toml``); 0 turns one off."""

    half_life_days: float = 0.0
    diversity: float = 0.0
    diversity_candidates: int = 30
    min_items: int = 0
    fallback: str = "newest"
    fallback_pool: int = 200
    fallback_days: int = 28

    @classmethod
    def of(
        cls,
        r: RelatedSettings,
        half_life_days: float | None = None,
        diversity: float | None = None,
        min_items: int | None = None,
    ) -> SignalParams:
        """The settings' values, each replaced by a variant's when it is not None."""
        return cls(
            r.half_life_days if half_life_days is None else half_life_days,
            r.diversity if diversity is None else diversity,
            r.diversity_candidates,
            r.min_items if min_items is None else min_items,
            r.fallback,
            r.fallback_pool,
            r.fallback_days,
        )

    def wanted(self, offset: int, k: int) -> int:
        """Items a list must pick before its page is cut: the page's end, and at least the
        whole reordered top (diversity) and the whole list a fallback completes."""
        wanted = offset + k
        if self.diversity > 0:
            wanted = max(wanted, self.diversity_candidates)
        return max(wanted, self.min_items)
