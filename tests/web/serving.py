"""Run ``recengine serve`` / ``recengine demo`` as a real process (gunicorn, several workers).

Used by the multi-worker and demo tests, and by the offline demo check, which runs this module
inside a network namespace with no network: ``python -m tests.web.serving demo-check``.
"""

from __future__ import annotations

import http.client
import json
import os
import queue
import re
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

URL_LINE = re.compile(r" on (http://\S+/) ")
GUNICORN_LINE = re.compile(r"Listening at: (http://\S+)")
CLI = "from recengine.cli import main; main()"


@dataclass
class Served:
    url: str
    log: list[str] = field(default_factory=list)
    pid: int = 0  # the master's (the process group's too)


@contextmanager
def served(
    args: list[str],
    env: dict[str, str],
    timeout: float = 120,
    *,
    command: list[str] | None = None,
    url_line: re.Pattern[str] = URL_LINE,
) -> Iterator[Served]:
    """Start ``recengine ARGS`` (which must print "... on http://host:port/ ..."), stop it after.

    ``command`` (with ``url_line``, the pattern of the line naming its URL) starts something
    else instead, e.g. plain gunicorn. The process runs in its own process group; on exit it
    gets SIGTERM (gunicorn stops its workers gracefully) and, if still alive after 30 s,
    SIGKILL to the group.
    """
    process = subprocess.Popen(
        command or [sys.executable, "-c", CLI, *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env={**os.environ, **env},
        start_new_session=True,
    )
    lines: queue.Queue[str | None] = queue.Queue()
    log: list[str] = []

    def pump() -> None:
        assert process.stdout is not None
        for line in process.stdout:
            log.append(line.rstrip())
            lines.put(line)
        lines.put(None)

    threading.Thread(target=pump, daemon=True).start()
    try:
        yield Served(_wait_for_url(lines, log, timeout, url_line), log, process.pid)
    finally:
        _stop(process)


def _wait_for_url(
    lines: queue.Queue[str | None], log: list[str], timeout: float, url_line: re.Pattern[str]
) -> str:
    deadline = time.monotonic() + timeout
    while (left := deadline - time.monotonic()) > 0:
        try:
            line = lines.get(timeout=left)
        except queue.Empty:
            break
        if line is None:
            raise AssertionError("the server exited:\n" + "\n".join(log))
        if match := url_line.search(line):
            return match.group(1)
    raise AssertionError(f"no URL printed within {timeout} s:\n" + "\n".join(log))


def _stop(process: subprocess.Popen[str]) -> None:
    if process.poll() is None:
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait(timeout=10)


@dataclass(frozen=True)
class Reply:
    status: int
    worker: int
    headers: dict[str, str]
    body: bytes

    def json(self) -> Any:
        return json.loads(self.body)


def call(
    base: str, method: str, path: str, body: Any = None, headers: dict[str, str] | None = None
) -> Reply:
    """One request on a new connection (so the kernel may hand it to any worker)."""
    parts = urlsplit(base)
    connection = http.client.HTTPConnection(parts.hostname, parts.port, timeout=30)
    sent = {"Connection": "close", **(headers or {})}
    data = None
    if body is not None:
        data = json.dumps(body).encode("utf-8")
        sent["Content-Type"] = "application/json"
    try:
        connection.request(method, path, body=data, headers=sent)
        response = connection.getresponse()
        payload = response.read()
        found = {k.lower(): v for k, v in response.getheaders()}
        return Reply(response.status, int(found.get("x-recengine-worker", 0)), found, payload)
    finally:
        connection.close()


SITE_LINE = re.compile(r"the widget on another site .*: (http://\S+)/\s*$")


def demo_check(limit: int) -> None:
    """Start the demo, fetch its page, widget, schema and health, and the example site's page
    and a related list as its origin asks for it (CORS); print one JSON line."""
    args = ["demo", "--limit", str(limit), "--port", "0"]
    # the example site's line is printed after the service's: once it is there, both are
    with served(args, env={}, url_line=SITE_LINE) as printed:
        site = printed.url
        url = next(m.group(1) for line in printed.log if (m := URL_LINE.search(line)))
        server = Served(url, printed.log)
        results = {
            path: call(server.url, "GET", path).status
            for path in ("/", "/widget.js", "/openapi.json", "/api/v1/health")
        }
        health = call(server.url, "GET", "/api/v1/health").json()
        page = call(site, "GET", "/")
        article = re.search(rb'data-recengine-article="([^"]+)"', page.body)
        assert article is not None, page.body[:500]
        related = call(
            server.url,
            "GET",
            f"/api/v1/articles/{article.group(1).decode()}/related",
            headers={"Origin": site},
        )
        example = {
            "page": page.status,
            "widget_src": f'src="{server.url.rstrip("/")}/widget.js"'.encode() in page.body,
            "related": related.status,
            "items": len(related.json()["items"]),
            "cors": related.headers.get("access-control-allow-origin"),
            "site": site,
        }
    print(json.dumps({"status": results, "health": health, "example": example, "log": server.log}))


if __name__ == "__main__":
    if sys.argv[1:2] == ["demo-check"]:
        demo_check(int(sys.argv[2]))
