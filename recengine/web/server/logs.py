"""Server logs as JSON lines (``log.format = "json"``), for log shippers; or gunicorn's text.

With JSON, every line on stderr is one object: ``time`` (ISO 8601, UTC), ``level``, ``logger``,
``pid``, ``message`` and, for an exception, ``traceback``; gunicorn's own lines and recengine's
(warnings about index files, internal errors with their traceback...) alike. With
``log.access``, every answered request is a line on stdout; as JSON::

    {"time": "...", "level": "info", "logger": "gunicorn.access", "pid": 1234,
     "message": "GET /api/v1/articles/a/related 200", "type": "access", "method": "GET",
     "path": "/api/v1/articles/a/related", "query": "k=5", "status": 200, "bytes": 2311,
     "duration_ms": 4.1, "remote": "10.0.0.7", "user_agent": "...", "referer": "...",
     "cache": "hit"}

``cache`` is what the answer cache did (``hit``, ``miss``, ``not_modified``; absent for answers
that are not cached). ``recengine serve`` picks the logger from the settings
(:func:`recengine.web.server.settings.options`); so does ``gunicorn -c
python:recengine.web.server.gunicorn_conf``.
"""

from __future__ import annotations

import json
import logging
import sys
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from gunicorn import glogging

from recengine.web.api.answers import CACHE_KEY
from recengine.web.server.http.dispatch import Outcome
from recengine.web.server.http.front import Head, path_info

_OURS = "_recengine"


class JsonFormatter(logging.Formatter):
    """One JSON object per record; a record's ``fields`` (a dict) are merged in."""

    def format(self, record: logging.LogRecord) -> str:
        out: dict[str, Any] = {
            "time": datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds"),
            "level": record.levelname.lower(),
            "logger": record.name,
            "pid": record.process,
            "message": record.getMessage(),
        }
        fields = getattr(record, "fields", None)
        if isinstance(fields, dict):
            out.update(fields)
        if record.exc_info:
            out["traceback"] = self.formatException(record.exc_info)
        elif record.stack_info:
            out["traceback"] = self.formatStack(record.stack_info)
        return json.dumps(out, ensure_ascii=False, default=str)


class JsonLogger(glogging.Logger):  # type: ignore[misc]
    """gunicorn's logger with :class:`JsonFormatter` on its handlers, the root logger's (so
    recengine's own records are JSON too) and JSON access lines."""

    def setup(self, cfg: Any) -> None:
        super().setup(cfg)
        formatter = JsonFormatter()
        for handler in [*self.error_log.handlers, *self.access_log.handlers]:
            handler.setFormatter(formatter)
        root = logging.getLogger()
        for handler in [h for h in root.handlers if getattr(h, _OURS, False)]:
            root.removeHandler(handler)
        handler = logging.StreamHandler(sys.stderr)
        handler.setFormatter(formatter)
        setattr(handler, _OURS, True)
        root.addHandler(handler)
        root.setLevel(self.loglevel)

    def access(self, resp: Any, req: Any, environ: dict[str, Any], request_time: Any) -> None:
        if not getattr(self, "access_log_enabled", self.cfg.accesslog is not None):
            return
        fields = access_fields(resp, environ, request_time.total_seconds())
        message = f"{fields['method']} {fields['path']} {fields['status']}"
        try:
            self.access_log.info(message, extra={"fields": fields})
        except Exception:
            self.exception("could not write an access log line")


def access_fields(resp: Any, environ: dict[str, Any], seconds: float) -> dict[str, Any]:
    """The fields of one access line (gunicorn's response and the request's environ)."""
    status = resp.status
    code = int(status.split(None, 1)[0]) if isinstance(status, str) else int(status)
    fields: dict[str, Any] = {
        "type": "access",
        "method": environ.get("REQUEST_METHOD"),
        "path": environ.get("PATH_INFO"),
        "query": environ.get("QUERY_STRING") or "",
        "status": code,
        "bytes": getattr(resp, "sent", None),
        "duration_ms": round(seconds * 1000, 3),
        "remote": environ.get("REMOTE_ADDR"),
        "user_agent": environ.get("HTTP_USER_AGENT"),
        "referer": environ.get("HTTP_REFERER"),
    }
    if environ.get(CACHE_KEY):
        fields["cache"] = environ[CACHE_KEY]
    return fields


def access_wanted(cfg: Any, log: Any) -> bool:
    """Whether ``log.access`` writes anything with gunicorn's ``cfg`` (as its own test, and
    :class:`JsonLogger`'s switch): requests answered on the loop skip building the line."""
    switch = getattr(log, "access_log_enabled", None)
    if switch is not None:
        return bool(switch)
    syslog = cfg.syslog and not cfg.disable_redirect_access_to_syslog
    configured = cfg.logconfig or cfg.logconfig_dict or getattr(cfg, "logconfig_json", None)
    return bool(cfg.accesslog or configured or syslog)


@dataclass
class _Message:
    """What gunicorn's access line reads of a request or a response (``Logger.atoms``)."""

    headers: list[tuple[str, str]] = field(default_factory=list)
    status: str = ""
    sent: int | None = None


def loop_access(head: Head, outcome: Outcome, client: Any) -> tuple[Any, Any, dict[str, Any]]:
    """``(request, response, environ)`` for ``Logger.access`` of a request the worker's loop
    answered itself (``web.server.http.hits``, ``web.api.feedback``), read back from its head and
    bytes."""
    headers = head.headers
    top, _, body = outcome.data.partition(b"\r\n\r\n")
    lines = top.decode("latin-1").split("\r\n")
    status = lines[0].split(" ", 1)[1] if " " in lines[0] else lines[0]
    answered = [(k.strip(), v.strip()) for k, _, v in (line.partition(":") for line in lines[1:])]
    query = head.path.partition("?")[2]
    environ: dict[str, Any] = {
        f"HTTP_{name.upper().replace('-', '_')}": value for name, value in headers.items()
    }
    environ.update(
        REQUEST_METHOD=head.method,
        RAW_URI=head.path,
        PATH_INFO=path_info(head.path),
        QUERY_STRING=query,
        SERVER_PROTOCOL=head.version,
        REMOTE_ADDR=client[0] if isinstance(client, tuple) and client else str(client),
    )
    if outcome.cache:
        environ[CACHE_KEY] = outcome.cache
    request = _Message(headers=[(k.upper(), v) for k, v in headers.items()])
    return request, _Message(answered, status, len(body)), environ
