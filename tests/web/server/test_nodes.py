"""Several ``recengine serve`` nodes on one PostgreSQL, each with its own data directory.

Real processes on the real PostgreSQL: a write through node A is in node B's answers once the
change notification arrives (``storage.notify``; node B's fallback re-read is set far beyond
the test, so only the notification can bring it), idle reads cost no position query, a node
without notifications sees the write in its very next answer (the per-request check), and a
node that joins late catches up from SQL.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest
from prometheus_client.parser import text_string_to_metric_families
from sqlalchemy import Engine

from recengine.config import Settings
from recengine.pipeline.featurize import Featurizer
from recengine.pipeline.ingest.ingester import Ingester
from recengine.pipeline.reindex.full import reindex
from recengine.storage.db import make_session_factory
from tests.factories import javaguide_records
from tests.web.conftest import AUTH
from tests.web.server.test_serve import DEADLINE_S, from_every_worker, server_env
from tests.web.serving import Reply, call, served

# Nodes and notifications share one server: PostgreSQL only (SQLite is one machine's file).
ON_POSTGRES = pytest.mark.parametrize("database_url", ["postgresql"], indirect=True)
pytestmark = [pytest.mark.postgres, ON_POSTGRES]
ARGS = ["serve", "--port", "0", "--threads", "2"]
FAR = "3600"  # seconds: no fallback re-read of the position within the test


def node_env(settings: Settings, root: Path, name: str, **extra: str) -> dict[str, str]:
    data = root / name
    data.mkdir()
    return {**server_env(settings), "RECENGINE_DATA_DIR": str(data), **extra}


def counter(base: str, name: str) -> float:
    """The sum of a metric's samples in a scrape of node ``base`` (every worker's)."""
    text = call(base, "GET", "/metrics", headers=AUTH).body.decode()
    return sum(
        s.value
        for family in text_string_to_metric_families(text)
        for s in family.samples
        if s.name == name
    )


def related_ids(reply: Reply) -> set[str]:
    return {i["id"] for i in reply.json()["items"]}


def _listening(base: str) -> bool:
    return counter(base, "recengine_change_listener_connected") == 1


def until(base: str, path: str, accept: Any) -> tuple[Reply, float]:
    started = time.monotonic()
    while time.monotonic() - started < DEADLINE_S:
        reply = call(base, "GET", path)
        if accept(reply):
            return reply, time.monotonic() - started
    raise AssertionError(f"{path} on {base}: not within {DEADLINE_S} s")


def test_a_write_through_one_node_reaches_the_others_and_a_late_node_catches_up(
    settings: Settings, engine: Engine, featurizer: Featurizer, data_dir: Path, tmp_path: Path
) -> None:
    factory = make_session_factory(engine)
    records = javaguide_records(data_dir, 20)
    Ingester(factory, featurizer).ingest_records(records)
    reindex(factory=factory, featurizer=featurizer)
    query = records[5]
    path = f"/api/v1/articles/{query['id']}/related?k=50&min_score=0"
    listening = {"RECENGINE_INDEX__LISTEN_INTERVAL_S": FAR}
    env_a = node_env(settings, tmp_path, "a", **listening)
    env_b = node_env(settings, tmp_path, "b", **listening)
    env_c = node_env(settings, tmp_path, "c", RECENGINE_INDEX__LISTEN="false")
    with (
        served([*ARGS, "--workers", "1"], env_a) as a,
        served([*ARGS, "--workers", "2"], env_b) as b,
        served([*ARGS, "--workers", "1"], env_c) as c,
    ):
        for node in (a, b, c):
            from_every_worker(node.url, path, 1, lambda r: r.status == 200)
        from_every_worker(b.url, path, 2, lambda r: r.status == 200)  # both workers' indexes
        for node in (a, b):  # every worker listening (its listener reported a change on connect)
            until(node.url, "/api/v1/health", lambda r, n=node: _listening(n.url))
        from_every_worker(b.url, path, 2, lambda r: r.status == 200)  # caught up since
        reads = counter(b.url, "recengine_index_position_reads_total")
        for _ in range(10):  # idle reads: answered from the index without a position query
            assert call(b.url, "GET", path).status == 200
        assert counter(b.url, "recengine_index_position_reads_total") == reads

        mixed = query["content"][:1500] + "\n" + records[6]["content"][:1500]
        fresh = {"id": "fresh", "title": "新文章", "content": mixed}
        assert call(a.url, "POST", "/api/v1/articles", fresh, AUTH).status == 200
        # node C reads the position before every answer: its next answer has the write
        assert "fresh" in related_ids(call(c.url, "GET", path))
        # node B learns of it from the notification (its fallback re-read is an hour away)
        listed = from_every_worker(b.url, path, 2, lambda r: "fresh" in related_ids(r))
        assert len(listed) == 2
        assert counter(b.url, "recengine_change_notifications_total") >= 2  # each worker's
        gone = call(b.url, "DELETE", "/api/v1/articles/fresh", headers=AUTH)
        assert gone.status == 200
        until(a.url, path, lambda r: "fresh" not in related_ids(r))

        # a node that joins late (a fresh data directory) builds from SQL and is current
        edited = {**records[6], "title": "晚到的标题"}
        assert call(b.url, "POST", "/api/v1/articles", edited, AUTH).status == 200
        env_d = node_env(settings, tmp_path, "d")
        with served([*ARGS, "--workers", "1"], env_d) as d:
            first = call(d.url, "GET", path)
            assert first.status == 200 and "fresh" not in related_ids(first)
            titles = {i["id"]: i["title"] for i in first.json()["items"]}
            assert titles.get(records[6]["id"]) == "晚到的标题"
            assert first.body == call(c.url, "GET", path).body  # the same answer everywhere
