"""A real HTTP server for a test: werkzeug's threaded server in a thread, on a free port."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from typing import Any

from flask import Flask
from werkzeug.serving import make_server


class Later:
    """A WSGI app given after the server is listening (when it needs the server's own URL)."""

    def __init__(self) -> None:
        self.app: Callable[..., Iterable[bytes]] | None = None

    def __call__(self, environ: dict[str, Any], start_response: Callable[..., Any]) -> Any:
        assert self.app is not None, "the test gives the app before the first request"
        return self.app(environ, start_response)


@contextmanager
def live_server(app: Flask | Later) -> Iterator[str]:
    """Serve ``app`` on 127.0.0.1 (a free port) until the block ends; yields the base URL."""
    server = make_server("127.0.0.1", 0, app, threaded=True)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_port}"
    finally:
        server.shutdown()
        thread.join(timeout=10)
