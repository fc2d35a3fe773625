"""The serving worker's garbage collector (``recengine.web.server.collector``).

The collector's cases run in a fresh interpreter: freezing is process-wide, and pytest's own
objects must not stay frozen, nor its collector's state changed, for the tests that follow."""

from __future__ import annotations

import gc
import json
import subprocess
import sys
import weakref
from typing import Any

from flask import Flask
from flask.testing import FlaskClient

from recengine.web.services import services_of
from tests.web.api.test_answers import post, unrelated

COMMON = """
import gc, json, weakref
from recengine.web.server.collector import Collector

class Node:
    pass

now = [0.0]
collector = Collector(REFRESH, clock=lambda: now[0])
walked = lambda: len(gc.get_objects())  # what a full collection walks (not the frozen)
out = {}
"""


def run(refresh: float, body: str) -> dict[str, object]:
    script = COMMON.replace("REFRESH", repr(refresh)) + body + "\nprint(json.dumps(out))\n"
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    result: dict[str, object] = json.loads(done.stdout)
    return result


def test_what_survives_a_full_collection_is_frozen_and_new_garbage_is_still_freed() -> None:
    out = run(
        600.0,
        """
before = walked()
collector.start()
out["start_pauses"] = len(collector.tick())  # its own collection is a pause too
out["frozen_at_start"] = gc.get_freeze_count()
out["walked_drop"] = before - walked()
kept = [[i] for i in range(20_000)]  # long-lived objects built after the start (an index)
out["walked_with_kept"] = walked()
gc.collect()  # a full collection, as the interpreter's own
pauses = collector.tick()
out["pauses"] = pauses
out["walked_after_tick"] = walked()
out["frozen_after_tick"] = gc.get_freeze_count()
cycle = Node(); cycle.me = cycle; gone = weakref.ref(cycle); del cycle
gc.collect()
out["young_cycle_freed"] = gone() is None
out["second_tick_pauses"] = len(collector.tick()) == 1 and len(collector.tick()) == 0
collector.stop()
out["frozen_after_stop"] = gc.get_freeze_count()
""",
    )
    assert out["start_pauses"] == 1
    assert out["frozen_at_start"] > 10_000  # the modules and everything else alive
    assert out["walked_drop"] > 10_000
    assert out["walked_with_kept"] >= 20_000
    pauses = out["pauses"]
    assert isinstance(pauses, list) and len(pauses) == 1 and pauses[0] > 0
    assert out["walked_after_tick"] < 1_000  # the 20,000 kept lists no longer walked
    assert out["frozen_after_tick"] >= out["frozen_at_start"] + 20_000  # type: ignore[operator]
    assert out["young_cycle_freed"] is True
    assert out["second_tick_pauses"] is True
    assert out["frozen_after_stop"] == 0


def test_a_refresh_thaws_so_cycles_that_became_garbage_while_frozen_are_freed() -> None:
    out = run(
        600.0,
        """
collector.start()
cycle = Node(); cycle.me = cycle; gone = weakref.ref(cycle)
gc.collect(); collector.tick()  # the cycle, alive, is frozen
del cycle
gc.collect()
out["leaked_while_frozen"] = gone() is not None
now[0] = 599.0
collector.tick()
out["frozen_before_refresh"] = gc.get_freeze_count() > 0
now[0] = 600.0
collector.tick()  # the refresh: thawed
out["frozen_at_refresh"] = gc.get_freeze_count()
gc.collect()
out["freed_after_refresh"] = gone() is None
collector.tick()  # what that full collection left is frozen again
out["frozen_again"] = gc.get_freeze_count() > 10_000
""",
    )
    assert out["leaked_while_frozen"] is True  # why the refresh exists
    assert out["frozen_before_refresh"] is True
    assert out["frozen_at_refresh"] == 0
    assert out["freed_after_refresh"] is True
    assert out["frozen_again"] is True


def test_refresh_zero_freezes_nothing_and_still_reports_pauses() -> None:
    out = run(
        0.0,
        """
collector.start()
kept = [[i] for i in range(5_000)]
gc.collect()
out["pauses"] = len(collector.tick())
now[0] = 10_000.0
collector.tick()
out["frozen"] = gc.get_freeze_count()
collector.stop()
""",
    )
    assert out == {"pauses": 1, "frozen": 0}


def test_an_index_replaced_by_a_write_is_freed_while_frozen(
    app: Flask, client: FlaskClient, corpus: list[dict[str, Any]]
) -> None:
    """What the refresh cannot promise quickly, reference counting must: every derived index a
    worker replaces after a write (a step of its follower) is freed at once, frozen or not. A
    reference cycle through an index would keep each replaced copy until the next refresh."""
    path = f"/api/v1/articles/{corpus[0]['id']}/related"
    assert client.get(path).status_code == 200
    services = services_of(app)
    assert services is not None
    followers = services.followers()
    gone = {kind: weakref.ref(f.held.index) for kind, f in followers.items() if f.held}
    assert {"related", "dense"} <= set(gone)
    gc.collect()
    gc.freeze()
    try:
        for n in range(2):
            post(client, unrelated(n))
            assert client.get(path).status_code == 200  # the followers step
        stepped = {kind: f.held.index for kind, f in followers.items() if f.held}
        assert all(stepped[kind] is not ref() for kind, ref in gone.items())
        del stepped
        assert {kind for kind, ref in gone.items() if ref() is not None} == set()
    finally:
        gc.unfreeze()
