"""An open-loop HTTP load generator: requests at a fixed rate, latency from the scheduled time.

Open loop (requests are sent on schedule whether or not earlier ones have finished) and latency
measured from when a request *should* have started, so a stalled server shows up as latency
instead of silently lowering the rate ("coordinated omission"). One asyncio process, little CPU
per request, so it can share the machine with the server it measures.

Connections: by default every request opens its own (``Connection: close``), as the visitors of
a site do when their pages load the widget; the kernel then hands each one to whichever
gunicorn worker accepts first. With ``keepalive`` a pool of persistent connections is reused:
each stays with the worker that accepted it, so a few connections can pin the load on one
worker (measured: one of four gthread workers at 86% CPU, the others idle).
"""

from __future__ import annotations

import asyncio
import random
import statistics
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from urllib.parse import urlsplit


@dataclass
class Result:
    """Latencies (seconds) of completed requests and what went wrong."""

    scheduled: int = 0
    latencies: list[float] = field(default_factory=list)
    statuses: dict[int, int] = field(default_factory=dict)
    errors: dict[str, int] = field(default_factory=dict)
    duration: float = 0.0

    @property
    def failed(self) -> int:
        bad = sum(n for status, n in self.statuses.items() if status != 200)
        return bad + sum(self.errors.values())

    def quantile(self, q: float) -> float:
        if not self.latencies:
            return float("nan")
        ordered = sorted(self.latencies)
        return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]

    def summary(self) -> dict[str, float]:
        return {
            "requests": self.scheduled,
            "throughput_rps": len(self.latencies) / self.duration if self.duration else 0.0,
            "p50_ms": self.quantile(0.50) * 1e3,
            "p90_ms": self.quantile(0.90) * 1e3,
            "p99_ms": self.quantile(0.99) * 1e3,
            "max_ms": max(self.latencies, default=float("nan")) * 1e3,
            "mean_ms": statistics.fmean(self.latencies) * 1e3 if self.latencies else float("nan"),
            "errors": self.failed,
        }


class _Connection:
    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.reader, self.writer = reader, writer

    async def get(self, request: bytes, reuse: bool = True) -> int:
        """Send one GET; read the status and the whole body (Content-Length)."""
        self.writer.write(request)
        await self.writer.drain()
        status_line = await self.reader.readline()
        status = int(status_line.split(b" ", 2)[1])
        length, close = 0, False
        while (line := await self.reader.readline()) not in (b"\r\n", b""):
            name, _, value = line.partition(b":")
            name = name.strip().lower()
            if name == b"content-length":
                length = int(value)
            elif name == b"connection" and value.strip().lower() == b"close":
                close = True
        await self.reader.readexactly(length)
        if close and reuse:
            raise ConnectionResetError("server closed a keep-alive connection")
        return status


async def _open(host: str, port: int) -> _Connection:
    reader, writer = await asyncio.open_connection(host, port)
    return _Connection(reader, writer)


async def _run(
    base: str,
    paths: Sequence[str],
    rate: float,
    seconds: float,
    connections: int,
    seed: int,
    keepalive: bool,
) -> Result:
    parts = urlsplit(base)
    host, port = parts.hostname or "127.0.0.1", parts.port or 80
    pool: asyncio.Queue[_Connection | None] = asyncio.Queue()
    for _ in range(connections):
        pool.put_nowait(None)  # opened lazily
    result = Result()
    rnd = random.Random(seed)
    loop = asyncio.get_running_loop()
    start = loop.time() + 0.05
    total = int(rate * seconds)

    close = "" if keepalive else "Connection: close\r\n"

    async def one(at: float, path: str) -> None:
        await asyncio.sleep(max(0.0, at - loop.time()))
        connection = await pool.get()
        request = f"GET {path} HTTP/1.1\r\nHost: {host}:{port}\r\n{close}\r\n".encode()
        try:
            if connection is None:
                connection = await _open(host, port)
            status = await connection.get(request, reuse=keepalive)
            if not keepalive:
                connection.writer.close()
                connection = None
            result.latencies.append(loop.time() - at)
            result.statuses[status] = result.statuses.get(status, 0) + 1
        except (OSError, asyncio.IncompleteReadError, ValueError, IndexError) as exc:
            name = type(exc).__name__
            result.errors[name] = result.errors.get(name, 0) + 1
            connection = None
        pool.put_nowait(connection)

    tasks = [
        asyncio.create_task(one(start + i / rate, paths[rnd.randrange(len(paths))]))
        for i in range(total)
    ]
    result.scheduled = total
    t0 = time.perf_counter()
    await asyncio.gather(*tasks)
    result.duration = time.perf_counter() - t0
    while not pool.empty():
        connection = pool.get_nowait()
        if connection is not None:
            connection.writer.close()
    return result


def run(
    base: str,
    paths: Sequence[str],
    *,
    rate: float,
    seconds: float,
    connections: int = 64,
    seed: int = 7,
    keepalive: bool = False,
) -> Result:
    """Send ``rate`` GET requests per second for ``seconds`` to random ``paths`` of ``base``.

    At most ``connections`` requests are in flight; more wait (their latency counts from their
    scheduled time).
    """
    return asyncio.run(_run(base, paths, rate, seconds, connections, seed, keepalive))
