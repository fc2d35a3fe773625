"""What the metrics cost per request: the app's hooks alone, and whole requests with and without.

1. The per-request hooks (``Metrics.observe`` + ``Metrics.publish_indexes``) called in a loop,
   in prometheus-client's multiprocess mode (memory-mapped files, what ``recengine serve``
   runs) and with an in-memory registry, each in a fresh process (the mode is chosen when
   prometheus-client is imported).
2. ``GET /api/v1/health`` through Flask's test client in this process, metrics enabled and
   disabled, interleaved rounds (medians): the end-to-end share of one cheap request.
3. One scrape of ``/metrics`` (after the requests above).

Usage::

    python -m bench.metrics_cost [--requests 20000]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HOOKS = """
import time
from recengine.web.metrics import Metrics
m = Metrics()
n = {n}
t0 = time.perf_counter()
for i in range(n):
    m.observe("/api/v1/articles/<id:article_id>/related", "GET", 200, 0.004)
    m.publish_indexes({{}})
print((time.perf_counter() - t0) / n * 1e6)
"""


def hooks(n: int, multiprocess: bool) -> float:
    env = dict(os.environ)
    with tempfile.TemporaryDirectory() as directory:
        if multiprocess:
            env["PROMETHEUS_MULTIPROC_DIR"] = directory
        else:
            env.pop("PROMETHEUS_MULTIPROC_DIR", None)
        out = subprocess.run(
            [sys.executable, "-c", HOOKS.format(n=n)],
            env=env,
            capture_output=True,
            text=True,
            check=True,
        )
    return float(out.stdout.strip())


def requests(n: int) -> tuple[float, float, float]:
    from recengine.config import load_settings
    from recengine.storage.db import make_engine
    from recengine.storage.migrate import upgrade
    from recengine.web import create_app

    with tempfile.TemporaryDirectory() as directory:
        db = Path(directory) / "m.db"
        base = {"database_url": f"sqlite:///{db}", "data_dir": directory, "api_key": "k" * 20}
        upgrade(make_engine(base["database_url"]))
        clients = {
            on: create_app(load_settings(base | {"metrics": {"enabled": on}})).test_client()
            for on in (True, False)
        }
        rounds: dict[bool, list[float]] = {True: [], False: []}
        for _ in range(7):
            for on, client in clients.items():
                t0 = time.perf_counter()
                for _ in range(n // 7):
                    client.get("/api/v1/health")
                rounds[on].append((time.perf_counter() - t0) / (n // 7) * 1e6)
        t0 = time.perf_counter()
        clients[True].get("/metrics", headers={"Authorization": "Bearer " + "k" * 20})
        scrape = (time.perf_counter() - t0) * 1e3
    return statistics.median(rounds[True]), statistics.median(rounds[False]), scrape


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--requests", type=int, default=20_000)
    args = parser.parse_args()
    mp = hooks(args.requests, multiprocess=True)
    single = hooks(args.requests, multiprocess=False)
    on, off = requests(args.requests // 4)[:2]
    _, _, scrape = requests(700)
    print(f"hooks per request, multiprocess files: {mp:7.1f} us")
    print(f"hooks per request, in-memory registry: {single:7.1f} us")
    print(f"GET /api/v1/health (test client), metrics on:  {on:7.1f} us")
    print(f"GET /api/v1/health (test client), metrics off: {off:7.1f} us  (on/off {on / off:.3f})")
    print(f"one /metrics scrape: {scrape:.1f} ms")
    load = os.getloadavg()
    print(f"load average: {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}")


if __name__ == "__main__":
    main()
