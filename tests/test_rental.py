"""The ski rental of compiled kernels (``recengine.rental``): numpy until the work done pays for
loading the kernels, then the kernels for good."""

from __future__ import annotations

import numpy as np
import pytest

from recengine.features.neardup import MERGE, overlap
from recengine.rental import Rental


def test_a_rental_buys_once_the_work_has_cost_the_price() -> None:
    rental = Rental("recengine.features.merge_kernel", price=100, at_once=60)
    assert [rental.kernels(30) is None for _ in range(3)] == [True, True, True]
    assert rental.spent == 90 and not rental.bought
    module = rental.kernels(10)  # 100 spent: bought, for good
    assert module is not None and module.__name__ == "recengine.features.merge_kernel"
    assert rental.kernels(1) is module and rental.spent == 100


def test_a_step_big_enough_to_pay_on_its_own_buys_at_once() -> None:
    rental = Rental("recengine.features.merge_kernel", price=100, at_once=60)
    assert rental.kernels(59) is None
    fresh = Rental("recengine.features.merge_kernel", price=100, at_once=60)
    assert fresh.kernels(60) is not None


def test_forcing_a_path_leaves_the_rental_as_it_was() -> None:
    rental = Rental("recengine.features.merge_kernel", price=100, at_once=60)
    rental.kernels(40)
    with rental.forced(False):
        assert rental.kernels(10**9) is None  # never bought within the block
    with rental.forced(True):
        assert rental.kernels(0) is not None
    assert (rental.spent, rental.bought) == (40, False)


def test_bad_prices_are_refused() -> None:
    with pytest.raises(ValueError, match="price"):
        Rental("math", price=0, at_once=1)


def test_verifying_many_long_pairs_buys_the_compiled_merge() -> None:
    """The overlap of long shingle sets counts its look-ups; past the price it takes the
    compiled merge, with the same counts."""
    rng = np.random.default_rng(5)
    a = np.unique(rng.integers(0, 1 << 62, 6_000, dtype=np.uint64))
    b = np.unique(np.concatenate([a[:3_000], rng.integers(0, 1 << 62, 6_000, dtype=np.uint64)]))
    expected = (len(np.intersect1d(a, b)), len(a), len(b))
    saved = MERGE.spent, MERGE.bought
    MERGE.spent, MERGE.bought = 0, False
    try:
        while not MERGE.bought:
            assert overlap(a, b) == expected
        assert MERGE.spent >= MERGE.price
        assert overlap(a, b) == expected  # now compiled
        assert MERGE.spent < MERGE.price + len(a)  # nothing counted once bought
    finally:
        MERGE.spent, MERGE.bought = saved
