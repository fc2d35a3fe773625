"""``recengine serve`` with gunicorn and several workers, and the one-command ``recengine demo``.

Real processes on real sockets: a write through one worker must be seen by every worker, on
SQLite and on PostgreSQL.
"""

from __future__ import annotations

import contextlib
import http.client
import json
import os
import select
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest
from sqlalchemy import Engine

from recengine.config import Settings
from recengine.pipeline.featurize import Featurizer
from recengine.pipeline.ingest.ingester import Ingester
from recengine.pipeline.reindex.full import reindex
from recengine.storage.db import make_session_factory
from tests.factories import javaguide_records, record
from tests.web.api.test_duplicates import repost
from tests.web.conftest import AUTH, KEY
from tests.web.serving import CLI, Reply, Served, call, served

# The documented delay is 0 (index.sync_interval_s = 0: each worker's index catches up before
# it answers; articles and clusters are read from SQL). The budget below only absorbs the time
# the requests themselves take on a busy machine, and a first index build in each worker.
DEADLINE_S = 10.0


def server_env(settings: Settings, **extra: str) -> dict[str, str]:
    return {
        "RECENGINE_DATABASE_URL": settings.resolved_database_url,
        "RECENGINE_DATA_DIR": str(settings.data_dir),
        "RECENGINE_API_KEY": KEY,
        **extra,
    }


def from_every_worker(
    base: str, path: str, workers: int, accept: Callable[[Reply], bool]
) -> dict[int, Reply]:
    """Ask until each of ``workers`` processes has answered acceptably (new connection each)."""
    good: dict[int, Reply] = {}
    seen: set[int] = set()
    deadline = time.monotonic() + DEADLINE_S
    while time.monotonic() < deadline:
        reply = call(base, "GET", path)
        seen.add(reply.worker)
        if accept(reply):
            good[reply.worker] = reply
        if len(good) == workers:
            return good
    raise AssertionError(f"{path}: acceptable answers from {sorted(good)}, workers seen {seen}")


def test_a_write_through_one_worker_is_seen_by_every_worker(
    settings: Settings, engine: Engine
) -> None:
    args = ["serve", "--port", "0", "--workers", "2", "--threads", "2"]
    with served(args, server_env(settings)) as server:
        health = from_every_worker(server.url, "/api/v1/health", 2, lambda r: r.status == 200)
        assert len(health) == 2
        written = call(server.url, "POST", "/api/v1/articles", [record(1)], AUTH)
        assert written.status == 200, written.body
        seen = from_every_worker(server.url, "/api/v1/articles/a1", 2, lambda r: r.status == 200)
        assert {r.json()["title"] for r in seen.values()} == {record(1)["title"]}
        deleted = call(server.url, "DELETE", "/api/v1/articles/a1", headers=AUTH)
        assert deleted.status == 200
        gone = from_every_worker(server.url, "/api/v1/articles/a1", 2, lambda r: r.status == 404)
        assert {r.json()["error"]["code"] for r in gone.values()} == {"not_found"}
    assert "(2 workers)" in "\n".join(server.log)


def test_articles_written_through_any_worker_are_in_every_workers_lists(
    settings: Settings, engine: Engine, featurizer: Featurizer, data_dir: Path
) -> None:
    factory = make_session_factory(engine)
    records = javaguide_records(data_dir, 21)
    Ingester(factory, featurizer).ingest_records(records[:20])
    reindex(factory=factory, featurizer=featurizer)
    args = ["serve", "--port", "0", "--workers", "2", "--threads", "2"]
    with served(args, server_env(settings)) as server:
        from_every_worker(server.url, "/api/v1/health", 2, lambda r: r.status == 200)
        original = records[20]
        copy = repost(original, "copy")
        for body in (original, copy):  # new connections: may well land on different workers
            assert call(server.url, "POST", "/api/v1/articles", body, AUTH).status == 200
        path = f"/api/v1/articles/{original['id']}/duplicates"
        seen = from_every_worker(
            server.url, path, 2, lambda r: r.status == 200 and bool(r.json()["duplicates"])
        )
        assert {r.json()["duplicates"][0]["id"] for r in seen.values()} == {"copy"}
        # a new article, related to records 5 and 6 but a copy of neither
        mixed = records[5]["content"][:1500] + "\n" + records[6]["content"][:1500]
        fresh = {"id": "fresh", "title": "新文章", "content": mixed}
        assert call(server.url, "POST", "/api/v1/articles", fresh, AUTH).status == 200
        path = f"/api/v1/articles/{records[5]['id']}/related?k=50"
        listed = from_every_worker(
            server.url, path, 2, lambda r: "fresh" in {i["id"] for i in r.json()["items"]}
        )
        assert len(listed) == 2
        path = f"/api/v1/articles/{original['id']}/related?k=50"
        suppressed = from_every_worker(
            server.url, path, 2, lambda r: "copy" in {i["id"] for i in r.json()["suppressed"]}
        )
        assert all("copy" not in {i["id"] for i in r.json()["items"]} for r in suppressed.values())


