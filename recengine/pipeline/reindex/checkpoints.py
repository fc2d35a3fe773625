"""Named points of a reindex where a test can hold it: events instead of timing.

A test that must interrupt a reindex at a given stage (Ctrl-C while features are written, after
the switch, ...) cannot rely on sleeps: a loaded machine runs the reindex ahead of the test or
behind it. Instead it sets ``RECENGINE_TEST_HOLD=<name>[@<count>]:<folder>``; the ``count``-th
time (default 1) the reindex reaches :func:`checkpoint` ``name``, it creates
``<folder>/<name>.reached`` and waits until ``<folder>/<name>.go`` exists. The test does what it
wants meanwhile (signals, queries, writes) and then creates the ``.go`` file or kills the
process. A signal interrupts the wait like any other (Ctrl-C raises ``KeyboardInterrupt``).

Without the variable (every real run) a checkpoint costs one dictionary look-up. The names an
ingest passes (``pipeline.ingest.ingester``): ``ingested`` (a batch committed). The names a reindex
passes (``pipeline.reindex.run``): ``tokenized`` (a batch spooled, pass 1), ``written`` (a batch
of features written, pass 2), ``prepared`` (new clusters computed, switch next), ``switched``
(the switch committed).
"""

from __future__ import annotations

import os
import time
from pathlib import Path

ENV = "RECENGINE_TEST_HOLD"
_POLL_S = 0.01

_seen: dict[str, int] = {}


def checkpoint(name: str) -> None:
    """Hold here if ``RECENGINE_TEST_HOLD`` names this point (see the module docstring)."""
    spec = os.environ.get(ENV)
    if not spec:
        return
    point, _, folder = spec.partition(":")
    wanted, _, count = point.partition("@")
    if wanted != name:
        return
    _seen[name] = _seen.get(name, 0) + 1
    if _seen[name] != int(count or 1):
        return
    where = Path(folder)
    where.mkdir(parents=True, exist_ok=True)
    (where / f"{name}.reached").touch()
    go = where / f"{name}.go"
    while not go.exists():
        time.sleep(_POLL_S)
