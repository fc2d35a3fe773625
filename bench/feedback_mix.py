"""``bench.api_load --feedback-rate``: does reader feedback slow the related endpoint down?

For each server, rounds alternate between the related load alone (the reference) and the same
related load with a feedback stream beside it: ``--feedback-rate`` events per second, sent as
beacons of ``--feedback-batch`` events (``POST /api/v1/feedback``, text/plain, as the widget's
``navigator.sendBeacon``), each to a random article, variant ``default``, slots 0..batch-1.
Both streams are open loop (``bench.loadgen``), on their own event loops in two processes (see
:func:`mixed`). Alternating rounds (A B A B ...) keeps a drift of the machine's load from
passing for an effect; the verdict compares the medians of the related stream's
accepted-request p99. The server's CPU seconds per round (``/proc``) say what the feedback
costs it, a figure other sessions' load moves far less than a p99.

All beacons come from one address here, where a site's come from many readers: the server is
started with the per-client rate limit raised (``FEEDBACK_ENV``) so that the limiter measures
its cost without refusing the stream.

**The generator's share.** On a site the beacons come from readers' browsers; here their
generator shares the 2 cores with the server, so "alone vs with feedback" charges the
endpoint with the generator's CPU too. With ``control`` each round also runs the same beacon
stream against a sink (:func:`sink`: a process that reads each request and answers a fixed
200, the least a server can do): "alone vs control" is what sending beacons from this
machine costs the related stream, "control vs with feedback" what the endpoint itself adds.
The target is judged as written (alone vs with feedback); the control only explains it.

**Connections.** A browser sends ``navigator.sendBeacon`` on the connection it already holds
to the API (the widget fetched the list from it), so ``keepalive`` connections are what a
site's beacons look like; a new connection per beacon (the default) is the upper bound.
"""

from __future__ import annotations

import asyncio
import json
import multiprocessing
import os
import random
import statistics
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench import loadgen

FEEDBACK_ENV = {
    "RECENGINE_FEEDBACK__CLIENT_RATE": "1000000",
    "RECENGINE_FEEDBACK__CLIENT_BURST": "1000000",
}
TARGET = 0.10  # the related p99 may move by at most 10 %


def beacons(ids: list[str], batch: int, count: int = 2_000, seed: int = 3) -> list[loadgen.Target]:
    """``count`` distinct beacon bodies of ``batch`` events each."""
    rnd = random.Random(seed)
    out: list[loadgen.Target] = []
    for _ in range(count):
        article = rnd.choice(ids)
        events = [
            {"type": "impression", "article": article, "variant": "default", "slot": s}
            for s in range(batch)
        ]
        if rnd.random() < 0.05:  # some lists get a click
            events.append({"type": "click", "article": article, "variant": "default", "slot": 0})
        out.append(("/api/v1/feedback", json.dumps(events).encode()))
    return out


def cpu_costs(
    app: Any, related: list[str], feedback: list[loadgen.Target], n: int, beacons: int
) -> dict[str, float]:
    """CPU milliseconds per request of this process (all its threads, the feedback commit
    thread included), through Flask's test client: what each kind costs, whatever the load of
    the machine (wall-clock latency on a shared machine measures the other sessions too).
    One request at a time, so each beacon is a group commit of its own (two transactions):
    the upper bound of its cost; under traffic a commit carries many. ``n`` related lists,
    ``beacons`` beacons (each waits out the group-commit window: fewer)."""
    client = app.test_client()
    for path in related[:50]:
        client.get(path)  # warm: models and indexes loaded
    out = {}
    t0 = time.process_time()
    for path in related[:n]:
        client.get(path)
    out["related_cpu_ms"] = (time.process_time() - t0) / min(n, len(related)) * 1e3
    t0 = time.process_time()
    for target in feedback[:beacons]:
        assert isinstance(target, tuple)
        answer = client.post(target[0], data=target[1], content_type="text/plain")
        assert answer.status_code == 200, answer.get_data(as_text=True)
    out["beacon_cpu_ms"] = (time.process_time() - t0) / min(beacons, len(feedback)) * 1e3
    return out


