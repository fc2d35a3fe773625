"""Slow clients, overload and long requests against a real server (recengine's gunicorn worker).

Real ``recengine serve`` (and plain gunicorn) processes on loopback; every client here is
bounded (a socket timeout on every read, a fixed number of connections) and closes its
sockets. Outcomes are asserted, not timings: a stalled client must not stop health checks
from being answered, a client past its deadline gets 408, a request past the timeout gets 503.
"""

from __future__ import annotations

import json
import socket
import sqlite3
import sys
import threading
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest
from sqlalchemy import Engine, text

from recengine.config import Settings
from recengine.storage.db import make_engine
from tests.conftest import make_settings
from tests.factories import record
from tests.templates import migrate_cloned
from tests.web.conftest import AUTH, KEY
from tests.web.server.test_serve import server_env
from tests.web.serving import GUNICORN_LINE, Served, call, served

READ_TIMEOUT = 60.0  # per socket read: only a server that never answers reaches it


def connect(base: str) -> socket.socket:
    parts = urlsplit(base)
    sock = socket.create_connection((parts.hostname, parts.port), timeout=READ_TIMEOUT)
    return sock


def exchange(base: str, data: bytes) -> tuple[int, dict[str, str], Any]:
    """Send raw bytes, read the answer to EOF (error answers close): status, headers, JSON."""
    with connect(base) as sock:
        sock.sendall(data)
        return read_answer(sock)


def read_answer(sock: socket.socket) -> tuple[int, dict[str, str], Any]:
    received = b""
    while chunk := sock.recv(65536):
        received += chunk
    head, _, body = received.partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    headers = dict(line.split(": ", 1) for line in lines[1:])
    return int(lines[0].split(" ")[1]), {k.lower(): v for k, v in headers.items()}, json.loads(body)


def upload_head(length: int) -> bytes:
    return (
        f"POST /api/v1/articles HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {KEY}\r\n"
        f"Content-Type: application/json\r\nContent-Length: {length}\r\n\r\n"
    ).encode()


@pytest.fixture
def sqlite_settings(tmp_path: Path) -> Settings:
    settings = make_settings(tmp_path, f"sqlite:///{tmp_path / 'serve.db'}", api_key=KEY)
    engine = make_engine(settings.resolved_database_url)
    migrate_cloned(engine)
    engine.dispose()
    return settings


def serve_args(workers: int = 2, threads: int = 2) -> list[str]:
    return ["serve", "--port", "0", "--workers", str(workers), "--threads", str(threads)]


def test_health_answers_while_stalled_uploads_and_unfinished_headers_are_open(
    sqlite_settings: Settings,
) -> None:
    """The issue's attack: 12 stalled authenticated uploads and 16 half-sent heads, at once,
    against 2 workers x 2 threads (4 threads: gthread answered nothing until they let go)."""
    env = server_env(sqlite_settings)
    with served(serve_args(), env) as server, ExitStack() as stack:
        for _ in range(12):
            sock = stack.enter_context(connect(server.url))
            sock.sendall(upload_head(100_000) + b'{"id": "stalled", "title": "')
        for _ in range(16):
            sock = stack.enter_context(connect(server.url))
            sock.sendall(b"GET /api/v1/health HTTP/1.1\r\nHost: x\r\nX-Slow: ")
        answers = [call(server.url, "GET", "/api/v1/health") for _ in range(20)]
        assert [a.status for a in answers] == [200] * 20
        written = call(server.url, "POST", "/api/v1/articles", [record(1)], AUTH)
        assert written.status == 200, written.body


