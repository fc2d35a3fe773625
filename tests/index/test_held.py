"""index.held: values made once per key, at most ``size`` held, all dropped past it."""

from __future__ import annotations

import pytest

from recengine.index.held import Held


def test_a_value_is_made_once_until_the_bound_drops_every_value() -> None:
    made: list[int] = []

    def make(key: int) -> str:
        made.append(key)
        return f"v{key}"

    held: Held[int, str] = Held(3)
    assert [held.get(k, lambda k=k: make(k)) for k in (1, 2, 1, 3, 2)] == [
        "v1",
        "v2",
        "v1",
        "v3",
        "v2",
    ]
    assert made == [1, 2, 3] and len(held) == 3
    assert held.get(4, lambda: make(4)) == "v4"  # one more: the three dropped
    assert len(held) == 1
    assert held.get(1, lambda: make(1)) == "v1" and made == [1, 2, 3, 4, 1]


def test_a_bound_below_one_is_refused() -> None:
    with pytest.raises(ValueError, match="size must be >= 1"):
        Held(0)
