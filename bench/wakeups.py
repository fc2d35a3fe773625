"""What a request's hand-offs between the worker's event loop and its threads cost in CPU.

recengine's worker (``recengine.web.server.worker``) reads a request on its event loop, runs the app
on a pool thread and writes the answer from the loop: three wake-ups of a sleeping thread per
request (the loop on the socket, the pool thread on its queue, the loop on the thread's
result), where a cache hit answered on the loop has one. On a quiet machine each costs a few
microseconds; on a virtual machine whose idle CPUs halt, each wake-up of a thread that slept
can cost far more, and at 100-200 requests a second per worker every request finds its
threads asleep. This measures it on the machine at hand, each figure beside the same work done
back to back (no sleep, so no wake-up: the reference):

* ``asyncio.sleep`` alone (the loop wakes on a timer);
* one job through the worker's own pool (``recengine.web.server.threads.Pool``,
``asyncio.wrap_future``
  and ``asyncio.wait`` as the worker uses them);
* a plain two-thread ping-pong over ``queue.SimpleQueue``.

Usage: ``python -m bench.wakeups [--rate 100] [--count 2000]``
"""

from __future__ import annotations

import argparse
import asyncio
import os
import queue
import threading
import time
from collections.abc import Callable

from recengine.web.server.threads import Pool as _Pool


def _job() -> int:
    return 1


async def _through_pool(pool: _Pool, count: int, pause: float) -> float:
    """CPU seconds per job sent to ``pool`` and awaited, ``pause`` seconds apart."""
    start = time.process_time()
    for _ in range(count):
        future = asyncio.wrap_future(pool.submit(_job))
        await asyncio.wait([future], timeout=30)
        if pause:
            await asyncio.sleep(pause)
    return (time.process_time() - start) / count


async def _sleeps(count: int, pause: float) -> float:
    start = time.process_time()
    for _ in range(count):
        await asyncio.sleep(pause)  # 0: one turn of the loop, no wake-up
    return (time.process_time() - start) / count


def _ping_pong(count: int, pause: float) -> float:
    there: queue.SimpleQueue[int] = queue.SimpleQueue()
    back: queue.SimpleQueue[int] = queue.SimpleQueue()

    def echo() -> None:
        while True:
            back.put(there.get())

    threading.Thread(target=echo, daemon=True).start()
    start = time.process_time()
    for _ in range(count):
        there.put(1)
        back.get()
        if pause:
            time.sleep(pause)
    return (time.process_time() - start) / count


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rate", type=float, default=100.0, help="paced runs: per second")
    parser.add_argument("--count", type=int, default=2_000)
    args = parser.parse_args()
    pause, n = 1.0 / args.rate, args.count
    pool = _Pool(4)
    cases: list[tuple[str, Callable[[float], float]]] = [
        ("asyncio.sleep (timer wake-up)", lambda p: asyncio.run(_sleeps(n, p))),
        ("a job through the worker's pool", lambda p: asyncio.run(_through_pool(pool, n, p))),
        ("thread ping-pong (SimpleQueue)", lambda p: _ping_pong(n, p)),
    ]
    print(f"load average before: {os.getloadavg()}")
    print(f"{'':34} {'back to back':>14} {f'at {args.rate:g}/s':>14}   CPU us per iteration")
    for name, run in cases:
        hot = run(0.0)
        paced = run(pause)
        print(f"{name:34} {hot * 1e6:14.0f} {paced * 1e6:14.0f}")
    print(f"load average after: {os.getloadavg()}")


if __name__ == "__main__":
    main()
