"""Co-reads: counting reader-days, the bot cap, normalisation with shrinkage, pruning to the
top N (arithmetic on tiny histories)."""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta

import numpy as np
import pytest

from recengine.config import SignalsSettings
from recengine.recommend.signals.coreads import CoCounts, neighbours, reader_days
from recengine.recommend.signals.window import Halves

DAY = date(2026, 12, 1)
T0 = datetime(2026, 12, 1, 23, 0, tzinfo=UTC)


def test_a_readers_day_is_the_window_and_a_reread_counts_once() -> None:
    rows = [
        ("ann", T0, 1),
        ("ann", T0 + timedelta(minutes=5), 2),
        ("ann", T0 + timedelta(minutes=9), 1),  # read again: once
        ("ann", T0 + timedelta(hours=2), 3),  # the next UTC day: another window
        ("bob", T0 + timedelta(hours=2), 3),
        ("bob", T0 + timedelta(hours=3), 4),
    ]
    assert list(reader_days(rows)) == [{1, 2}, {3}, {3, 4}]


def test_pairs_and_readers_are_counted_in_both_directions() -> None:
    found = CoCounts.of([{1, 2, 3}, {1, 2}, {2, 4}], max_reads=10)
    assert found.partners(1)[0].tolist() == [2, 3]
    assert found.partners(1)[1].tolist() == [2.0, 1.0]
    assert found.partners(2)[0].tolist() == [1, 3, 4]
    assert found.partners(9)[0].tolist() == []
    np.testing.assert_array_equal(found.readers_of(np.array([1, 2, 4, 9])), [2, 3, 1, 0])


def test_a_reader_day_past_the_cap_counts_for_nothing() -> None:
    crawler = set(range(100, 160))
    found = CoCounts.of([crawler, {1, 2}], max_reads=50)
    assert found.partners(100)[0].tolist() == []
    np.testing.assert_array_equal(found.readers_of(np.array([100, 1])), [0, 1])


def test_a_summary_keeps_the_most_coread_partners_of_each_article() -> None:
    days = [{1, 2}] * 3 + [{1, 3}] * 2 + [{1, 4}] + [{1, 5}]
    found = CoCounts.of(days, max_reads=10, keep=2)
    assert found.partners(1)[0].tolist() == [2, 3]
    assert found.partners(5)[0].tolist() == [1]  # 5's own best partner is kept for 5
    np.testing.assert_array_equal(found.readers_of(np.array([1])), [7])  # readers: exact


def test_scores_are_cosines_shrunk_towards_zero_and_need_enough_readers() -> None:
    """``n_ab / (sqrt(n_a n_b) + lambda)``: a pair read by 2 readers of 2 does not outrank
    one read by 20 of 40 and 30; a pair of one reader-day is noise."""
    days = [{1, 2}] * 2 + [{1, 3}] * 20 + [{1}] * 18 + [{3}] * 10 + [{1, 4}]
    halves = Halves(CoCounts.of(days, 10), CoCounts.empty(), DAY)
    tuned = SignalsSettings(coread_shrink=5.0, coread_min_readers=2, coread_neighbours=10)
    ids, scores = neighbours(halves, 1, tuned)
    n1 = 2 + 20 + 18 + 1
    assert ids.tolist() == [3, 2]  # 4: one reader-day only
    assert scores[0] == pytest.approx(20 / (np.sqrt(n1 * 30) + 5))
    assert scores[1] == pytest.approx(2 / (np.sqrt(n1 * 2) + 5))
    raw = Halves(CoCounts.of(days, 10), CoCounts.empty(), DAY)
    plain = neighbours(raw, 2, tuned.model_copy(update={"coread_shrink": 0.0}))
    assert plain[1][0] == pytest.approx(2 / np.sqrt(2 * n1))
    top1 = neighbours(halves, 1, tuned.model_copy(update={"coread_neighbours": 1}))
    assert top1[0].tolist() == [3]


def test_the_past_and_today_add_up() -> None:
    tuned = SignalsSettings(coread_shrink=1.0, coread_min_readers=3)
    split = Halves(CoCounts.of([{1, 2}, {1, 2}], 10), CoCounts.of([{1, 2}, {1}], 10), DAY)
    whole = Halves(CoCounts.of([{1, 2}] * 3 + [{1}], 10), CoCounts.empty(), DAY)
    a, b = neighbours(split, 1, tuned), neighbours(whole, 1, tuned)
    assert a[0].tolist() == b[0].tolist() == [2]
    np.testing.assert_allclose(a[1], b[1])
