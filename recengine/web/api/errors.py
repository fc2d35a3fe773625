"""The only place that knows HTTP status codes: domain errors -> JSON error responses.

Every error a client sees is ``{"error": {"code": "...", "message": "..."}}`` with a 4xx/5xx
status. Domain errors (``recengine.errors``) and the edge's own errors below carry a stable
``code``; :data:`STATUS` maps them to statuses. Anything unexpected becomes a 500 whose body says
"internal error" and nothing more: the traceback goes to the log, never to the client, and the
request's database session is rolled back.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterable
from typing import Any

from flask import Flask, Request, current_app
from flask import Response as FlaskResponse
from flask.typing import ResponseReturnValue
from pydantic import ValidationError
from spectree import Response
from sqlalchemy.exc import OperationalError
from werkzeug.exceptions import HTTPException

from recengine.errors import (
    ConfigError,
    Conflict,
    InvalidRecord,
    InvalidRequest,
    ModelMissing,
    NotFound,
    Overloaded,
    RateLimited,
    RecengineError,
    SchemaOutOfDate,
)
from recengine.jsontext import printable
from recengine.pipeline.ingest.records import describe_error
from recengine.storage.db import is_busy
from recengine.web.schemas.core import ErrorBody
from recengine.web.services import discard_session

log = logging.getLogger(__name__)

OK = 200


class InvalidJson(RecengineError):
    """The body is not valid JSON."""

    code = "invalid_json"


class AuthRequired(RecengineError):
    """No API key was sent where one is needed."""

    code = "unauthorized"


class AccessDenied(RecengineError):
    """The API key sent is wrong."""

    code = "forbidden"


class WritesDisabled(RecengineError):
    """No API key is configured and open writes are not allowed: every write is refused."""

    code = "writes_disabled"


class Unavailable(RecengineError):
    """The database cannot be reached."""

    code = "unavailable"


class TimedOut(RecengineError):
    """The request ran past its deadline (``web.timeout_seconds``); its writes were rolled back."""

    code = "timeout"


STATUS: dict[type[RecengineError], int] = {
    InvalidJson: 400,
    AuthRequired: 401,
    AccessDenied: 403,
    WritesDisabled: 403,
    NotFound: 404,
    Conflict: 409,
    InvalidRecord: 422,
    InvalidRequest: 422,
    RateLimited: 429,
    ConfigError: 500,
    ModelMissing: 503,
    SchemaOutOfDate: 503,
    Unavailable: 503,
    Overloaded: 503,
    TimedOut: 503,
}

BUSY = "busy"  # 503 code of a database locked by another writer (a Retry-After is sent)

# Werkzeug's own errors (routing, body size, media type), by status.
HTTP_CODES = {
    400: "bad_request",
    404: "not_found",
    405: "method_not_allowed",
    413: "too_large",
    415: "unsupported_media_type",
}

# Errors any request may meet, documented on every operation.
COMMON: tuple[type[RecengineError], ...] = (Unavailable,)
# Errors of requests with a JSON body.
BODY: tuple[type[RecengineError] | int, ...] = (InvalidJson, InvalidRequest, 413, 415)
# Errors of operations that need the API key.
AUTH: tuple[type[RecengineError], ...] = (AuthRequired, AccessDenied)


def status_of(error: type[RecengineError]) -> int:
    for cls in error.__mro__:
        if cls in STATUS:
            return STATUS[cls]
    return 500


def responses(
    ok: Any = None,
    errors: Iterable[type[RecengineError] | int] = (),
    *,
    ok_description: str = "",
    unavailable: Any = None,
    html: bool = False,
) -> Response:
    """The documented responses of an operation: its success model and its errors.

    Args:
        ok: the pydantic model of the 200 body (None: no JSON body).
        errors: domain error classes (or werkzeug statuses) the operation can answer with.
        ok_description: what the 200 response is.
        unavailable: model of the 503 body, when it is not the error body.
        html: a page: its own errors are pages too (no JSON body to document).
    """
    codes: dict[str, Any] = {f"HTTP_{OK}": (ok, ok_description) if ok_description else ok}
    for error in (*errors, *COMMON):
        status = error if isinstance(error, int) else status_of(error)
        codes[f"HTTP_{status}"] = None if html and error in errors else ErrorBody
    if unavailable is not None:
        codes[f"HTTP_{status_of(Unavailable)}"] = unavailable
    return Response(**codes)


def too_large_message(limit: object) -> str:
    return f"request body over the limit of {limit} bytes (web.max_body_bytes)"


def error_body(code: str, message: str) -> bytes:
    """The bytes of the JSON error body ``{"error": {"code": ..., "message": ...}}``: the one
    formatter of every error a client sees, from Flask's handlers and from the worker's event
    loop alike (compact, UTF-8 as is, a final newline, as Flask's ``jsonify`` writes it).

    Never fails: a lone surrogate in a message (a caller's text quoted) becomes ``?``.
    """
    text = json.dumps(
        {"error": {"code": code, "message": message}}, ensure_ascii=False, separators=(",", ":")
    )
    return (text + "\n").encode("utf-8", "replace")


def error_response(code: str, message: str, status: int) -> tuple[FlaskResponse, int]:
    body = current_app.response_class(error_body(code, message), mimetype="application/json")
    return body, status


def validation_hook(
    req: Request, resp: Any, req_validation_error: Any, instance: Any, *_: Any
) -> None:
    """spectree's "before" hook: a request that fails its schema becomes :class:`InvalidRequest`."""
    if isinstance(req_validation_error, ValidationError):
        body = req.get_json(silent=True) if req.is_json else None
        raise InvalidRequest(describe(req_validation_error, body)) from None


def response_hook(
    req: Request, resp: Any, resp_validation_error: Any, instance: Any, *_: Any
) -> None:
    """spectree's "after" hook: a response that breaks its own schema is a bug, so a 500."""
    if resp_validation_error is not None:
        raise RuntimeError(f"response does not match its schema: {resp_validation_error}")


def describe(exc: ValidationError, body: Any = None) -> str:
    """One line naming each bad field: ``k: Input should be less than or equal to 100``.

    In a batch (a JSON array ``body``) the item is named by its position and its id:
    ``item [1] (id 'a2'): published_at: year 9999 is outside 1900-2100``.
    """
    parts = []
    for error in exc.errors(include_url=False):
        loc = list(error["loc"])
        prefix = ""
        if loc and loc[0] in ("one", "batch"):  # the tag of a one-or-batch body
            if loc[0] == "batch" and len(loc) > 1 and isinstance(loc[1], int):
                prefix = _item(body, loc[1])
                loc = loc[2:]
            else:
                loc = loc[1:]
        parts.append(prefix + describe_error(loc, error))
    return "; ".join(parts)


def _item(body: Any, index: int) -> str:
    """``item [1] (id 'a2'): `` for a batch's item (its ``id``; an event's ``article``)."""
    item = body[index] if isinstance(body, list) and 0 <= index < len(body) else None
    for key in ("id", "article"):
        named = item.get(key) if isinstance(item, dict) else None
        if isinstance(named, str | int) and not isinstance(named, bool):
            return f"item [{index}] ({key} '{printable(str(named), 60)}'): "
    return f"item [{index}]: "


def init_app(app: Flask) -> None:
    """Register the handlers that turn every exception into the JSON error body."""
    app.register_error_handler(RecengineError, _domain_error)
    app.register_error_handler(HTTPException, _http_error)
    app.register_error_handler(OperationalError, _database_error)
    app.register_error_handler(Exception, _internal_error)


def _domain_error(exc: RecengineError) -> ResponseReturnValue:
    discard_session()
    body, status = error_response(exc.code, str(exc), status_of(type(exc)))
    if isinstance(exc, AuthRequired):
        return body, status, {"WWW-Authenticate": 'Bearer realm="recengine"'}
    return body, status


def _http_error(exc: HTTPException) -> ResponseReturnValue:
    discard_session()
    status = exc.code or 500
    if status >= 500:
        return _internal_error(exc)
    code = HTTP_CODES.get(status, f"http_{status}")
    message = exc.description or exc.name
    if status == 413:
        message = too_large_message(current_app.config.get("MAX_CONTENT_LENGTH"))
    elif status == 404:
        message = "no such endpoint"
    body, _ = error_response(code, message, status)
    headers = [(k, v) for k, v in exc.get_headers() if k.lower() != "content-type"]
    return body, status, headers


def _database_error(exc: OperationalError) -> ResponseReturnValue:
    discard_session()
    if is_busy(exc):  # locked by another writer for longer than the wait allows: retry
        log.warning("database busy: %s", exc.orig)
        body, status = error_response(
            BUSY, "the database is busy (locked by another writer); nothing was changed, retry", 503
        )
        return body, status, {"Retry-After": "1"}
    log.error("database unavailable: %s", exc.orig)
    return error_response(Unavailable.code, "the database cannot be reached", 503)


def _internal_error(exc: Exception) -> ResponseReturnValue:
    discard_session()
    log.exception("internal error", exc_info=exc)
    return error_response("internal", "internal error", 500)