def test_clients_past_their_deadlines_get_408_and_gunicorn_errors_are_json(
    sqlite_settings: Settings,
) -> None:
    env = server_env(
        sqlite_settings,
        RECENGINE_WEB__HEADER_TIMEOUT_SECONDS="1",
        RECENGINE_WEB__BODY_TIMEOUT_SECONDS="1",
        RECENGINE_WEB__MAX_BODY_BYTES="5000",
    )
    with served(serve_args(workers=1), env) as server:
        status, headers, body = exchange(server.url, b"GET /api/v1/health HTTP/1.1\r\nHost: x")
        assert (status, body["error"]["code"]) == (408, "request_timeout")
        assert "headers" in body["error"]["message"]
        assert headers["content-type"] == "application/json"
        status, _, body = exchange(server.url, upload_head(1000) + b'{"id": "a1",')
        assert (status, body["error"]["code"]) == (408, "request_timeout")
        assert "body" in body["error"]["message"]

        cases = {
            b"GET /" + b"a" * 9000 + b" HTTP/1.1\r\nHost: x\r\n\r\n": (414, "uri_too_long"),
            b"GET / HTTP/1.1\r\nHost: x\r\nBad Header\r\n\r\n": (400, "bad_request"),
            b"GET / HTTP/9.9\r\nHost: x\r\n\r\n": (400, "bad_request"),
            b"GET / HTTP/1.1\r\n" + b"X-A: b\r\n" * 200 + b"\r\n": (431, "headers_too_large"),
            b"GET / HTTP/1.1\r\nX: " + b"y" * 70_000 + b"\r\n\r\n": (431, "headers_too_large"),
            upload_head(6000): (413, "too_large"),
            b"POST /api/v1/articles HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n"
            b"zz\r\n": (400, "bad_request"),
            # RFC 9112 6.3: a request's codings must end with chunked (else 400); one that
            # gunicorn does not know is 501
            b"POST /api/v1/articles HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: gzip\r\n\r\n": (
                400,
                "bad_request",
            ),
            b"POST /api/v1/articles HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: br\r\n\r\n": (
                501,
                "not_implemented",
            ),
            b"POST /api/v1/articles HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n"
            b"Transfer-Encoding: chunked\r\n\r\n": (400, "bad_request"),
        }
        for sent, expected in cases.items():
            status, headers, body = exchange(server.url, sent)
            assert (status, body["error"]["code"]) == expected, sent[:80]
            assert headers["content-type"] == "application/json" and body["error"]["message"]
        assert call(server.url, "GET", "/api/v1/health").status == 200


def test_chunked_and_pipelined_requests_and_encoded_ids_through_the_worker(
    sqlite_settings: Settings,
) -> None:
    env = server_env(sqlite_settings)
    with served(serve_args(workers=1), env) as server:
        body = json.dumps({"id": "x/related", "title": "标题"}).encode()
        chunked = b"".join(
            b"%x\r\n%s\r\n" % (len(body[i : i + 7]), body[i : i + 7])
            for i in range(0, len(body), 7)
        )
        head = (
            f"POST /api/v1/articles HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {KEY}\r\n"
            "Content-Type: application/json\r\nTransfer-Encoding: chunked\r\n"
            "Expect: 100-continue\r\n\r\n"
        ).encode()
        pipelined = b"GET /api/v1/articles/x%2Frelated HTTP/1.1\r\nHost: x\r\n\r\n" * 2
        last = b"GET /api/v1/articles/x%2Frelated HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"
        with connect(server.url) as sock:
            sock.sendall(head)
            assert sock.recv(25) == b"HTTP/1.1 100 Continue\r\n\r\n"
            sock.sendall(chunked + b"0\r\n\r\n" + pipelined + last)
            received = b""
            while chunk := sock.recv(65536):
                received += chunk
        assert received.count(b"HTTP/1.1 200 OK") == 4
        assert received.count('"id":"x/related","title":"标题"'.encode()) == 3


@contextmanager
def write_lock(settings: Settings, engine: Engine) -> Iterator[None]:
    """Hold the database's write lock from this process: a write through the server waits,
    reads go on (PostgreSQL's EXCLUSIVE mode lets plain reads of the table through, as
    SQLite's reserved lock does; a read that waited too would take the server's one thread
    when it came before the write)."""
    url = settings.resolved_database_url
    if url.startswith("sqlite"):
        conn = sqlite3.connect(url.removeprefix("sqlite:///"), isolation_level=None)
        conn.execute("BEGIN IMMEDIATE")
        try:
            yield
        finally:
            conn.rollback()
            conn.close()
    else:
        with engine.connect() as conn, conn.begin():
            conn.execute(text("LOCK TABLE articles IN EXCLUSIVE MODE"))
            yield