@dataclass(frozen=True)
class Streams:
    """The two open-loop streams of a round: the related load (``related`` paths at ``rate``)
    and the beacons (``feedback`` bodies at ``feedback_rps``), ``seconds`` long, to ``base``.
    ``common`` / ``feedback_common``: each stream's connection options (``loadgen.run``)."""

    base: str
    related: list[str]
    feedback: list[loadgen.Target]
    rate: float
    feedback_rps: float
    seconds: float
    common: dict[str, Any]
    feedback_common: dict[str, Any]

    def related_alone(self, seed: int) -> dict[str, Any]:
        return loadgen.run(
            self.base, self.related, rate=self.rate, seconds=self.seconds, seed=seed, **self.common
        ).summary()


def mixed(
    streams: Streams, seed: int, side_base: str | None = None
) -> tuple[dict[str, Any], dict[str, Any]]:
    """The related load and, beside it, the feedback load: both summaries.

    The feedback stream goes to ``side_base`` (the server when None; a :func:`sink` for the
    control). It runs in a process of its own (started first, both streams begin together):
    in a thread of this one, its event loop took this interpreter's lock from the related
    stream's and its own scheduling delays were counted as the server's latency.
    """
    context = multiprocessing.get_context("spawn")
    ready, go, results = context.Event(), context.Event(), context.Queue()
    s = streams
    beacons = (side_base or s.base, s.feedback, s.feedback_rps, s.feedback_common, s.seconds)
    args = (*beacons, seed + 1000, ready, go, results)
    side = context.Process(target=_side_stream, args=args, daemon=True)
    side.start()
    if not ready.wait(60):
        side.kill()
        raise RuntimeError("the feedback stream's process did not start")
    go.set()
    main = streams.related_alone(seed)
    found: dict[str, Any] = results.get(timeout=s.seconds + 120)
    side.join()
    return main, found


def _side_stream(
    base: str,
    feedback: list[loadgen.Target],
    rate: float,
    common: dict[str, Any],
    seconds: float,
    seed: int,
    ready: Any,
    go: Any,
    results: Any,
) -> None:
    ready.set()
    go.wait()
    results.put(
        loadgen.run(base, feedback, rate=rate, seconds=seconds, seed=seed, **common).summary()
    )


def compare(
    streams: Streams, rounds: int, server_pid: int, control: str | None = None
) -> dict[str, Any]:
    """Alternating rounds; the medians of the conditions and the verdict.

    Beside the latencies, the CPU seconds the server's processes used in each round (from
    /proc): what the feedback stream costs the server, a figure the other sessions' load on
    a shared machine moves much less than a p99. ``control``: a :func:`sink`'s base URL, for
    a third condition in every round (module docstring).
    """
    alone, beside, beacons, cpu_alone, cpu_beside, controlled = [], [], [], [], [], []
    for n in range(rounds):
        used = cpu_seconds(server_pid)
        alone.append(streams.related_alone(10 + n))
        cpu_alone.append(-used + (used := cpu_seconds(server_pid)))
        if control is not None:
            controlled.append(mixed(streams, 10 + n, control)[0])
            used = cpu_seconds(server_pid)
        main, side = mixed(streams, 10 + n)
        cpu_beside.append(cpu_seconds(server_pid) - used)
        beside.append(main)
        beacons.append(side)
    p99_alone = statistics.median(r["ok_p99_ms"] for r in alone)
    p99_beside = statistics.median(r["ok_p99_ms"] for r in beside)
    change = p99_beside / p99_alone - 1 if p99_alone else 0.0
    extra: dict[str, Any] = {}
    if controlled:
        p99_control = statistics.median(r["ok_p99_ms"] for r in controlled)
        extra = {
            "with_control": controlled,
            "p99_with_control_ms": p99_control,
            "p99_change_over_control": p99_beside / p99_control - 1 if p99_control else 0.0,
        }
    return extra | {
        "alone": alone,
        "with_feedback": beside,
        "feedback": beacons,
        "p99_alone_ms": p99_alone,
        "p99_with_feedback_ms": p99_beside,
        "p50_alone_ms": statistics.median(r["p50_ms"] for r in alone),
        "p50_with_feedback_ms": statistics.median(r["p50_ms"] for r in beside),
        "p99_change": change,
        "met": change <= TARGET,
        "server_cpu_alone_s": statistics.median(cpu_alone),
        "server_cpu_with_feedback_s": statistics.median(cpu_beside),
        "server_cpu_ms_per_beacon": (statistics.median(cpu_beside) - statistics.median(cpu_alone))
        / (streams.feedback_rps * streams.seconds)
        * 1e3,
    }


