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
import gc
import random
import statistics
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

SHED = 503  # the server's answer past capacity (with Retry-After): counted apart from errors
OK = (200, 304)  # an answer, or "not modified" to a conditional request


@dataclass
class Result:
    """Latencies (seconds) of completed requests and what went wrong.

    ``latencies`` are those of every answered request; ``ok_latencies`` those answered 200 (the
    requests a server under overload accepted); ``workers`` counts answers per worker process
    (the ``X-Recengine-Worker`` header), to see how evenly the kernel and the workers spread
    the connections.
    """

    scheduled: int = 0
    latencies: list[float] = field(default_factory=list)
    ok_latencies: list[float] = field(default_factory=list)
    shed_latencies: list[float] = field(default_factory=list)
    by_status: dict[int, list[float]] = field(default_factory=dict)
    statuses: dict[int, int] = field(default_factory=dict)
    errors: dict[str, int] = field(default_factory=dict)
    workers: dict[str, int] = field(default_factory=dict)
    shed_with_retry_after: int = 0  # 503s that said when to come back
    duration: float = 0.0

    @property
    def failed(self) -> int:
        """Answers other than 200 and 503, and requests that got no answer."""
        bad = sum(n for status, n in self.statuses.items() if status not in (*OK, SHED))
        return bad + sum(self.errors.values())

    def summary(self) -> dict[str, Any]:
        answered = len(self.latencies)
        return {
            "requests": self.scheduled,
            "throughput_rps": answered / self.duration if self.duration else 0.0,
            "ok_rps": len(self.ok_latencies) / self.duration if self.duration else 0.0,
            "p50_ms": quantile(self.latencies, 0.50) * 1e3,
            "p90_ms": quantile(self.latencies, 0.90) * 1e3,
            "p99_ms": quantile(self.latencies, 0.99) * 1e3,
            "max_ms": max(self.latencies, default=float("nan")) * 1e3,
            "mean_ms": statistics.fmean(self.latencies) * 1e3 if self.latencies else float("nan"),
            "ok_p50_ms": quantile(self.ok_latencies, 0.50) * 1e3,
            "ok_p99_ms": quantile(self.ok_latencies, 0.99) * 1e3,
            "shed_p99_ms": quantile(self.shed_latencies, 0.99) * 1e3,
            "shed_share": self.statuses.get(SHED, 0) / self.scheduled if self.scheduled else 0.0,
            "shed_with_retry_after": self.shed_with_retry_after,
            "errors": self.failed,
            "error_kinds": {**{str(k): v for k, v in self.statuses.items()}, **self.errors},
            "workers": dict(sorted(self.workers.items())),
            # e.g. 304 (revalidated cache hits) apart from 200 (computed lists and first hits)
            "p99_ms_by_status": {
                str(k): quantile(v, 0.99) * 1e3 for k, v in sorted(self.by_status.items())
            },
        }


def quantile(values: list[float], q: float) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


class _Connection:
    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.reader, self.writer = reader, writer

    async def get(self, request: bytes) -> tuple[int, str, bool, str | None, bool]:
        """Send one request; read the whole answer (Content-Length): status, worker, closed,
        ETag, whether it said Retry-After."""
        self.writer.write(request)
        await self.writer.drain()
        status_line = await self.reader.readline()
        status = int(status_line.split(b" ", 2)[1])
        length, close, worker, etag, retry = 0, False, "?", None, False
        while (line := await self.reader.readline()) not in (b"\r\n", b""):
            name, _, value = line.partition(b":")
            name = name.strip().lower()
            if name == b"content-length":
                length = int(value)
            elif name == b"connection" and value.strip().lower() == b"close":
                close = True
            elif name == b"x-recengine-worker":
                worker = value.strip().decode()
            elif name == b"etag":
                etag = value.strip().decode()
            elif name == b"retry-after":
                retry = True
        await self.reader.readexactly(length)
        return status, worker, close, etag, retry


# A GET of a path, or a POST of (path, body) as navigator.sendBeacon sends it (text/plain).
Target = str | tuple[str, bytes]


def _request(target: Target, headers: str) -> bytes:
    if isinstance(target, str):
        return f"GET {target} HTTP/1.1\r\n{headers}\r\n".encode()
    path, body = target
    head = (
        f"POST {path} HTTP/1.1\r\n{headers}Content-Type: text/plain;charset=UTF-8\r\n"
        f"Content-Length: {len(body)}\r\n\r\n"
    )
    return head.encode() + body


async def _open(host: str, port: int) -> _Connection:
    reader, writer = await asyncio.open_connection(host, port)
    return _Connection(reader, writer)


async def _run(
    base: str,
    paths: Sequence[Target],
    rate: float,
    seconds: float,
    connections: int,
    seed: int,
    keepalive: bool,
    timeout: float | None,
    etags: dict[str, str] | None = None,
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

    async def one(at: float, path: Target) -> None:
        await asyncio.sleep(max(0.0, at - loop.time()))
        connection = await pool.get()
        known = etags.get(path) if etags is not None and isinstance(path, str) else None
        condition = f"If-None-Match: {known}\r\n" if known else ""
        request = _request(path, f"Host: {host}:{port}\r\n{close}{condition}")
        try:
            async with asyncio.timeout(timeout):
                if connection is None:
                    connection = await _open(host, port)
                status, worker, closed, etag, retry = await connection.get(request)
            if etags is not None and status == 200 and etag and isinstance(path, str):
                etags[path] = etag  # a client (browser, CDN) that revalidates next time
            if closed or not keepalive:  # a shed answer closes even a kept-alive connection
                connection.writer.close()
                connection = None
            took = loop.time() - at
            result.latencies.append(took)
            if status in OK:
                result.ok_latencies.append(took)
            elif status == SHED:
                result.shed_latencies.append(took)
                result.shed_with_retry_after += retry
            result.statuses[status] = result.statuses.get(status, 0) + 1
            result.by_status.setdefault(status, []).append(took)
            result.workers[worker] = result.workers.get(worker, 0) + 1
        except (OSError, asyncio.IncompleteReadError, ValueError, IndexError) as exc:
            name = type(exc).__name__  # TimeoutError: no answer within `timeout`
            result.errors[name] = result.errors.get(name, 0) + 1
            if connection is not None:
                connection.writer.close()
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
    paths: Sequence[Target],
    *,
    rate: float,
    seconds: float,
    connections: int = 64,
    seed: int = 7,
    keepalive: bool = False,
    timeout: float | None = None,
    etags: dict[str, str] | None = None,
) -> Result:
    """Send ``rate`` requests per second for ``seconds`` to random ``paths`` of ``base`` (a
    path is a GET; a ``(path, body)`` pair a text/plain POST, as a beacon).

    At most ``connections`` requests are in flight; more wait (their latency counts from their
    scheduled time). ``timeout``: a request not answered within it (from when it got its
    connection) counts as an error, ``TimeoutError``. ``etags``: send conditional requests
    (``If-None-Match`` with the last ETag seen for the path, learnt into this dict); a 304
    counts as an answer like a 200.
    """
    # Whatever the calling process holds (a benchmark's corpus, recengine's modules) is frozen
    # out of the collector while the generator runs: full collections over it, triggered by
    # the run's own tasks, stalled the loop for 100-300 ms and set the p99 of a server
    # answering in 2 ms (hits alone at 1,000/s: p99 120-230 ms before, 1.7-2.0 ms after).
    gc.collect()
    gc.freeze()
    try:
        return asyncio.run(
            _run(base, paths, rate, seconds, connections, seed, keepalive, timeout, etags)
        )
    finally:
        gc.unfreeze()
