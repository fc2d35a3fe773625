"""What a request is: gunicorn's parser, run once on the worker's event loop, for every path.

Behind a proxy, two parsers that disagree about a request are a request-smuggling risk: the
answers of the loop (cache hits, beacons) used to be decided by a lenient reading of the head
while the threads' requests went through gunicorn's parser, and heads gunicorn refuses with 400
(an obs-fold line, a space before the colon, a control character in a value, a header name that
is no token, a repeated ``Content-Length``, a line with no colon) were answered 200 from the
cache (issue 46). Here gunicorn's ``RequestParser`` parses every request head on the loop, from
memory, as soon as the front (:mod:`recengine.web.server.http.front`) has read it: what it refuses
is answered with the JSON error body before any answerer or thread sees it; what it accepts is the
request every path serves (method, target, headers, framing, keep-alive), and the threads run
the app on that same parsed request (:mod:`recengine.web.server.http.dispatch`). A chunked body is
decoded by gunicorn's reader on the loop too, once read: a chunk gunicorn refuses (a size written
``0x2``) is a 400 here, not an exception inside the app (a 500).

Cost: ~38 us per head of a widget's request (gunicorn's config attributes read once, not per
request: 55 us otherwise), against ~225 us for a whole cache hit; a thread's request is no
longer parsed there, so it costs nothing extra.
"""

from __future__ import annotations

import logging
from collections import deque
from typing import Any

from gunicorn.http import RequestParser
from gunicorn.http import errors as http_errors
from gunicorn.http.body import Body, ChunkedReader, LengthReader
from gunicorn.http.unreader import IterUnreader

from recengine.web.api.errors import too_large_message
from recengine.web.api.paths import ascii_target
from recengine.web.server.http.front import Head, HttpError, Limits

log = logging.getLogger(__name__)

# gunicorn's parse errors -> (status, code); every other one is a 400 ``bad_request``.
PARSE_ERRORS: tuple[tuple[type[Exception], int, str], ...] = (
    (http_errors.LimitRequestLine, 414, "uri_too_long"),
    (http_errors.LimitRequestHeaders, 431, "headers_too_large"),
    (http_errors.UnsupportedTransferCoding, 501, "not_implemented"),
    (http_errors.ExpectationFailed, 417, "expectation_failed"),
    (http_errors.ForbiddenProxyRequest, 403, "forbidden"),
    (http_errors.ConfigurationProblem, 500, "internal"),
)
# what gunicorn raises on bytes it cannot take (NoMoreData: a body shorter than its framing)
REFUSED = (http_errors.ParseException, http_errors.NoMoreData)


class ParserConfig:
    """gunicorn's configuration as its parser reads it, each attribute looked up once (a
    ``Config`` attribute is a settings lookup and a validation on every read: a third of the
    parse). The worker's configuration does not change while it runs."""

    def __init__(self, cfg: Any) -> None:
        self._cfg = cfg

    def __getattr__(self, name: str) -> Any:
        value = getattr(self._cfg, name)
        setattr(self, name, value)
        return value


class _Feed:
    """The bytes gunicorn's parser reads (the source of its ``IterUnreader``): the head first,
    the body once the front has read it. Empty is "nothing yet", not the end."""

    def __init__(self, head: bytes) -> None:
        self.parts: deque[bytes] = deque([head])

    def __iter__(self) -> _Feed:
        return self

    def __next__(self) -> bytes:
        return self.parts.popleft() if self.parts else b""

    def add(self, data: bytes) -> None:
        if data:
            self.parts.append(data)


def refusal(exc: Exception) -> HttpError:
    """gunicorn's refusal of a request, as the front's JSON error."""
    status, code = 400, "bad_request"
    for cls, error_status, error_code in PARSE_ERRORS:
        if isinstance(exc, cls):
            status, code = error_status, error_code
            break
    return HttpError(status, code, str(exc) or type(exc).__name__)


def parse_head(cfg: ParserConfig, raw: bytes, client: Any, limits: Limits) -> Head:
    """The request whose line and headers are ``raw`` (up to and with its blank line).

    Raises:
        HttpError: what gunicorn refuses (400, 414, 431, 417, 501), and 413 for a declared
            length over ``limits.max_body``.
    """
    raw = _ascii_line(raw)
    feed = _Feed(raw)
    try:
        request = next(RequestParser(cfg, feed, client))
    except REFUSED as exc:
        log.warning("invalid request from %s: %s", client, exc)
        raise refusal(exc) from None
    chunked = isinstance(request.body.reader, ChunkedReader)
    length = 0 if chunked else request.body.reader.length
    if length > limits.max_body:
        raise HttpError(413, "too_large", too_large_message(limits.max_body))
    headers: dict[str, str] = {}
    for name, value in request.headers:
        key = name.lower()
        headers[key] = f"{headers[key]}, {value}" if key in headers else value
    major, minor = request.version
    return Head(
        raw=raw,
        method=request.method,
        path=request.uri,
        version=f"HTTP/{major}.{minor}",
        length=length,
        chunked=chunked,
        expect_continue=request.version >= (1, 1)
        and headers.get("expect", "").lower() == "100-continue",
        headers=headers,
        keep_alive=not request.should_close(),
        request=request,
        feed=feed,
    )


def _ascii_line(raw: bytes) -> bytes:
    """``raw`` with a request target typed with raw UTF-8 (``?categories=数据库``, as pasted)
    percent-encoded, as a browser would send it (gunicorn refuses raw bytes in the line).

    Raises:
        HttpError: 400 when the target's bytes are not UTF-8 (nothing to encode them as).
    """
    line, sep, rest = raw.partition(b"\r\n")
    parts = line.split(b" ")
    if len(parts) < 2 or parts[1].isascii():
        return raw
    try:
        parts[1] = ascii_target(parts[1])
    except ValueError as exc:
        raise HttpError(400, "bad_request", str(exc)) from None
    return b" ".join(parts) + sep + rest


def take_body(head: Head, body: bytes, client: Any) -> None:
    """Hand the body the front read to the parsed request; a chunked one is decoded now, by
    gunicorn's reader, so that the app reads plain bytes and a chunk gunicorn refuses is
    refused here.

    Raises:
        HttpError: 400 for a chunk or trailer gunicorn refuses, or a body that does not end
            where the front found its end.
    """
    head.feed.add(body)
    if not head.chunked:
        return
    request = head.request
    try:
        decoded = request.body.read()
        left = request.unreader.read()
    except REFUSED as exc:
        log.warning("invalid request body from %s: %s", client, exc)
        raise refusal(exc) from None
    if left:
        raise HttpError(400, "bad_request", "data after the chunked body's last chunk")
    request.body = Body(LengthReader(IterUnreader([decoded]), len(decoded)))