def test_a_request_over_the_timeout_is_cut_and_keeps_nothing(
    settings: Settings, engine: Engine
) -> None:
    env = server_env(settings, RECENGINE_WEB__TIMEOUT_SECONDS="2")
    with served(serve_args(workers=1), env) as server:
        assert call(server.url, "GET", "/api/v1/health").status == 200
        with write_lock(settings, engine):
            reply = call(server.url, "POST", "/api/v1/articles", [record(1)], AUTH)
            assert reply.status == 503 and reply.json()["error"]["code"] == "timeout"
        # the worker restarts: a new one answers, and the cut write is not there
        assert until_answered(server.url, "/api/v1/articles/a1").status == 404
        assert logged(server, "still running after 2 s (timeout)")


def logged(server: Served, text: str) -> bool:
    """Whether the server logs ``text`` (its log is read by another thread: wait for it)."""
    for _ in range(300):
        if text in "\n".join(server.log):
            return True
        threading.Event().wait(0.1)
    return False


def until_answered(base: str, path: str, attempts: int = 600) -> Any:
    for _ in range(attempts):
        try:
            return call(base, "GET", path)
        except OSError:
            threading.Event().wait(0.1)
    raise AssertionError(f"{path}: no answer")


def test_past_capacity_requests_are_shed_with_503_and_health_is_not(
    sqlite_settings: Settings,
) -> None:
    """One worker, one thread, held by a write waiting for a lock: a read waits its budget and
    is refused with Retry-After; a health check waits its turn and is answered."""
    engine = make_engine(sqlite_settings.resolved_database_url)
    env = server_env(sqlite_settings, RECENGINE_WEB__QUEUE_TIMEOUT_SECONDS="1")
    with served(serve_args(workers=1, threads=1), env) as server:
        assert call(server.url, "GET", "/api/v1/health").status == 200
        results: dict[str, Any] = {}
        with thread_held(server.url, sqlite_settings, engine, results):
            shed = call(server.url, "GET", "/api/v1/articles/a1")
            assert shed.status == 503 and shed.json()["error"]["code"] == "overloaded"
            assert shed.headers["retry-after"] == "1"
            health = threading.Thread(
                target=lambda: results.update(health=call(server.url, "GET", "/api/v1/health"))
            )
            health.start()
        health.join(READ_TIMEOUT)
        assert results["write"].status == 200 and results["health"].status == 200
    engine.dispose()


@contextmanager
def thread_held(
    base: str, settings: Settings, engine: Engine, results: dict[str, Any]
) -> Iterator[None]:
    """The one thread of a one-thread server held by a write waiting for the database's lock,
    while the block runs; then the write goes on (its answer: ``results["write"]``)."""
    with write_lock(settings, engine):
        writer = threading.Thread(
            target=lambda: results.update(
                write=call(base, "POST", "/api/v1/articles", [record(1)], AUTH)
            )
        )
        writer.start()
        wait_until_busy(base)
        yield
    writer.join(READ_TIMEOUT)


def wait_until_busy(base: str) -> None:
    """Until a read is refused: the one thread is then taken by the waiting write."""
    for _ in range(600):
        if call(base, "GET", "/api/v1/articles/none").status == 503:
            return
    raise AssertionError("the write never took the thread")


def test_plain_gunicorn_with_the_config_module_gets_the_worker(
    sqlite_settings: Settings,
) -> None:
    env = {
        **server_env(sqlite_settings),
        "RECENGINE_WEB__HEADER_TIMEOUT_SECONDS": "1",
        "RECENGINE_WEB__PORT": "0",
    }
    command = [
        sys.executable,
        "-m",
        "gunicorn",
        "-c",
        "python:recengine.web.server.gunicorn_conf",
        "--workers",
        "1",
        "recengine.web:create_app()",
    ]
    with served([], env, command=command, url_line=GUNICORN_LINE) as server:
        assert until_answered(server.url, "/api/v1/health").status == 200
        assert logged(server, "Using worker: recengine.web.server.worker.Worker")
        status, _, body = exchange(server.url, b"GET /api/v1/health HTTP/1.1\r\nHost: x")
        assert (status, body["error"]["code"]) == (408, "request_timeout")


