"""The engagement model: position-debiased, Beta-smoothed click rates and the bounded boost
(arithmetic on tiny counts, a property over any counts)."""

from __future__ import annotations

from datetime import date

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from recengine.config import SignalsSettings
from recengine.pipeline.feedback import examination
from recengine.recommend.signals.engagement import Totals, boost, posterior
from recengine.recommend.signals.window import Halves
from recengine.storage.rows.engagement import PairTotals

DAY = date(2026, 12, 1)
SETTINGS = SignalsSettings(prior_ctr=0.02, prior_strength=50.0, min_pair_examined=20.0)


def totals(rows: list[tuple[int, int, float, float]]) -> Totals:
    """``(source, item, clicks, examined)`` rows."""
    rows = sorted(rows)
    return Totals.of(
        PairTotals(
            np.array([r[0] for r in rows], np.int64),
            np.array([r[1] for r in rows], np.int64),
            np.array([r[2] for r in rows], np.float64),
            np.array([r[3] for r in rows], np.float64),
        )
    )


Rows = list[tuple[int, int, float, float]]


def halves(past: Rows, today: Rows | None = None) -> Halves[Totals]:
    return Halves(totals(past), totals(today or []), DAY)


def test_without_data_every_item_is_at_the_prior_and_gets_no_boost() -> None:
    found = posterior(halves([]), 1, np.array([2, 3], np.int64), SETTINGS)
    assert found.mu == 0.02
    np.testing.assert_allclose(found.mean, [0.02, 0.02])
    np.testing.assert_allclose(found.alpha, [1.0, 1.0])  # m * p0 = 50 * 0.02
    np.testing.assert_allclose(found.beta, [49.0, 49.0])
    np.testing.assert_allclose(boost(found.mean, found.mu, 0.5), [1.0, 1.0])


def test_clicks_are_debiased_by_the_slot_they_were_shown_in() -> None:
    """Two items clicked at the same rate when seen, one always shown first and one ninth:
    raw CTRs differ 9x, their debiased rates are equal (the position-based model)."""
    decay = 1.0
    top = 1000 * examination(0, decay)  # 1000 impressions at slot 0
    low = 1000 * examination(8, decay)  # 1000 impressions at slot 8
    rate = 0.1
    found = posterior(
        halves([(1, 2, rate * top, top), (1, 3, rate * low, low)]),
        1,
        np.array([2, 3], np.int64),
        SETTINGS,
    )
    raw = (rate * top / 1000) / (rate * low / 1000)
    assert raw == 9.0
    assert abs(found.mean[0] - found.mean[1]) < 0.005


def test_a_pair_has_its_own_rate_only_with_enough_examinations() -> None:
    """Item 5 is clicked often in list 1 (30 of 100 seen) and never in list 2 (0 of 100);
    item 6 has 10 and 5 examinations, too few: it gets its global rate in both."""
    data = halves([(1, 5, 30.0, 100.0), (2, 5, 0.0, 100.0), (1, 6, 5.0, 10.0), (2, 6, 0.0, 5.0)])
    in_1 = posterior(data, 1, np.array([5, 6], np.int64), SETTINGS)
    in_2 = posterior(data, 2, np.array([5, 6], np.int64), SETTINGS)
    mu = (35 + 50 * 0.02) / (215 + 50)
    assert in_1.mu == pytest.approx(mu) and in_2.mu == pytest.approx(mu)
    r5 = (30 + 50 * mu) / (200 + 50)  # item 5 over both lists
    # its own rate, shrunk towards its global one
    assert in_1.mean[0] == pytest.approx((30 + 50 * r5) / (100 + 50))
    assert in_2.mean[0] == pytest.approx((0 + 50 * r5) / (100 + 50))
    r6 = (5 + 50 * mu) / (15 + 50)  # under 20 examinations in each list: its global rate
    assert in_1.mean[1] == pytest.approx(r6) and in_2.mean[1] == pytest.approx(r6)
    assert in_1.mean[0] > in_2.mean[0]


def test_the_past_and_today_add_up() -> None:
    both = posterior(halves([(1, 2, 3.0, 40.0)], [(1, 2, 2.0, 10.0)]), 1, np.array([2]), SETTINGS)
    one = posterior(halves([(1, 2, 5.0, 50.0)]), 1, np.array([2]), SETTINGS)
    np.testing.assert_allclose(both.mean, one.mean)
    assert both.mu == one.mu


def test_clicks_beyond_the_examinations_count_the_slot_as_looked_at() -> None:
    """A low slot's clicks can exceed the model's examinations: the rate stays below 1."""
    found = posterior(halves([(1, 2, 30.0, 10.0)]), 1, np.array([2]), SETTINGS)
    assert 0 < found.mean[0] < 1 and found.beta[0] > 0


counts = st.floats(min_value=0, max_value=1e6, allow_nan=False)


@settings(max_examples=300, deadline=None)
@given(
    clicks=st.lists(counts, min_size=1, max_size=6),
    seen=st.lists(counts, min_size=1, max_size=6),
    weight=st.floats(min_value=0, max_value=1),
    prior=st.floats(min_value=1e-4, max_value=0.9),
    strength=st.floats(min_value=0.1, max_value=1e4),
)
def test_engagement_boosts_are_bounded_whatever_the_counts(
    clicks: list[float], seen: list[float], weight: float, prior: float, strength: float
) -> None:
    """``1 - w <= factor <= 1 + w`` for any counts, so a boosted score stays within the
    share ``w`` of its content score, and never turns negative or NaN."""
    n = min(len(clicks), len(seen))
    rows = [(1, 10 + i, clicks[i], seen[i]) for i in range(n)]
    tuned = SETTINGS.model_copy(update={"prior_ctr": prior, "prior_strength": strength})
    found = posterior(halves(rows), 1, np.arange(10, 10 + n + 2, dtype=np.int64), tuned)
    factor = boost(found.mean, found.mu, weight)
    assert np.all(np.isfinite(factor))
    assert np.all(factor >= 1 - weight - 1e-12) and np.all(factor <= 1 + weight + 1e-12)
    assert np.all((found.mean > 0) & (found.mean <= 1))
