"""API keys: ``Authorization: Bearer <key>`` on writes (and on reads when they are not public).

The key is ``api_key`` in settings (``RECENGINE_API_KEY``). It is compared in constant time
(``hmac.compare_digest``), so response timing does not reveal how much of a guess was right.
With no key configured, writes are refused unless ``allow_open_writes`` is set (the demo does).

:func:`guarded` wraps a view: the key is checked first, then the JSON body is parsed, and only
then does schema validation run, so an unauthenticated client learns nothing about the schema
and a malformed body gets ``invalid_json`` rather than a misleading field error.
"""

from __future__ import annotations

import hmac
from collections.abc import Callable
from functools import wraps
from typing import Any, TypeVar

from flask import Request, request
from flask.json.provider import DefaultJSONProvider
from werkzeug.datastructures import MultiDict
from werkzeug.exceptions import BadRequest, RequestEntityTooLarge
from werkzeug.utils import cached_property

from recengine import jsontext
from recengine.config import Settings
from recengine.web.api.errors import AccessDenied, AuthRequired, InvalidJson, WritesDisabled
from recengine.web.api.paths import not_utf8_message, query_pairs
from recengine.web.schemas.core import LIST_PARAMETERS
from recengine.web.services import services

F = TypeVar("F", bound=Callable[..., Any])
BODY_METHODS = frozenset({"POST", "PUT", "PATCH"})


def check_key(settings: Settings, authorization: str | None, *, write: bool) -> None:
    """Decide whether a request may go on.

    Raises:
        WritesDisabled: no key is configured and the request needs one.
        AuthRequired: the request needs the key and sent none.
        AccessDenied: the key sent is not the configured key (with open writes and no key
            configured, any key sent is wrong).
    """
    if not write and settings.web.public_reads:
        return
    key = settings.api_key
    if not key:
        if write and settings.allow_open_writes:
            if _bearer(authorization) is not None:
                # Any key is wrong where none is configured: the client believes it talks to a
                # protected server (a deployment that lost its RECENGINE_API_KEY?). Say so.
                raise AccessDenied(
                    "an API key was sent but this server has none (open writes): send no "
                    "Authorization header, or configure RECENGINE_API_KEY on the server"
                )
            return
        what = "writes" if write else "reads"
        raise WritesDisabled(
            f"{what} need an API key and none is configured: set RECENGINE_API_KEY"
        )
    sent = _bearer(authorization)
    if sent is None:
        raise AuthRequired("this endpoint needs the header Authorization: Bearer <API key>")
    if not hmac.compare_digest(sent.encode("utf-8"), key.encode("utf-8")):
        raise AccessDenied("the API key is not valid")


def security(settings: Settings, *, write: bool) -> dict[str, list[str]]:
    """The OpenAPI security requirement of an operation under these settings ({} = none)."""
    if write:
        needed = bool(settings.api_key) or not settings.allow_open_writes
    else:
        needed = not settings.web.public_reads
    return {"bearer": []} if needed else {}


def _bearer(authorization: str | None) -> str | None:
    if not authorization:
        return None
    scheme, _, token = authorization.strip().partition(" ")
    token = token.strip()
    if scheme.lower() != "bearer" or not token:
        return None
    return token


def guarded(*, write: bool | None) -> Callable[[F], F]:
    """Check the API key (unless ``write`` is None: a public operation), then parse a JSON
    body, before the wrapped (validating) view runs."""

    def decorate(view: F) -> F:
        @wraps(view)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            if write is not None:
                check_key(services().settings, request.headers.get("Authorization"), write=write)
            if request.method in BODY_METHODS:
                _parse_json()
            return view(*args, **kwargs)

        return wrapper  # type: ignore[return-value]

    return decorate


def _parse_json() -> None:
    """Parse (and cache) the body: 413 when too large, 415 when not JSON, else invalid_json."""
    limit = request.max_content_length
    # A chunked body has no length to check up front, and werkzeug's limited stream returns
    # the first `limit` bytes without complaint: a body that fills the limit is taken as over
    # it, rather than parsed truncated.
    chunked = request.content_length is None and limit is not None
    if chunked and len(request.get_data(cache=True)) >= limit:  # type: ignore[operator]
        raise RequestEntityTooLarge()
    request.get_json()


class ApiJSONProvider(DefaultJSONProvider):
    """Flask's JSON, writing UTF-8 as is, and parsing bodies with bounds.

    Bodies are parsed by :func:`recengine.jsontext.loads`, as JSON Lines files are: nesting,
    number sizes and text that is not Unicode (half of a UTF-16 surrogate pair, ``"\\ud800"``,
    which neither database can store) are refused as invalid JSON. A body's bytes must be
    UTF-8 (RFC 8259 8.1; a leading byte order mark is skipped): Python's ``json`` would read
    bytes with ``surrogatepass``, so CESU-8 (a surrogate written as the three bytes
    ``ED A0 80``) became a lone surrogate that no later step could encode.
    """

    ensure_ascii = False
    sort_keys = False

    def loads(self, s: str | bytes, **kwargs: Any) -> Any:
        return jsontext.loads(utf8_text(s) if isinstance(s, bytes | bytearray) else s)


BOM = b"\xef\xbb\xbf"


def utf8_text(data: bytes | bytearray) -> str:
    """A body's bytes as text, strictly UTF-8 (a leading byte order mark skipped).

    Raises:
        ValueError: a byte sequence that is not UTF-8, named by its offset.
    """
    start = len(BOM) if data.startswith(BOM) else 0
    try:
        return bytes(data[start:]).decode("utf-8")
    except UnicodeDecodeError as exc:
        at = start + exc.start
        raise ValueError(f"it is not UTF-8 (byte 0x{data[at]:02x} at offset {at})") from None


class ApiRequest(Request):
    """Flask's request, with a JSON error that says where the body went wrong, and a query
    string read as UTF-8 or refused.

    werkzeug reads the query's raw bytes as UTF-8 strictly (raw bytes that are not UTF-8, which
    a server such as werkzeug's own passes on, raised ``UnicodeDecodeError``: a 500) and keeps
    a percent-escape that does not decode to UTF-8 as its literal text (``?tags=%FF`` was the
    tag ``"%FF"``). Both are refused here with 400 and how to send the URL. The values of a list
    parameter are also split at literal commas (``?exclude=a,b``: :func:`query_pairs`).
    """

    @cached_property
    def args(self) -> MultiDict[str, str]:
        try:
            pairs = query_pairs(self.query_string.decode("utf-8"), LIST_PARAMETERS)
        except UnicodeDecodeError as exc:
            raise BadRequest(not_utf8_message(exc.object[exc.start])) from None
        return self.parameter_storage_class(pairs)

    def on_json_loading_failed(self, e: ValueError | None) -> Any:
        if e is None:  # not a JSON content type: Flask's 415
            return super().on_json_loading_failed(e)
        raise InvalidJson(f"the body is not valid JSON: {e}")
