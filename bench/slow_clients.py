"""Health checks while slow clients hold connections: recengine's worker beside gthread.

The attack of issue 13: ``--uploads`` (12) authenticated POSTs that send their headers and the
first bytes of a 100 kB body, then stall, and ``--heads`` (16) connections that send half a
request head and stall; all opened at once and held for the whole run. Meanwhile
``/api/v1/health`` is asked ``--rate`` (10) times a second for ``--seconds`` (30), each with a
5 s client timeout (what a load balancer allows). Printed: the share of health checks answered,
their p50/p99, and what became of the stalled clients (for recengine's worker: 408 after
``web.header_timeout_seconds`` / ``web.body_timeout_seconds``).

Both servers are gunicorn with recengine's settings (``-c
python:recengine.web.server.gunicorn_conf``), 2 workers x 4 threads, the slow-client deadlines at
their defaults (10 s and 30 s) unless ``--header-timeout`` / ``--body-timeout`` say otherwise; the
stalled clients are re-opened whenever the server closes them, so the attack lasts as long as the
run. Loopback only; every socket is closed at the end.

Usage::

    python -m bench.slow_clients [--servers recengine gthread] [--seconds 30]
"""

from __future__ import annotations

import argparse
import os
import socket
import threading
import time
from pathlib import Path
from urllib.parse import urlsplit

from bench import loadgen
from bench.api_load import RESULTS, server
from recengine.config import load_settings
from recengine.storage.db import make_engine
from recengine.storage.migrate import upgrade

KEY = "bench-key"


def stalled_upload() -> bytes:
    return (
        "POST /api/v1/articles HTTP/1.1\r\nHost: x\r\n"
        f"Authorization: Bearer {KEY}\r\nContent-Type: application/json\r\n"
        'Content-Length: 100000\r\n\r\n{"id": "stalled", "title": "'
    ).encode()


HALF_HEAD = b"GET /api/v1/health HTTP/1.1\r\nHost: x\r\nX-Slow: "


class Attack:
    """Keeps ``count`` connections that sent ``prefix`` and stall, re-opening closed ones."""

    def __init__(self, base: str, prefix: bytes, count: int) -> None:
        parts = urlsplit(base)
        self.address = (parts.hostname or "127.0.0.1", parts.port or 80)
        self.prefix, self.count = prefix, count
        self.stop = threading.Event()
        self.opened = self.closed_by_server = 0
        self.answers: dict[str, int] = {}
        self.threads = [threading.Thread(target=self._hold, daemon=True) for _ in range(count)]

    def __enter__(self) -> Attack:
        for thread in self.threads:
            thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self.stop.set()
        for thread in self.threads:
            thread.join(10)

    def _hold(self) -> None:
        while not self.stop.is_set():
            with socket.create_connection(self.address, timeout=1.0) as sock:
                sock.sendall(self.prefix)
                self.opened += 1
                answer = self._wait(sock)
                if answer is not None:
                    self.closed_by_server += 1
                    self.answers[answer] = self.answers.get(answer, 0) + 1

    def _wait(self, sock: socket.socket) -> str | None:
        """Until the server answers or closes (its status, "closed"), or the run ends."""
        while not self.stop.is_set():
            try:
                data = sock.recv(4096)
            except TimeoutError:
                continue
            except OSError:
                return "reset"
            return data.split(b" ", 2)[1].decode() if data else "closed"
        return None


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--servers", nargs="+", default=["recengine", "gthread"])
    parser.add_argument("--uploads", type=int, default=12)
    parser.add_argument("--heads", type=int, default=16)
    parser.add_argument("--rate", type=float, default=10.0)
    parser.add_argument("--seconds", type=float, default=30.0)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--threads", type=int, default=4)
    args = parser.parse_args()
    db = RESULTS / "slow_clients.db"
    RESULTS.mkdir(exist_ok=True)
    db.unlink(missing_ok=True)
    settings = load_settings(
        {"database_url": f"sqlite:///{db}", "data_dir": str(Path(f"{db}.data")), "api_key": KEY}
    )
    engine = make_engine(settings.resolved_database_url)
    upgrade(engine)
    engine.dispose()
    os.environ["RECENGINE_API_KEY"] = KEY
    print(f"{'':10} {'answered':>9} {'p50 ms':>8} {'p99 ms':>8}  stalled clients: answers")
    for kind in args.servers:
        with server(settings, args.workers, args.threads, kind) as base:
            before = loadgen.run(base, ["/api/v1/health"], rate=args.rate, seconds=2, timeout=5)
            assert before.statuses.get(200) == before.scheduled, before.summary()
            with (
                Attack(base, stalled_upload(), args.uploads) as uploads,
                Attack(base, HALF_HEAD, args.heads) as heads,
            ):
                time.sleep(0.5)  # every stalled connection open and sent
                result = loadgen.run(
                    base, ["/api/v1/health"], rate=args.rate, seconds=args.seconds, timeout=5.0
                )
            ok = result.statuses.get(200, 0)
            print(
                f"{kind:10} {ok / result.scheduled:9.1%} "
                f"{loadgen.quantile(result.ok_latencies, 0.5) * 1e3:8.1f} "
                f"{loadgen.quantile(result.ok_latencies, 0.99) * 1e3:8.1f}  "
                f"uploads {uploads.answers or 'none'}, heads {heads.answers or 'none'}",
                flush=True,
            )
    load = os.getloadavg()
    print(
        f"{args.uploads} stalled uploads + {args.heads} half heads, health {args.rate:g}/s for "
        f"{args.seconds:g} s (5 s client timeout), {args.workers} workers x {args.threads} "
        f"threads; load average after: {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}"
    )


if __name__ == "__main__":
    main()
