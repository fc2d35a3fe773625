"""``recengine.web.server.http.slots``: the queue budget of load shedding, on a real event loop."""

from __future__ import annotations

import asyncio

import pytest

from recengine.web.server.http.admission import Admission
from recengine.web.server.http.slots import Slots


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


def test_a_standing_queue_refuses_the_old_waiters_and_serves_the_newest_first() -> None:
    """CoDel with adaptive LIFO: once the queue has not been empty for `interval`, a release
    refuses those waiting past `target` and gives the slot to the newest."""
    now = [0.0]

    async def scenario() -> list[tuple[str, bool]]:
        slots = Slots(1, budget=30, target=0.05, interval=0.1, clock=lambda: now[0])
        assert await slots.acquire()
        order: list[tuple[str, bool]] = []

        async def request(name: str) -> None:
            order.append((name, await slots.acquire()))

        old = asyncio.create_task(request("old"))
        await asyncio.sleep(0)
        now[0] = 0.2  # the queue has stood for 0.2 s
        assert slots.standing(now[0])
        middle = asyncio.create_task(request("middle"))
        newest = asyncio.create_task(request("newest"))
        await asyncio.sleep(0)
        slots.release()  # old is past the target: refused; the newest served
        await asyncio.sleep(0)
        slots.release()  # then the middle one (it waited 0 s)
        await asyncio.gather(old, middle, newest)
        slots.release()  # the middle one's
        assert slots.free == 1 and slots.shed == 1
        return order

    assert asyncio.run(scenario()) == [("old", False), ("newest", True), ("middle", True)]


def test_while_the_queue_stands_a_new_request_waits_the_target_not_the_budget() -> None:
    async def scenario() -> tuple[bool, bool, bool]:
        slots = Slots(1, budget=30, target=0.05, interval=0.1)
        assert await slots.acquire()
        first = asyncio.create_task(slots.acquire())
        await asyncio.sleep(0.15)  # standing: never empty for 0.1 s
        late = asyncio.create_task(slots.acquire())
        await asyncio.sleep(0.1)  # past the target: the late one was refused
        refused = late.done() and not late.result()
        slots.release()  # the first waited past the target: refused at once, not at 30 s
        served = await first
        return refused, served, slots.free == 1

    assert asyncio.run(scenario()) == (True, False, True)


def test_a_queue_that_empties_keeps_the_full_budget_and_arrival_order() -> None:
    now = [0.0]

    async def scenario() -> list[str]:
        slots = Slots(1, budget=30, target=0.05, interval=0.1, clock=lambda: now[0])
        order: list[str] = []
        for burst in range(3):  # bursts 1 s apart: the queue empties between them
            now[0] = float(burst)
            assert await slots.acquire()
            tasks = []
            for _ in range(3):
                tasks.append(asyncio.create_task(slots.acquire()))
                await asyncio.sleep(0)
            now[0] += 0.09  # under the interval
            for n, task in enumerate(tasks):
                slots.release()
                assert await task
                order.append(f"{burst}.{n}")
            slots.release()
        assert slots.shed == 0 and slots.free == 1
        return order

    assert asyncio.run(scenario()) == [f"{b}.{n}" for b in range(3) for n in range(3)]


def test_codel_needs_both_target_and_interval() -> None:
    with pytest.raises(ValueError, match="target and interval"):
        Slots(1, 1.0, target=0.01)
    with pytest.raises(ValueError, match="target and interval"):
        Slots(1, 1.0, target=0.0, interval=0.1)


def test_a_request_that_waited_before_it_was_read_has_only_the_rest_of_its_budget() -> None:
    async def scenario() -> tuple[bool, bool, int]:
        slots = Slots(1, budget=10)
        assert await slots.acquire()
        past = await slots.acquire(waited=11)  # refused at once, not after 10 s more
        within = asyncio.create_task(slots.acquire(waited=9.9))
        await asyncio.sleep(0.3)  # its last 0.1 s ran out
        return past, within.done() and not within.result(), slots.shed

    assert asyncio.run(scenario()) == (False, True, 2)


def test_the_loop_admits_within_the_budget_and_within_the_target_once_waits_stand() -> None:
    """``web.server.http.admission``: the threads' rule for the wait before the loop read a
    request."""
    now = [0.0]
    rule = Admission(budget=0.25, target=0.01, interval=0.1, clock=lambda: now[0])
    assert rule.admit(0.2) and not rule.admit(0.3)  # the budget, while waits are short
    now[0] = 0.05
    assert rule.admit(0.1)  # over the target for 0.05 s only: not standing yet
    now[0] = 0.2
    assert not rule.admit(0.1)  # every request over the target for 0.2 s: the queue stands
    assert rule.admit(0.005)  # a short wait: the queue emptied
    now[0] = 5.0
    assert rule.admit(0.1)  # the first long wait after that: the budget again
    assert rule.shed == 2
    assert Admission(budget=0.25).admit(0.2) and not Admission(budget=0.25).admit(0.3)