def test_every_worker_reports_the_same_health_for_the_same_state(
    settings: Settings, engine: Engine, featurizer: Featurizer, data_dir: Path
) -> None:
    """Health describes the service: not whether the answering worker has loaded its index or
    seen the last reindex (a load balancer may reach any of them)."""
    factory = make_session_factory(engine)
    records = javaguide_records(data_dir, 20)
    Ingester(factory, featurizer).ingest_records(records)
    reindex(factory=factory, featurizer=featurizer)
    args = ["serve", "--port", "0", "--workers", "2", "--threads", "2"]
    with served(args, server_env(settings)) as server:

        def reports() -> list[dict[str, Any]]:
            replies = from_every_worker(server.url, "/api/v1/health", 2, lambda r: True)
            return [r.json() for r in replies.values()]

        before = reports()
        assert before[0] == before[1] and before[0]["status"] == "ok"
        assert before[0]["database"]["model_version"] == 1
        # one worker answers a related query (its index is loaded), the other has not
        assert call(server.url, "GET", f"/api/v1/articles/{records[0]['id']}/related").status == 200
        assert reports() == before
        reindex(factory=factory, featurizer=featurizer)  # a new model, no query served since
        after = reports()
        assert after[0] == after[1] and after[0]["database"]["model_version"] == 2
        assert after[0]["status"] == "ok"
        for path, expected in (("/api/v1/health/ready", after[0]), ("/api/v1/health/live", None)):
            replies = from_every_worker(server.url, path, 2, lambda r: r.status == 200)
            bodies = [r.json() for r in replies.values()]
            assert bodies[0] == bodies[1] and (expected is None or bodies[0] == expected)


