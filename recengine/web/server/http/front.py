"""Reading one HTTP/1.1 request whole, on an event loop, with deadlines (recengine's worker).

A thread that reads a request from a socket is held as long as the client takes to send it:
a dozen clients that send half a header, or an upload's first bytes, and stop, hold every
thread of a gunicorn gthread worker and nothing else is answered. Here the request line,
headers and body are read on the worker's event loop (a coroutine per connection, no thread),
within ``header_timeout`` and ``body_timeout``, and only a complete request goes to a thread.

This module only *reads*: the head up to its blank line (``CRLF CRLF``), then the body as
gunicorn's parser framed it (:mod:`recengine.web.server.http.parsing`: ``Content-Length``, or the
chunked encoding up to its last chunk and trailers). What a request is, is gunicorn's parser's word
alone, for the answers of the loop and of the threads alike.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Iterable
from dataclasses import dataclass, field
from email.utils import formatdate
from typing import Any
from urllib.parse import unquote_to_bytes

from recengine.web.api.errors import error_body, too_large_message

CONTINUE = b"HTTP/1.1 100 Continue\r\n\r\n"
REASONS = {
    400: "Bad Request",
    403: "Forbidden",
    408: "Request Timeout",
    413: "Content Too Large",
    414: "URI Too Long",
    417: "Expectation Failed",
    431: "Request Header Fields Too Large",
    500: "Internal Server Error",
    501: "Not Implemented",
    503: "Service Unavailable",
}
# Heads above this are refused (431) before gunicorn's own, larger, limits are reached: a slow
# client's unfinished head is buffered, so its size bounds the memory a connection can take.
MAX_HEAD_BYTES = 64 * 1024
HEX_DIGITS = b"0123456789abcdefABCDEF"


@dataclass(frozen=True)
class Limits:
    """What one request may take. Seconds; bytes."""

    header_timeout: float
    body_timeout: float
    keepalive: float
    max_head: int
    max_body: int


class HttpError(Exception):
    """A request answered by the front itself (the JSON error body); the connection closes."""

    def __init__(self, status: int, code: str, message: str, retry_after: int | None = None):
        super().__init__(message)
        self.status, self.code, self.message, self.retry_after = status, code, message, retry_after

    def response(self) -> bytes:
        headers = {} if self.retry_after is None else {"Retry-After": str(self.retry_after)}
        return error_response(self.status, self.code, self.message, headers)


def error_response(
    status: int, code: str, message: str, headers: dict[str, str] | None = None
) -> bytes:
    """A complete ``Connection: close`` response with the JSON error body, written by the one
    formatter Flask's handlers use too (``errors.error_body``)."""
    return json_response(status, error_body(code, message), keep_alive=False, headers=headers)


def json_response(
    status: int, body: bytes, *, keep_alive: bool, headers: dict[str, str] | None = None
) -> bytes:
    """A complete response with a JSON ``body``, answered on the loop (errors, beacons)."""
    fields = [
        ("Content-Type", "application/json"),
        ("Content-Length", str(len(body))),
        ("X-Content-Type-Options", "nosniff"),
        ("X-Recengine-Worker", str(os.getpid())),
        *(headers or {}).items(),
    ]
    reason = REASONS.get(status, "OK" if status < 400 else "Error")
    return response_bytes(f"{status} {reason}", fields, body, keep_alive=keep_alive)


def response_bytes(
    status: str, headers: Iterable[tuple[str, str]], body: bytes, *, keep_alive: bool
) -> bytes:
    """A complete HTTP/1.1 response: ``status`` (``"200 OK"``), ``Date`` and ``Connection``
    (as gunicorn writes them), then ``headers`` (``Content-Length`` among them) and ``body``."""
    lines = [
        f"HTTP/1.1 {status}",
        f"Date: {formatdate(usegmt=True)}",
        f"Connection: {'keep-alive' if keep_alive else 'close'}",
        *(f"{name}: {value}" for name, value in headers),
    ]
    return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1") + body


def path_info(target: str) -> str:
    """The ``PATH_INFO`` gunicorn makes of a request target: its path, percent-decoded, read as
    latin-1 (PEP 3333), for what is answered on the loop without gunicorn's WSGI environ."""
    path = target.split("?", 1)[0]
    return unquote_to_bytes(path).decode("latin-1") if "%" in path else path


