"""Cache hits answered on the worker's event loop (``web.server.http.hits``), against a real server.

One worker with one thread, that thread held by a write waiting for the database's lock: a
request the loop answers is still answered, one that needs a thread is shed (503) after
its budget (1 s here: the loop's own answers get the same budget, counted from when the request
arrived, and on a loaded machine the loop lags now and then: ``web.server.http.admission``). So what
is asserted is where each request was answered, not how fast. Readers' signals are off in the
servers whose hits are asserted (:data:`NO_SIGNALS`): with them, stored answers expire at every
``signals.refresh_s`` boundary (``recommend.signals.scoring.answers_epoch``), and a minute
turning between storing an answer and asking for it again made the hit a miss (seen twice). The
position check is set far beyond the test (``index.sync_interval_s``), so no check falls due and
the loop may answer.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import threading
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import Engine

from recengine.config import Settings
from recengine.pipeline.featurize import Featurizer
from recengine.pipeline.ingest.ingester import Ingester
from recengine.pipeline.reindex.full import reindex
from recengine.storage.db import make_session_factory
from recengine.web.api.errors import error_body
from tests.factories import javaguide_records
from tests.web.server.test_serve import server_env
from tests.web.server.test_slow_clients import connect, read_answer, serve_args, thread_held
from tests.web.serving import Reply, call, served

VARYING = {"date", "server"}  # what a thread's answer and the loop's may differ in

# the shipped signal weights off: stored answers then never expire with the clock
NO_SIGNALS = {"RECENGINE_RELATED__ENGAGEMENT_WEIGHT": "0", "RECENGINE_RELATED__COREAD_WEIGHT": "0"}


def raw_get(base: str, path: str, version: str = "HTTP/1.1") -> int:
    """The status of a GET sent as raw bytes (``version`` in the request line)."""
    with connect(base) as sock:
        sock.sendall(f"GET {path} {version}\r\nHost: x\r\nConnection: close\r\n\r\n".encode())
        received = b""
        while chunk := sock.recv(65536):
            received += chunk
    return int(received.split(b" ", 2)[1])


def indexed_path(engine: Engine, featurizer: Featurizer, data_dir: Path) -> str:
    """20 real articles stored and indexed; the path of one's related list (k = 5)."""
    factory = make_session_factory(engine)
    records = javaguide_records(data_dir, 20)
    Ingester(factory, featurizer).ingest_records(records)
    reindex(factory=factory, featurizer=featurizer)
    return f"/api/v1/articles/{records[3]['id']}/related?k=5"


def same_answer(a: Reply, b: Reply) -> bool:
    drop = {k: v for k, v in a.headers.items() if k not in VARYING}
    return (
        a.status == b.status
        and a.body == b.body
        and drop == {k: v for k, v in b.headers.items() if k not in VARYING}
    )


def test_cache_hits_are_answered_on_the_loop_while_every_thread_is_busy(
    settings: Settings, engine: Engine, featurizer: Featurizer, data_dir: Path
) -> None:
    path = indexed_path(engine, featurizer, data_dir)
    env = server_env(
        settings,
        RECENGINE_INDEX__SYNC_INTERVAL_S="3600",
        RECENGINE_INDEX__LISTEN="false",
        RECENGINE_WEB__QUEUE_TIMEOUT_SECONDS="1",
        **NO_SIGNALS,
        RECENGINE_LOG__ACCESS="true",
        RECENGINE_LOG__FORMAT="json",
    )
    with served(serve_args(workers=1, threads=1), env) as server:
        computed = call(server.url, "GET", path)  # on the thread: computed, stored
        assert computed.status == 200 and computed.json()["items"]
        hit = call(server.url, "GET", path)
        assert same_answer(computed, hit), (computed.headers, hit.headers)
        etag = hit.headers["etag"]
        head = call(server.url, "HEAD", path)
        assert head.status == 200 and head.body == b""
        assert head.headers["content-length"] == str(len(hit.body))

        results: dict[str, Any] = {}
        with thread_held(server.url, settings, engine, results):
            busy = call(server.url, "GET", path)
            assert same_answer(hit, busy)  # the loop answered: no thread was free
            revalidated = call(server.url, "GET", path, headers={"If-None-Match": etag})
            assert revalidated.status == 304 and revalidated.body == b""
            assert revalidated.headers["etag"] == etag
            assert "content-type" not in revalidated.headers
            # not stored, or not for the loop: shed, as every request needing a thread
            assert call(server.url, "GET", path.replace("k=5", "k=4")).status == 503
            assert raw_get(server.url, path, "HTTP/1.0") == 503
            assert call(server.url, "POST", path, {}).status == 503
        assert results["write"].status == 200
        # the write moved the index (writes always check): the list is computed again
        assert call(server.url, "GET", path).status == 200
        lines = [json.loads(line) for line in server.log if line.startswith('{"time"')]
        loop_lines = [
            line
            for line in lines
            if line.get("type") == "access" and line.get("cache") == "hit" and line["status"] == 304
        ]
        assert loop_lines and loop_lines[0]["path"] == path.split("?")[0]
        assert loop_lines[0]["query"] == "k=5"


