"""``recengine.web.slots``: the queue budget of load shedding, on a real event loop."""

from __future__ import annotations

import asyncio

import pytest

from recengine.web.slots import Slots


def test_requests_within_the_budget_get_a_slot_in_order_and_later_ones_are_shed() -> None:
    async def scenario() -> tuple[list[str], int]:
        slots = Slots(1, budget=0.2)
        order: list[str] = []
        assert await slots.acquire()  # the only slot
        hold = asyncio.Event()

        async def request(name: str, **kwargs: bool) -> None:
            if await slots.acquire(**kwargs):
                order.append(name)
                await hold.wait()
                slots.release()
            else:
                order.append(f"{name}: shed")

        waiting = [asyncio.create_task(request(n)) for n in ("a", "b")]
        health = asyncio.create_task(request("health", priority=True))
        await asyncio.sleep(0.3)  # past the budget: a and b are refused, health still waits
        late = asyncio.create_task(request("c"))
        await asyncio.sleep(0)
        slots.release()
        hold.set()
        await asyncio.gather(*waiting, health, late)
        return order, slots.free

    order, free = asyncio.run(scenario())
    assert order == ["a: shed", "b: shed", "health", "c"]
    assert free == 1


def test_a_slot_given_to_a_waiter_that_went_away_passes_on() -> None:
    async def scenario() -> int:
        slots = Slots(1, budget=10)
        assert await slots.acquire()
        gone = asyncio.create_task(slots.acquire())
        await asyncio.sleep(0)
        slots.release()  # handed to `gone` ...
        gone.cancel()  # ... which is cancelled before it runs
        with pytest.raises(asyncio.CancelledError):
            await gone
        return slots.free

    assert asyncio.run(scenario()) == 1


def test_slots_refuse_nonsense() -> None:
    with pytest.raises(ValueError, match="budget"):
        Slots(0, 1.0)


def test_only_a_few_priority_requests_jump_the_queue() -> None:
    async def scenario() -> list[bool]:
        slots = Slots(1, budget=0.05)
        assert await slots.acquire()
        flood = [asyncio.create_task(slots.acquire(priority=True)) for _ in range(3)]
        await asyncio.sleep(0.2)  # past the budget: the flood beyond `size` was shed
        slots.release()
        return await asyncio.gather(*flood)

    assert asyncio.run(scenario()) == [True, False, False]
