"""One parsed request through the WSGI app, on a worker thread.

The front (:mod:`recengine.web.server.http.front`) has read the request's bytes and gunicorn's
parser has parsed them on the event loop (:mod:`recengine.web.server.http.parsing`); here
``gunicorn.http.wsgi`` builds the environ and the response from that parsed request, and the app
runs. The response is collected in memory and handed back to the event loop, which writes it to the
client within its deadline; a thread never touches a client's socket.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from gunicorn.http import wsgi

from recengine.web.server.http.deadline import DEADLINE_KEY
from recengine.web.server.http.front import CONTINUE, Head, error_response

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Outcome:
    """What to send back, and whether the connection may serve another request; ``cache``:
    what the answer cache did, for the access line of a request answered on the loop."""

    data: bytes
    keep_alive: bool
    cache: str | None = None


# A coroutine of the worker's event loop that answers some requests itself, without a thread
# (``web.api.feedback``'s beacons, ``web.server.http.hits``'s cache hits): the outcome, or None to
# leave the request to the app. Arguments: the head, the request's bytes, the client, keep-alive
# allowed.
Answerer = Callable[[Head, bytes, Any, bool], Awaitable["Outcome | None"]]


class _Sink:
    """The socket gunicorn's response writes to: it keeps the bytes for the event loop."""

    def __init__(self) -> None:
        self.parts: list[bytes] = []

    def sendall(self, data: bytes) -> None:
        self.parts.append(bytes(data))

    def send(self, data: bytes) -> int:
        if data != CONTINUE:  # the front has answered Expect: 100-continue already
            self.parts.append(bytes(data))
        return len(data)


def serve(
    worker: Any,
    app: Callable[..., Any],
    request: Any,
    client: Any,
    server: Any,
    *,
    deadline: float,
    keep_alive: bool,
) -> Outcome:
    """Run ``request`` (gunicorn's, parsed on the loop, its body complete) through ``app``.

    Args:
        worker: the gunicorn worker (its config, logger and request hooks).
        deadline: ``time.monotonic()`` past which the app commits nothing (``DEADLINE_KEY``).
        keep_alive: False: the response says ``Connection: close`` (worker stopping, or
            keep-alive off).
    """
    cfg = worker.cfg
    sink = _Sink()
    response = None
    environ: dict[str, Any] = {}
    started = datetime.now()
    try:
        cfg.pre_request(worker, request)
        response, environ = wsgi.create(request, sink, client, server, cfg)
        environ["wsgi.multithread"] = True
        environ[DEADLINE_KEY] = deadline
        if not keep_alive:
            response.force_close()
        _run_app(app, environ, response)
        worker.log.access(response, request, environ, datetime.now() - started)
    except Exception:
        log.exception("error handling %s %s", request.method, request.uri)
        if response is not None and response.headers_sent:
            return Outcome(b"".join(sink.parts), False)  # cut short: the client sees it end
        return Outcome(error_response(500, "internal", "internal error"), False)
    finally:
        try:
            cfg.post_request(worker, request, environ, response)
        except Exception:
            log.exception("error in the post_request hook")
    return Outcome(b"".join(sink.parts), not response.should_close())


def _run_app(app: Callable[..., Any], environ: dict[str, Any], response: Any) -> None:
    body = app(environ, response.start_response)
    try:
        for chunk in body:  # a file wrapper too: written as its chunks, never with sendfile
            response.write(chunk)
        response.close()
    finally:
        if hasattr(body, "close"):
            body.close()
