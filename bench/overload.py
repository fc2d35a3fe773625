"""Health checks beside an overload, and through a connection flood (``bench.api_load``).

Issue 46's probe: at 800 requests/s with 90 % cache hits, a new connection per request, the
server shed 4.4 % and answered health checks with p99 5.05 s; a flood of ~4,300 idle or slow
connections opened at once timed out 2 of 41 health checks (5 s) in its first 20 s. Both are
measured here as a load balancer sees them: health checks at a few per second, each with a 5 s
timeout, sent from a process of their own (in a thread of the generator's process they would
wait for its interpreter lock, and that wait would be counted as the server's).

* :func:`health_beside`: the load of ``bench.api_load`` in this process, health checks beside
  it from another;
* :func:`flooded`: ``count`` connections opened at once from another process (half send
  nothing, half half a request head and stall; each one the server closes is opened again),
  held for the run, while this process sends the health checks.
"""

from __future__ import annotations

import asyncio
import multiprocessing
import time
from collections.abc import Callable
from typing import Any
from urllib.parse import urlsplit

from bench import loadgen

HEALTH = ["/api/v1/health"]
PROBE_TIMEOUT_S = 5.0  # a load balancer's
HALF_HEAD = b"GET /api/v1/health HTTP/1.1\r\nHost: x\r\nX-Slow: "


def health_beside(
    base: str, rate: float, seconds: float, main: Callable[[], dict[str, Any]]
) -> tuple[dict[str, Any], dict[str, Any]]:
    """``main()`` (a load, in this process) with health checks at ``rate`` beside it for
    ``seconds``: both summaries."""
    context = multiprocessing.get_context("spawn")
    ready, go, results = context.Event(), context.Event(), context.Queue()
    side = context.Process(
        target=_health_stream, args=(base, rate, seconds, ready, go, results), daemon=True
    )
    side.start()
    if not ready.wait(60):
        side.kill()
        raise RuntimeError("the health checks' process did not start")
    go.set()
    found = main()
    health: dict[str, Any] = results.get(timeout=seconds + 120)
    side.join()
    return found, health


def _health_stream(
    base: str, rate: float, seconds: float, ready: Any, go: Any, results: Any
) -> None:
    ready.set()
    go.wait()
    result = loadgen.run(base, HEALTH, rate=rate, seconds=seconds, timeout=PROBE_TIMEOUT_S)
    results.put(result.summary())


def flooded(base: str, count: int, seconds: float, rate: float) -> dict[str, Any]:
    """``count`` idle and slow connections opened at once and held for ``seconds``, health
    checks at ``rate`` from the same moment: what each got."""
    context = multiprocessing.get_context("spawn")
    ready, go, results = context.Event(), context.Event(), context.Queue()
    flood = context.Process(
        target=_flood, args=(base, count, seconds, ready, go, results), daemon=True
    )
    flood.start()
    if not ready.wait(60):
        flood.kill()
        raise RuntimeError("the flood's process did not start")
    go.set()
    health = loadgen.run(base, HEALTH, rate=rate, seconds=seconds, timeout=PROBE_TIMEOUT_S)
    found: dict[str, Any] = results.get(timeout=seconds + 120)
    flood.join()
    return {"health": health.summary(), "flood": found}


def _flood(base: str, count: int, seconds: float, ready: Any, go: Any, results: Any) -> None:
    ready.set()
    go.wait()
    results.put(asyncio.run(_hold_all(base, count, seconds)))


async def _hold_all(base: str, count: int, seconds: float) -> dict[str, Any]:
    parts = urlsplit(base)
    address = (parts.hostname or "127.0.0.1", parts.port or 80)
    stats: dict[str, Any] = {"opened": 0, "open_at_most": 0, "answers": {}, "connect_errors": {}}
    held = {"now": 0}
    stop = time.monotonic() + seconds
    holders = [_hold(address, HALF_HEAD if n % 2 else b"", stop, stats, held) for n in range(count)]
    await asyncio.gather(*holders)
    return stats


async def _hold(
    address: tuple[str, int],
    prefix: bytes,
    stop: float,
    stats: dict[str, Any],
    held: dict[str, int],
) -> None:
    """One flood connection, opened again whenever the server closes it, until ``stop``."""
    while (left := stop - time.monotonic()) > 0:
        try:
            reader, writer = await asyncio.wait_for(asyncio.open_connection(*address), left)
        except (OSError, TimeoutError) as exc:
            name = type(exc).__name__
            stats["connect_errors"][name] = stats["connect_errors"].get(name, 0) + 1
            await asyncio.sleep(0.1)
            continue
        stats["opened"] += 1
        held["now"] += 1
        stats["open_at_most"] = max(stats["open_at_most"], held["now"])
        try:
            writer.write(prefix)
            data = await asyncio.wait_for(reader.read(64), max(0.0, stop - time.monotonic()))
            answer = data.split(b" ", 2)[1].decode() if data else "closed"
        except TimeoutError:
            answer = None  # still held at the end
        except OSError:
            answer = "reset"
        finally:
            held["now"] -= 1
            writer.close()
        if answer is not None:
            stats["answers"][answer] = stats["answers"].get(answer, 0) + 1