def test_without_a_settled_position_every_hit_goes_through_a_thread(
    settings: Settings, engine: Engine, featurizer: Featurizer, data_dir: Path
) -> None:
    """With the per-request check (the default without change notifications), a hit is read
    on a thread: the loop never waits on SQL."""
    path = indexed_path(engine, featurizer, data_dir)
    env = server_env(
        settings,
        RECENGINE_INDEX__LISTEN="false",
        RECENGINE_WEB__QUEUE_TIMEOUT_SECONDS="1",
    )
    with served(serve_args(workers=1, threads=1), env) as server:
        assert call(server.url, "GET", path).status == 200
        assert call(server.url, "GET", path).status == 200  # a hit, read on the thread
        with thread_held(server.url, settings, engine, {}):
            assert call(server.url, "GET", path).status == 503


@pytest.mark.parametrize("database_url", ["sqlite"], indirect=True)
def test_on_sqlite_the_loop_answers_hits_and_a_commit_elsewhere_is_in_the_next_answer(
    settings: Settings, engine: Engine, featurizer: Featurizer, data_dir: Path
) -> None:
    """The defaults on SQLite (no sync interval): the worker watches the WAL-index header
    (``storage.walwatch``), so stored answers are sent by the loop, and a commit by another
    process is in the very next answer."""
    path = indexed_path(engine, featurizer, data_dir)
    env = server_env(settings, RECENGINE_WEB__QUEUE_TIMEOUT_SECONDS="1", **NO_SIGNALS)
    with served(serve_args(workers=1, threads=1), env) as server:
        first = call(server.url, "GET", path)
        assert first.status == 200 and first.json()["items"]
        results: dict[str, Any] = {}
        with thread_held(server.url, settings, engine, results):
            assert same_answer(first, call(server.url, "GET", path))  # no thread was free
        assert results["write"].status == 200
        listed = call(server.url, "GET", path)
        gone = listed.json()["items"][0]["id"]
        assert same_answer(listed, call(server.url, "GET", path))  # stored again
        Ingester(make_session_factory(engine), featurizer).delete([gone])  # this process
        after = call(server.url, "GET", path)
        assert after.status == 200 and gone not in [item["id"] for item in after.json()["items"]]


# Heads gunicorn's parser refuses, and two it takes: each sent to a stored list (which the
# loop would answer) and to one not stored (which a thread computes); ``{t}`` is the target.
SHAPES: dict[str, bytes] = {
    "duplicate Content-Length": b"GET {t} HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n"
    b"Content-Length: 0\r\n\r\n",
    "Content-Length with Transfer-Encoding": b"GET {t} HTTP/1.1\r\nHost: x\r\n"
    b"Content-Length: 0\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n",
    "obs-fold continuation line": b"GET {t} HTTP/1.1\r\nHost: x\r\nX-A: b\r\n c\r\n\r\n",
    "space before the colon": b"GET {t} HTTP/1.1\r\nHost : x\r\n\r\n",
    "bare LF in a value": b"GET {t} HTTP/1.1\r\nHost: x\r\nX-A: b\nX-B: c\r\n\r\n",
    "NUL in a value": b"GET {t} HTTP/1.1\r\nHost: x\r\nX-A: b\x00c\r\n\r\n",
    "control character in a value": b"GET {t} HTTP/1.1\r\nHost: x\r\nX-A: b\x01c\r\n\r\n",
    "DEL in a value": b"GET {t} HTTP/1.1\r\nHost: x\r\nX-A: b\x7fc\r\n\r\n",
    "header name not a token": b"GET {t} HTTP/1.1\r\nHost: x\r\nX(A): b\r\n\r\n",
    "non-ASCII header name": b"GET {t} HTTP/1.1\r\nHost: x\r\nX-\xe4: b\r\n\r\n",
    "underscore in a header name": b"GET {t} HTTP/1.1\r\nHost: x\r\nX_A: b\r\n\r\n",
    "line without a colon": b"GET {t} HTTP/1.1\r\nHost: x\r\nBad Header\r\n\r\n",
    "empty header name": b"GET {t} HTTP/1.1\r\nHost: x\r\n: b\r\n\r\n",
    "duplicate Host": b"GET {t} HTTP/1.1\r\nHost: x\r\nHost: y\r\n\r\n",
    "unknown expectation": b"GET {t} HTTP/1.1\r\nHost: x\r\nExpect: fly\r\n\r\n",
    "header over 8190 bytes": b"GET {t} HTTP/1.1\r\nHost: x\r\nX-A: " + b"b" * 9000 + b"\r\n\r\n",
    "over 100 headers": b"GET {t} HTTP/1.1\r\nHost: x\r\n" + b"X-A: b\r\n" * 120 + b"\r\n",
    "two empty lines first": b"\r\n\r\nGET {t} HTTP/1.1\r\nHost: x\r\n\r\n",
    "extra word in the request line": b"GET {t} HTTP/1.1 x\r\nHost: x\r\n\r\n",
    "HTTP/1.0 with Transfer-Encoding": b"GET {t} HTTP/1.0\r\nHost: x\r\n"
    b"Transfer-Encoding: chunked\r\n\r\n0\r\n\r\n",
    "absolute-form target": b"GET http://x{t} HTTP/1.1\r\nHost: x\r\n\r\n",
    "Content-Length 00": b"GET {t} HTTP/1.1\r\nHost: x\r\nContent-Length: 00\r\n\r\n",
}
# gunicorn drops a header with "_" in its name (header_map = "drop": it cannot be told from
# its "-" twin in the WSGI environ) and serves the request
TAKEN = {"absolute-form target", "Content-Length 00", "underscore in a header name"}