def cpu_seconds(pid: int) -> float:
    """User + system CPU seconds of ``pid`` and its live descendants (Linux /proc)."""
    total, tick = 0.0, os.sysconf("SC_CLK_TCK")
    todo = [pid]
    while todo:
        p = todo.pop()
        try:
            fields = Path(f"/proc/{p}/stat").read_text().rsplit(")", 1)[1].split()
            total += (int(fields[11]) + int(fields[12])) / tick
            for task in Path(f"/proc/{p}/task").iterdir():
                todo.extend(int(c) for c in (task / "children").read_text().split())
        except (OSError, ValueError):
            continue  # it ended meanwhile
    return total


def describe(name: str, result: dict[str, Any], batch: int) -> str:
    fb = result["feedback"]
    beacon_ok = statistics.median(r["ok_rps"] for r in fb)
    failed = sum(r["errors"] for r in fb)
    shed = statistics.median(r["shed_share"] for r in fb)
    control = ""
    if "p99_with_control_ms" in result:
        control = (
            f"; with the beacons sent to a sink instead (control) "
            f"{result['p99_with_control_ms']:.2f} ms: the endpoint's own change "
            f"{result['p99_change_over_control']:+.1%}"
        )
    return (
        f"{name}: related ok p99 {result['p99_alone_ms']:.2f} ms alone, "
        f"{result['p99_with_feedback_ms']:.2f} ms with feedback ({result['p99_change']:+.1%}; "
        f"target <= +{TARGET:.0%}: {'met' if result['met'] else 'MISSED'}); p50 "
        f"{result['p50_alone_ms']:.2f} -> {result['p50_with_feedback_ms']:.2f} ms; feedback "
        f"{beacon_ok * batch:.0f} events/s accepted ({beacon_ok:.0f} beacons/s of {batch}), "
        f"p99 {statistics.median(r['ok_p99_ms'] for r in fb):.2f} ms, shed {shed:.1%}, "
        f"errors {failed}; server CPU per round {result['server_cpu_alone_s']:.1f} s alone, "
        f"{result['server_cpu_with_feedback_s']:.1f} s with feedback: "
        f"{result['server_cpu_ms_per_beacon']:.2f} ms per beacon{control}"
    )


BODY = b'{"counted": 5}'
ANSWER = (
    b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
    + f"Content-Length: {len(BODY)}\r\nX-Recengine-Worker: sink\r\n\r\n".encode()
    + BODY
)
CLOSING = ANSWER.replace(b"\r\n\r\n", b"\r\nConnection: close\r\n\r\n", 1)


def sink(ready: Any) -> None:
    """A process that answers every request with :data:`ANSWER` (keeping the connection
    while the client does): the cheapest server a beacon stream can meet. Puts its base URL
    on ``ready`` and serves until killed."""

    async def answer(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while head := await reader.readuntil(b"\r\n\r\n"):
                lines = head.lower().split(b"\r\n")
                length = next(
                    (int(x.split(b":", 1)[1]) for x in lines if x.startswith(b"content-length:")),
                    0,
                )
                await reader.readexactly(length)
                close = b"connection: close" in lines
                writer.write(CLOSING if close else ANSWER)
                await writer.drain()
                if close:
                    break
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        writer.close()

    async def serve() -> None:
        server = await asyncio.start_server(answer, "127.0.0.1", 0, backlog=1024)
        port = server.sockets[0].getsockname()[1]
        ready.put(f"http://127.0.0.1:{port}")
        await server.serve_forever()

    asyncio.run(serve())


class Sink:
    """:func:`sink` in a process of its own, for a ``with`` block: yields its base URL."""

    def __enter__(self) -> str:
        context = multiprocessing.get_context("spawn")
        ready = context.Queue()
        self.process = context.Process(target=sink, args=(ready,), daemon=True)
        self.process.start()
        base: str = ready.get(timeout=60)
        return base

    def __exit__(self, *exc: object) -> None:
        self.process.kill()
        self.process.join()
