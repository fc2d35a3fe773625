"""Ids in URL paths: any id, including ids with ``/`` and ids ending in ``/related``.

An id is the caller's own string and may hold slashes (``csdn/2024/post``), so the article
routes cannot split the path at ``/``. The rule, applied to the path *as sent* (``RAW_URI``,
before the server decoded ``%2F``):

* the path after ``/api/v1/articles/`` ends in a literal ``/related``, ``/related.html`` or
  ``/duplicates`` segment: that is the operation, and the part before it is the id;
* otherwise the whole rest is the id.

So ``GET /api/v1/articles/x/related`` is the related list of ``x`` (as always), and the
article whose id is ``x/related`` is read with its slash percent-encoded,
``GET /api/v1/articles/x%2Frelated`` (what ``quote(id, safe="")`` or JavaScript's
``encodeURIComponent`` send); its own list is ``GET /api/v1/articles/x%2Frelated/related``
(or ``x/related/related``). Ids with slashes that do not end in an operation's name keep
working unencoded.

:class:`IdPaths` applies the rule before routing (to readers' ids too): it rewrites
``PATH_INFO`` so the id is one percent-encoded segment, which :class:`IdConverter`
(``<id:article_id>``) decodes. Without
``RAW_URI`` (a server that does not pass the raw path) the rule is applied to the decoded path,
where ``%2F`` and ``/`` cannot be told apart.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any
from urllib.parse import quote, unquote, unquote_plus, unquote_to_bytes, urlsplit

from werkzeug.routing import BaseConverter, IntegerConverter, ValidationError

if TYPE_CHECKING:
    from _typeshed.wsgi import StartResponse, WSGIApplication, WSGIEnvironment

PREFIX = "/api/v1/articles/"
OPERATIONS = ("related", "related.html", "duplicates")
# Every path that holds a caller's id, with the operations that may follow it (a reader's id
# alone is the reader, ``DELETE /api/v1/users/<user>``: an id ending in /feed or /events is then
# sent with %2F, as an article's ending in /related).
ID_PATHS = {PREFIX: OPERATIONS, "/api/v1/users/": ("events", "feed")}
ID_IN_PATH = (
    "The article's id, percent-encoded (`quote(id, safe='')`, `encodeURIComponent`). A slash "
    "may also be sent as is, except in an id ending in /related or /duplicates, which must "
    "be sent as %2F to read or delete the article itself."
)


class IdConverter(BaseConverter):
    """One path segment holding a percent-encoded id (see :class:`ArticlePaths`)."""

    regex = "[^/]+"
    part_isolating = True

    def to_python(self, value: str) -> str:
        try:
            return unquote(value, errors="strict")
        except UnicodeDecodeError:
            raise ValidationError() from None

    def to_url(self, value: str) -> str:
        return quote(value, safe="")


class AsciiIntConverter(IntegerConverter):
    """werkzeug's ``<int:...>`` with ASCII digits only.

    werkzeug's pattern is ``\\d+``, which matches every Unicode digit, and ``int()`` reads them:
    ``DELETE /api/v1/overrides/%D9%A3`` (Arabic-Indic three) deleted override 3. Registered as
    ``int``, so every number in a path is ``[0-9]+``; anything else matches no route (404).
    """

    regex = r"[0-9]+"


_HIGH_BYTE = re.compile(rb"[\x80-\xff]")


def ascii_target(target: bytes) -> bytes:
    """A request target as sent, with raw UTF-8 bytes percent-encoded.

    A URL typed or pasted by hand (``?categories=数据库``) reaches the server as raw UTF-8
    bytes, which HTTP does not allow in a request line (gunicorn refuses it; other servers
    pass it on as it is). Percent-encoding those bytes is what a browser does, and changes
    nothing for anything that decodes the URL, so such a request is answered as if encoded.

    Raises:
        ValueError: bytes that are not UTF-8 (they cannot be read unambiguously), with a
            message saying how to send the URL.
    """
    if target.isascii():
        return target
    try:
        target.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ValueError(not_utf8_message(target[exc.start])) from None
    return _HIGH_BYTE.sub(lambda m: b"%%%02X" % m.group()[0], target)


def not_utf8_message(byte: int) -> str:
    return (
        f"the URL holds a byte that is not UTF-8 (0x{byte:02x}): send the URL's text as "
        "UTF-8, percent-encoded (?categories=%E6%95%B0%E6%8D%AE%E5%BA%93 for "
        "?categories=数据库)"
    )


def query_pairs(text: str, lists: Iterable[str] = ()) -> list[tuple[str, str]]:
    """A query string's ``(name, value)`` pairs, in order, blank values kept.

    A parameter named in ``lists`` takes several values, given repeated
    (``?exclude=a&exclude=b``) or separated by literal commas (``?exclude=a,b``); a comma that is
    part of a value is sent percent-encoded (``%2C``: what ``quote()`` and
    ``encodeURIComponent`` send), so ``?exclude=x%2Cy`` is the one id ``x,y``.

    Raises:
        UnicodeDecodeError: a percent-escape that does not decode to UTF-8.
    """
    split = frozenset(lists)
    pairs = []
    for piece in text.split("&"):
        if not piece:
            continue
        raw_name, _, raw_value = piece.partition("=")
        name = unquote_plus(raw_name, errors="strict")
        values = raw_value.split(",") if name in split else [raw_value]
        pairs += [(name, unquote_plus(v, errors="strict")) for v in values]
    return pairs


def split_article_path(
    rest: str, *, raw: bool, operations: tuple[str, ...] = OPERATIONS
) -> tuple[str, str] | None:
    """``rest`` (the path after PREFIX) -> ``(id, operation)``; operation "" is the article.

    Args:
        rest: as sent (``raw``: percent-escapes still in, latin-1 WSGI string) or decoded.
        operations: the names that may follow the id (those of another ID_PATHS prefix).

    Returns:
        None when ``rest`` holds no id or its escapes are not UTF-8 (left to the router).
    """
    operation = ""
    for name in operations:
        if rest.endswith("/" + name) and len(rest) > len(name) + 1:
            rest, operation = rest[: -len(name) - 1], name
            break
    if not rest:
        return None
    data = rest.encode("latin-1", "replace")
    try:
        return (_decode(data) if raw else data.decode("utf-8")), operation
    except UnicodeDecodeError:
        return None


def _decode(data: bytes) -> str:
    return unquote_to_bytes(data).decode("utf-8")


class IdPaths:
    """WSGI middleware: the id in an :data:`ID_PATHS` path becomes one percent-encoded segment
    of PATH_INFO (routed with ``<id:...>``)."""

    def __init__(self, app: WSGIApplication) -> None:
        self.app = app

    def __call__(self, environ: WSGIEnvironment, start_response: StartResponse) -> Iterable[bytes]:
        path = environ.get("PATH_INFO", "")
        for prefix, operations in ID_PATHS.items():
            if path.startswith(prefix):
                found = _split(environ, path, prefix, operations)
                if found is not None:
                    key, operation = found
                    routed = prefix + quote(key, safe="") + ("/" + operation if operation else "")
                    environ = {**environ, "PATH_INFO": routed}
                break
        return self.app(environ, start_response)


def _split(
    environ: dict[str, Any], path: str, prefix: str, operations: tuple[str, ...]
) -> tuple[str, str] | None:
    raw = environ.get("RAW_URI") or environ.get("REQUEST_URI")
    if raw:
        raw_path = urlsplit(raw).path
        at = raw_path.find(prefix)
        if at >= 0 and _same_path(raw_path[at:], path):
            rest = raw_path[at + len(prefix) :]
            return split_article_path(rest, raw=True, operations=operations)
    return split_article_path(path[len(prefix) :], raw=False, operations=operations)


def _same_path(raw_path: str, path: str) -> bool:
    """The raw path decodes to PATH_INFO (else a proxy rewrote one of them: trust PATH_INFO)."""
    try:
        return unquote_to_bytes(raw_path.encode("latin-1")) == path.encode("latin-1")
    except UnicodeEncodeError:
        return False