def raw_reply(base: str, data: bytes) -> tuple[int, bytes]:
    """The status and body of the answer to raw bytes sent on a new connection
    (``Connection: close`` added before their first ``Host``)."""
    with connect(base) as sock:
        sock.sendall(data.replace(b"\r\nHost", b"\r\nConnection: close\r\nHost", 1))
        sock.shutdown(socket.SHUT_WR)
        received = b""
        while chunk := sock.recv(65536):
            received += chunk
    return int(received.split(b" ", 2)[1]), received.partition(b"\r\n\r\n")[2]


def raw_status(base: str, data: bytes) -> int:
    return raw_reply(base, data)[0]


def test_the_loop_and_the_threads_refuse_the_same_malformed_heads(
    settings: Settings, engine: Engine, featurizer: Featurizer, data_dir: Path
) -> None:
    """One parser decides what a request is: a head a thread refuses is refused when its
    answer is stored too (behind a proxy, two parsers that disagree are a smuggling risk)."""
    path = indexed_path(engine, featurizer, data_dir)
    env = server_env(
        settings, RECENGINE_INDEX__SYNC_INTERVAL_S="3600", RECENGINE_INDEX__LISTEN="false"
    )
    with served(serve_args(workers=1, threads=2), env) as server:
        assert call(server.url, "GET", path).status == 200  # stored
        found: dict[str, tuple[int, int]] = {}
        for n, (name, shape) in enumerate(SHAPES.items()):
            stored = raw_status(server.url, shape.replace(b"{t}", path.encode()))
            fresh = f"{path}&exclude=shape-{n}".encode()  # not stored: computed on a thread
            found[name] = (stored, raw_status(server.url, shape.replace(b"{t}", fresh)))
        differ = {name: statuses for name, statuses in found.items() if len(set(statuses)) > 1}
        assert not differ, differ
        assert {name for name, (status, _) in found.items() if status == 200} == TAKEN, found
        refused = [status for name, (status, _) in found.items() if name not in TAKEN]
        assert all(400 <= status < 500 for status in refused), found
        # the loop writes its error bodies with the formatter Flask's handlers use
        for name, shape in SHAPES.items():
            if name not in TAKEN:
                _, body = raw_reply(server.url, shape.replace(b"{t}", path.encode()))
                error = json.loads(body)["error"]
                assert body == error_body(error["code"], error["message"]), name
        # the loop still answers stored lists
        assert call(server.url, "GET", path).status == 200


def test_requests_that_waited_past_the_budget_before_the_loop_read_them_are_shed(
    settings: Settings, engine: Engine, featurizer: Featurizer, data_dir: Path
) -> None:
    """The loop's own work gets the threads' admission rule: a cache hit (or any request)
    that waited past ``web.queue_timeout_seconds`` before the loop read it, here while the
    worker was stopped, is answered 503 with Retry-After, not served late; health is not."""
    path = indexed_path(engine, featurizer, data_dir)
    env = server_env(
        settings,
        RECENGINE_INDEX__SYNC_INTERVAL_S="3600",
        RECENGINE_INDEX__LISTEN="false",
        RECENGINE_WEB__QUEUE_TIMEOUT_SECONDS="0.2",
    )
    with served(serve_args(workers=1, threads=1), env) as server, ExitStack() as stack:
        stored = call(server.url, "GET", path)
        assert stored.status == 200
        targets = (path, path.replace("k=5", "k=4"), "/api/v1/health")  # hit, miss, health
        os.kill(stored.worker, signal.SIGSTOP)
        try:
            sockets = []
            for target in targets:  # in the kernel's accept queue, the request sent
                sock = stack.enter_context(connect(server.url))
                request = f"GET {target} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"
                sock.sendall(request.encode())
                sockets.append(sock)
            threading.Event().wait(0.5)  # the requests wait past their 0.2 s budget
        finally:
            os.kill(stored.worker, signal.SIGCONT)
        answers = [read_answer(sock) for sock in sockets]
        for status, headers, body in answers[:2]:
            assert (status, body["error"]["code"]) == (503, "overloaded")
            assert headers["retry-after"] == "1"
        assert answers[2][0] == 200  # health checks are exempt
        # once requests are read as they come, the stored list is sent again (on a loaded
        # machine a first few may still wait over the queue's target: web.server.http.admission)
        again = [call(server.url, "GET", path) for _ in range(3)]
        assert any(same_answer(stored, reply) for reply in again), again