POSTS = ("/api/v1/articles", "/api/v1/users/u1/events", "/api/v1/overrides", "/api/v1/feedback")
# chunked bodies gunicorn's reader refuses (each a valid one but for the named part)
BAD_CHUNKS = {
    "size written 0x2": b"0x2\r\n{}\r\n0\r\n\r\n",
    "size with a sign": b"+2\r\n{}\r\n0\r\n\r\n",
    "blank after the size": b"2 \r\n{}\r\n0\r\n\r\n",
    "blank before the size": b" 2\r\n{}\r\n0\r\n\r\n",
    "underscore in the size": b"0_2\r\n{}\r\n0\r\n\r\n",
    "no size": b"\r\n{}\r\n0\r\n\r\n",
    "extension not a token": b"2;a b\r\n{}\r\n0\r\n\r\n",
    "Content-Length in the trailers": b"2\r\n{}\r\n0\r\nContent-Length: 2\r\n\r\n",
    "trailer without a colon": b"2\r\n{}\r\n0\r\nBad Trailer\r\n\r\n",
}


def test_chunks_gunicorn_refuses_are_400_on_every_post_endpoint(
    settings: Settings, engine: Engine
) -> None:
    """A chunk size written ``0x2`` (and other chunk shapes gunicorn refuses) was read by the
    front and refused by gunicorn inside the app: a 500. Each is a 400 with the JSON error
    body, on all four POST endpoints, and stores nothing."""
    with served(serve_args(workers=1), server_env(settings)) as server:
        for path in POSTS:
            head = (
                f"POST {path} HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {KEY}\r\n"
                "Content-Type: application/json\r\nTransfer-Encoding: chunked\r\n"
                "Connection: close\r\n\r\n"
            ).encode()
            for name, body in BAD_CHUNKS.items():
                status, headers, answer = exchange(server.url, head + body)
                assert (status, answer["error"]["code"]) == (400, "bad_request"), (path, name)
                assert headers["content-type"] == "application/json" and answer["error"]["message"]
            # a well-formed chunked body goes through to the endpoint's own validation
            status, _, answer = exchange(server.url, head + b"2;n=v\r\n{}\r\n0\r\nX-T: 1\r\n\r\n")
            assert status in (400, 422) and answer["error"]["code"] != "bad_request", (path, answer)
        assert call(server.url, "GET", "/api/v1/overrides", headers=AUTH).json()["overrides"] == []
        assert call(server.url, "GET", "/api/v1/health").status == 200


def test_at_its_connection_cap_a_worker_closes_the_oldest_idle_connections_for_new_ones(
    sqlite_settings: Settings,
) -> None:
    """A flood of idle connections filled the workers' connection slots and every later one,
    health checks among them, waited in the accept queue until the idle ones timed out. At
    its cap (``web.max_connections``) a worker now closes the connection that has waited
    longest for a request head to take a new one; an upload under way is not closed."""
    env = server_env(
        sqlite_settings,
        RECENGINE_WEB__MAX_CONNECTIONS="20",
        RECENGINE_WEB__HEADER_TIMEOUT_SECONDS="600",  # the idle ones never time out here
    )
    with served(serve_args(workers=1), env) as server, ExitStack() as stack:
        upload = stack.enter_context(connect(server.url))
        head = upload_head(100_000).replace(b"\r\n\r\n", b"\r\nExpect: 100-continue\r\n\r\n")
        upload.sendall(head)
        assert upload.recv(25) == b"HTTP/1.1 100 Continue\r\n\r\n"  # its head is read
        upload.sendall(b'{"id": "stalled", "title": "')
        idle = [stack.enter_context(connect(server.url)) for _ in range(60)]
        answers = [call(server.url, "GET", "/api/v1/health") for _ in range(5)]
        assert [a.status for a in answers] == [200] * 5
        # accepted in order: the first 40 idle ones made room for the last 20 (and these
        # for the health checks), the oldest first
        assert all(sock.recv(1) == b"" for sock in idle[:40])
        for still_open in (upload, idle[-1]):
            still_open.setblocking(False)
            with pytest.raises(BlockingIOError):
                still_open.recv(1)