@dataclass(frozen=True)
class Head:
    """A request's line and headers as sent, and as gunicorn's parser read them
    (:func:`recengine.web.server.http.parsing.parse_head`)."""

    raw: bytes
    method: str
    path: str  # the request target as sent
    version: str  # "HTTP/1.1"
    length: int  # of the body, when not chunked
    chunked: bool
    expect_continue: bool
    headers: dict[str, str]  # by lower-case name; a repeated one joined with ", " (RFC 9110 5.3)
    keep_alive: bool  # the client allows another request on the connection
    request: Any = field(repr=False)  # gunicorn's parsed request, which the threads serve
    feed: Any = field(repr=False)  # the bytes it reads its body from


async def read_head(reader: asyncio.StreamReader, limits: Limits, *, first: bool) -> bytes | None:
    """The next request's line and headers, up to and with the blank line; None when the
    client closed or idled past keep-alive.

    The first request of a connection has ``header_timeout`` from the connection; a later one
    waits up to ``keepalive`` for its first byte, then has ``header_timeout`` for the rest.

    Raises:
        HttpError: 408 past the deadline, 431 over ``max_head``, 400 when the client closed
            inside it.
    """
    if not first:
        try:
            start = await asyncio.wait_for(reader.read(1), limits.keepalive)
        except TimeoutError:
            return None
        if not start:
            return None
    else:
        start = b""
    try:
        async with asyncio.timeout(limits.header_timeout):
            raw = start + await reader.readuntil(b"\r\n\r\n")
    except TimeoutError:
        raise HttpError(408, "request_timeout", _late("headers", limits.header_timeout)) from None
    except asyncio.LimitOverrunError:
        raise HttpError(431, "headers_too_large", "request line and headers too large") from None
    except asyncio.IncompleteReadError as exc:
        if exc.partial.strip() or start.strip():
            raise HttpError(400, "bad_request", "the request ended inside its headers") from None
        return None
    return raw


async def read_body(
    reader: asyncio.StreamReader, writer: asyncio.StreamWriter, head: Head, limits: Limits
) -> bytes:
    """The body as sent (still chunked if it was), within ``body_timeout``.

    Raises:
        HttpError: 408 past the deadline, 413 over ``max_body``, 400 for a broken chunk.
    """
    if not head.chunked and not head.length:
        return b""
    if head.expect_continue:
        writer.write(CONTINUE)
    try:
        async with asyncio.timeout(limits.body_timeout):
            if not head.chunked:
                return await reader.readexactly(head.length)
            return await _read_chunked(reader, limits.max_body)
    except TimeoutError:
        raise HttpError(408, "request_timeout", _late("body", limits.body_timeout)) from None
    except (asyncio.IncompleteReadError, asyncio.LimitOverrunError):
        raise HttpError(400, "bad_request", "the request ended inside its body") from None


async def _read_chunked(reader: asyncio.StreamReader, limit: int) -> bytes:
    """RFC 9112 7.1: ``size[;ext] CRLF data CRLF`` ... ``0 CRLF [trailers] CRLF``."""
    parts: list[bytes] = []
    total = 0
    while True:
        line = await reader.readuntil(b"\r\n")
        size = _chunk_size(line)
        total += size
        if total > limit:
            raise HttpError(413, "too_large", too_large_message(limit))
        parts.append(line)
        if size == 0:
            break
        data = await reader.readexactly(size + 2)
        if data[-2:] != b"\r\n":
            raise HttpError(400, "bad_request", "chunk not followed by CRLF")
        parts.append(data)
    while (trailer := await reader.readuntil(b"\r\n")) != b"\r\n":
        total += len(trailer)
        if total > limit:
            raise HttpError(413, "too_large", too_large_message(limit))
        parts.append(trailer)
    parts.append(b"\r\n")
    return b"".join(parts)


def _chunk_size(line: bytes) -> int:
    """The size of a chunk's size line, read as gunicorn reads it (hex digits only, blanks
    only before an extension): the body must end where gunicorn's reader ends it."""
    field_, semicolon, _ = line[:-2].partition(b";")
    if semicolon:
        field_ = field_.rstrip(b" \t")
    if not field_ or field_.strip(HEX_DIGITS):
        raise HttpError(400, "bad_request", f"invalid chunk size {field_[:20]!r}")
    return int(field_, 16)


def _late(part: str, seconds: float) -> str:
    return f"the request's {part} did not arrive within {seconds:g} s"
