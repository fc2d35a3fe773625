"""Where a full reindex's time goes, phase by phase, in the parent and in the pool's workers:
which of it is the parent's serial work (what bounds the speed-up of more workers).

Usage::

    python -m bench.reindex_phases DATA_DIR [--workers 1 2] [--rounds 2]

``DATA_DIR`` holds a database a ``recengine ingest`` made (``bench.db``, SQLite; e.g. the
``long-mix`` corpus of ``bench.cli_run`` ingested once). Each round runs, for each ``--workers``,
a full reindex (``--force --no-resume``) in this process with the command line's pool, and
prints per phase (the progress phases the command line shows) its wall seconds, the CPU seconds
of this process (the parent: everything it does while the workers wait is serial) and of the
pool's workers (reaped when the pool closes: their CPU is the whole run's, on the last line),
with the load. Nothing is asserted: figures only.
"""

from __future__ import annotations

import argparse
import os
import resource
import time
from pathlib import Path

from recengine.config import load_settings
from recengine.pipeline.featurize import Featurizer
from recengine.pipeline.reindex.full import reindex
from recengine.pipeline.reindex.pool import AnalysisPool
from recengine.storage.db import make_engine, make_session_factory


def _cpu(who: int) -> float:
    usage = resource.getrusage(who)
    return usage.ru_utime + usage.ru_stime


class Phases:
    """A ``Progress`` that notes the wall clock and this process's CPU at each phase start."""

    def __init__(self) -> None:
        now = (time.perf_counter(), _cpu(resource.RUSAGE_SELF))
        self.marks: list[tuple[str, float, float]] = [("start", *now)]

    def start(self, phase: str, total: int | None, done: int = 0) -> None:
        self.marks.append((phase, time.perf_counter(), _cpu(resource.RUSAGE_SELF)))

    def update(self, n: int) -> None:
        pass


def one_run(data_dir: Path, workers: int) -> None:
    settings = load_settings(
        {"data_dir": str(data_dir), "database_url": f"sqlite:///{data_dir / 'bench.db'}"}
    )
    factory = make_session_factory(make_engine(settings.resolved_database_url))
    phases = Phases()
    children = _cpu(resource.RUSAGE_CHILDREN)
    featurizer = Featurizer(settings)
    with AnalysisPool(settings, workers=workers, featurizer=featurizer) as pool:
        reindex(
            factory=factory,
            featurizer=featurizer,
            batch_size=settings.reindex.batch_size,
            progress=phases,
            pool=pool,
            resume=False,
        )
    phases.start("end", None)
    one, five, _ = os.getloadavg()
    print(f"--workers {workers} (load {one:.1f}/{five:.1f})")
    print(f"  {'phase':<14} {'wall s':>7} {'parent CPU s':>13}")
    for (name, wall, cpu), (_, wall2, cpu2) in zip(phases.marks, phases.marks[1:], strict=False):
        print(f"  {name:<14} {wall2 - wall:>7.2f} {cpu2 - cpu:>13.2f}")
    first, last = phases.marks[0], phases.marks[-1]
    workers_cpu = _cpu(resource.RUSAGE_CHILDREN) - children
    print(
        f"  {'total':<14} {last[1] - first[1]:>7.2f} {last[2] - first[2]:>13.2f}"
        f"   workers' CPU {workers_cpu:.2f} s"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("data_dir", type=Path)
    parser.add_argument("--workers", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--rounds", type=int, default=2)
    args = parser.parse_args()
    for _ in range(args.rounds):
        for workers in args.workers:
            one_run(args.data_dir, workers)


if __name__ == "__main__":
    main()