def test_serve_refuses_a_database_without_schema(tmp_path: Path) -> None:
    env = {**os.environ, "RECENGINE_DATA_DIR": str(tmp_path)}
    result = subprocess.run(
        [sys.executable, "-c", "from recengine.cli import main; main()", "serve", "--port", "0"],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert result.returncode == 2
    assert "recengine db upgrade" in result.stderr
    assert "Traceback" not in result.stderr


def _offline(command: list[str]) -> list[str]:
    """``command`` in a new network namespace whose only interface is loopback."""
    unshare = ["unshare", "--net"] if os.geteuid() == 0 else ["unshare", "-r", "--net"]
    return [*unshare, "sh", "-c", 'ip link set lo up && exec "$@"', "offline", *command]


@pytest.mark.slow
def test_the_demo_works_offline(tmp_path: Path) -> None:
    """`recengine demo`: database, real news ingested and indexed, served, URL printed; no net."""
    env = {**os.environ, "RECENGINE_DATA_DIR": str(tmp_path / "demo")}
    env.pop("RECENGINE_DATABASE_URL", None)
    env.pop("RECENGINE_API_KEY", None)
    result = subprocess.run(
        _offline([sys.executable, "-m", "tests.web.serving", "demo-check", "300"]),
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
        cwd=Path(__file__).resolve().parents[3],
    )
    assert result.returncode == 0, result.stdout + result.stderr
    report = json.loads(result.stdout.strip().splitlines()[-1])
    assert report["status"] == {
        "/": 200,
        "/widget.js": 200,
        "/openapi.json": 200,
        "/api/v1/health": 200,
    }
    assert report["health"]["status"] == "ok" and report["health"]["database"]["model_version"]
    assert "inserted 300" in "\n".join(report["log"])
    example = report["example"]  # the example site of another origin, embedding the widget
    assert example["page"] == 200 and example["widget_src"] and example["related"] == 200
    assert example["items"] >= 1 and example["cors"] == example["site"]
    assert (tmp_path / "demo" / "recengine.db").exists()  # the embedded default: SQLite


def test_body_limit_holds_for_chunked_uploads_through_gunicorn(
    settings: Settings, engine: Engine
) -> None:
    """No Content-Length to check up front: the limit must stop the stream as it is read."""
    import http.client
    from urllib.parse import urlsplit

    env = server_env(settings, RECENGINE_WEB__MAX_BODY_BYTES="5000")
    with served(["serve", "--port", "0", "--workers", "1"], env) as server:
        parts = urlsplit(server.url)
        connection = http.client.HTTPConnection(parts.hostname, parts.port, timeout=30)
        body = json.dumps(record(1, content="长" * 20_000)).encode()
        chunks = (body[i : i + 1000] for i in range(0, len(body), 1000))
        connection.request(
            "POST",
            "/api/v1/articles",
            body=chunks,
            encode_chunked=True,
            headers={**AUTH, "Content-Type": "application/json"},
        )
        response = connection.getresponse()
        assert response.status == 413
        assert json.loads(response.read())["error"]["code"] == "too_large"
        connection.close()
        assert call(server.url, "GET", "/api/v1/articles/a1").status == 404


def test_a_serving_worker_keeps_one_thread_per_native_pool() -> None:
    """``web.native_threads`` (1): the pools loaded before (numpy's OpenBLAS) and after (FAISS's
    OpenMP, on the first search) the worker starts each keep one thread."""
    script = """
import json, numpy
from recengine.web.server.worker import limit_native_threads
limit_native_threads(1)
import faiss
from threadpoolctl import threadpool_info
print(json.dumps([faiss.omp_get_max_threads(), [i["num_threads"] for i in threadpool_info()]]))
"""
    env = {k: v for k, v in os.environ.items() if not k.endswith("_NUM_THREADS")}
    out = subprocess.run(
        [sys.executable, "-c", script], env=env, capture_output=True, text=True, check=True
    )
    omp, pools = json.loads(out.stdout)
    assert omp == 1 and pools and set(pools) == {1}


def _exited(pid: int, timeout: float) -> bool:
    """Whether process ``pid`` (not a child of this one) exits within ``timeout``: waited on
    its pidfd, which becomes readable when it exits."""
    try:
        fd = os.pidfd_open(pid)
    except ProcessLookupError:
        return True
    try:
        return bool(select.select([fd], [], [], timeout)[0])
    finally:
        os.close(fd)


def _bindable(port: int) -> bool:
    """Whether a new server could bind ``port`` now (as gunicorn binds: SO_REUSEADDR)."""
    with socket.socket() as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind(("127.0.0.1", port))
        except OSError:
            return False
        return True


def _wait_until_a_worker_is_busy(base: str, workers: int) -> None:
    """Until one of ``workers`` one-thread workers refuses a read (503): its thread is taken.
    Asked through a kept-alive connection to each worker, as a new connection could be taken
    by the idle one every time."""
    parts = urlsplit(base)
    held: dict[int, http.client.HTTPConnection] = {}
    try:
        for _ in range(200):
            if len(held) == workers:
                break
            connection = http.client.HTTPConnection(parts.hostname, parts.port, timeout=30)
            connection.request("GET", "/api/v1/health")
            response = connection.getresponse()
            response.read()
            worker = int(response.getheader("X-Recengine-Worker", "0"))
            if worker in held:
                connection.close()
            else:
                held[worker] = connection
        assert len(held) == workers, held
        for _ in range(600):
            for connection in held.values():
                connection.request("GET", "/api/v1/articles/none")
                response = connection.getresponse()
                response.read()
                if response.status == 503:
                    return
        raise AssertionError("no worker's thread was taken")
    finally:
        for connection in held.values():
            connection.close()


def _logged_times(server: Served, text: str, times: int) -> bool:
    """Whether the server's log holds ``text`` ``times`` times (read by another thread: wait)."""
    for _ in range(300):
        if sum(text in line for line in server.log) >= times:
            return True
        threading.Event().wait(0.1)
    return False


def test_a_killed_masters_workers_stop_at_once_and_a_restart_binds_the_port(
    settings: Settings, engine: Engine
) -> None:
    """kill -9 of gunicorn's master: its workers used to keep serving (and committing) for
    2-12 s, holding the port, so a restart failed "port in use". Now each is told at once,
    closes its listening socket and exits once its running request is answered: the port can
    be bound while one still runs a write, and that write is answered, not lost."""
    from tests.web.server.test_slow_clients import READ_TIMEOUT, write_lock

    args = ["serve", "--port", "0", "--workers", "2", "--threads", "1"]
    with served(args, server_env(settings)) as server:
        try:
            port = urlsplit(server.url).port or 0
            workers = set(from_every_worker(server.url, "/api/v1/health", 2, lambda r: True))
            results: dict[str, Reply] = {}
            with write_lock(settings, engine):
                writer = threading.Thread(
                    target=lambda: results.update(
                        write=call(server.url, "POST", "/api/v1/articles", [record(1)], AUTH)
                    )
                )
                writer.start()
                _wait_until_a_worker_is_busy(server.url, 2)  # running the write, waiting
                os.kill(server.pid, signal.SIGKILL)
                assert _logged_times(server, "is gone: stopped accepting", 2), server.log
                with pytest.raises(ConnectionRefusedError):
                    call(server.url, "GET", "/api/v1/health")  # no listener left
                assert _bindable(port)
                assert any(not _exited(pid, 0) for pid in workers)  # the write's worker
            writer.join(READ_TIMEOUT)
            assert results["write"].status == 200  # answered after the master died
            assert results["write"].headers["connection"] == "close"
            assert all(_exited(pid, 60) for pid in workers)
        finally:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(server.pid, signal.SIGKILL)  # anything left of this test's server
    restart = ["serve", "--port", str(port), "--workers", "1"]
    with served(restart, server_env(settings)) as again:
        assert call(again.url, "GET", "/api/v1/articles/a1").status == 200  # the write is kept


def test_serve_waits_a_bounded_time_for_a_port_in_use_and_says_why(
    settings: Settings, engine: Engine
) -> None:
    """A port still held (by a server stopping, or another program): ``serve`` says so and
    waits up to ``web.bind_wait_seconds``, then gives up with exit 2 or starts once it is
    free."""
    with socket.socket() as taken:
        taken.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        env = {**os.environ, **server_env(settings), "RECENGINE_WEB__BIND_WAIT_SECONDS": "0.3"}
        done = subprocess.run(
            [sys.executable, "-c", CLI, "serve", "--port", str(port)],
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
        assert done.returncode == 2, done.stdout + done.stderr
        assert f"port {port} on 127.0.0.1 is in use: waiting up to 0.3 s" in done.stderr
        assert "still after 0.3 s" in done.stderr and "Traceback" not in done.stderr
        env["RECENGINE_WEB__BIND_WAIT_SECONDS"] = "120"
        process = subprocess.Popen(
            [sys.executable, "-c", CLI, "serve", "--port", str(port), "--workers", "1"],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            start_new_session=True,
        )
        try:
            assert process.stdout is not None
            lines = iter(process.stdout.readline, "")
            assert any("is in use: waiting up to 120 s" in line for line in lines)
            taken.close()  # released while it waits: it starts
            assert any(f"on http://127.0.0.1:{port}/" in line for line in lines)
            assert call(f"http://127.0.0.1:{port}/", "GET", "/api/v1/health").status == 200
        finally:
            process.send_signal(signal.SIGTERM)
            process.wait(60)
