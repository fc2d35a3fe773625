"""Start-up time of the command line: ``recengine --help`` and a command's ``--help``, beside a
bare ``python -c pass`` in the same run (what no Python program can beat).

Usage::

    python -m bench.startup [--runs 20]

Each command runs ``--runs`` times as a new process; the median and the 90th percentile of the
wall-clock time are printed with the load average.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path


def timings(command: list[str], runs: int) -> list[float]:
    out = []
    for _ in range(runs):
        start = time.perf_counter()
        subprocess.run(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
        out.append(time.perf_counter() - start)
    return sorted(out)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=20)
    args = parser.parse_args()
    cli = str(Path(sys.executable).with_name("recengine"))
    commands = {
        "python -c pass (reference)": [sys.executable, "-c", "pass"],
        "recengine --help": [cli, "--help"],
        "recengine ingest --help": [cli, "ingest", "--help"],
        "recengine related --help": [cli, "related", "--help"],
    }
    print(f"load {os.getloadavg()[0]:.2f} (1 min) on {os.cpu_count()} cores; {args.runs} runs")
    for name, command in commands.items():
        t = timings(command, args.runs)
        p90 = t[int(0.9 * (len(t) - 1))]
        print(f"{name:<32} median {statistics.median(t) * 1e3:7.1f} ms   p90 {p90 * 1e3:7.1f} ms")
    print(f"load after: {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
