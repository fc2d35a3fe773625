"""CORS: which other sites' pages may call the API from a browser (``web.cors_origins``).

* An origin **named** in ``web.cors_origins`` (``https://blog.example.com``) may make every
  call: reads, and writes with the API key (an editors' tool served from that site).
* ``"*"`` lets a page of **any** origin read (``GET``/``HEAD``: related lists, feeds, health)
  and send the widget's feedback beacon (``POST /api/v1/feedback``), nothing more: a write
  (``POST``, ``DELETE``) from an origin that only ``"*"`` allows gets no CORS headers, so the
  browser refuses its preflight (the write is never sent) or hides the answer. A site that
  serves an editors' tool from another origin names that origin next to ``"*"``.

flask-cors answers by path; the per-method rule above is applied after it
(:func:`_writes_only_for_named`), which also narrows what a preflight of such an origin is told
it may send (``GET, HEAD``; ``POST`` on the feedback path), so a browser's preflight cache never
holds a write method for it. Every answer under ``/api/`` varies by ``Origin``.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable

from flask import Flask, Request, Response, request
from flask_cors import CORS

from recengine.jsontext import printable
from recengine.web.api.feedback import FEEDBACK_PATH

log = logging.getLogger(__name__)

READS = ("GET", "HEAD")
ALLOW_HEADERS = ("Authorization", "Content-Type")
MAX_AGE = 600


class Origins:
    """``web.cors_origins``, read: the origins named, and whether ``"*"`` is among them."""

    def __init__(self, configured: Iterable[str]) -> None:
        listed = list(configured)
        self.anyone = "*" in listed
        self.named = frozenset(o.lower().rstrip("/") for o in listed if o != "*")

    def is_named(self, origin: str) -> bool:
        return origin.lower().rstrip("/") in self.named

    def allows(self, origin: str, req: Request) -> bool:
        """Whether a page of ``origin`` may make the call ``req`` (a preflight: the call it
        announces)."""
        return self.is_named(origin) or (self.anyone and bool(open_methods(req)))


def open_methods(req: Request) -> tuple[str, ...]:
    """The methods any origin may use at ``req``'s path (``"*"``); empty when ``req`` (or the
    call a preflight announces) is not one of them."""
    allowed = ("POST",) if req.path == FEEDBACK_PATH else READS
    method = req.method
    if method == "OPTIONS":
        method = req.headers.get("Access-Control-Request-Method", "").strip().upper()
    return allowed if method in allowed else ()


def init_app(app: Flask, configured: Iterable[str]) -> None:
    """CORS on ``/api/*`` for ``configured`` origins (none: same origin only)."""
    origins = Origins(configured)
    app.after_request(_refused_origins_logger(origins))
    if not origins.anyone and not origins.named:
        return
    # after_request hooks run in reverse order: this one runs after flask-cors's.
    app.after_request(_writes_only_for_named(origins))
    CORS(
        app,
        resources={r"/api/*": {"origins": list(configured)}},
        allow_headers=list(ALLOW_HEADERS),
        max_age=MAX_AGE,
    )
    app.after_request(_vary_on_origin)


def _writes_only_for_named(origins: Origins) -> Callable[[Response], Response]:
    def narrow(response: Response) -> Response:
        origin = request.headers.get("Origin")
        if not origin or "Access-Control-Allow-Origin" not in response.headers:
            return response
        if origins.is_named(origin):
            return response
        methods = open_methods(request)
        if not methods:
            for name in {n for n, _ in response.headers.items() if n.lower().startswith("access-")}:
                del response.headers[name]
        elif "Access-Control-Allow-Methods" in response.headers:
            response.headers["Access-Control-Allow-Methods"] = ", ".join(methods)
        return response

    return narrow


def _vary_on_origin(response: Response) -> Response:
    """API answers differ by Origin (CORS headers or none): shared caches must keep them apart."""
    if request.path.startswith("/api/"):
        response.vary.add("Origin")
    return response


def _refused_origins_logger(origins: Origins) -> Callable[[Response], Response]:
    """Log once per origin (at most 100) a page of another origin calling the API unallowed.

    The browser hides the answer from such a page (no CORS headers), so the widget there stays
    empty; the site owner sees why in the console, the operator sees it here.
    """
    warned = set[str]()

    def log_refused(response: Response) -> Response:
        origin = request.headers.get("Origin")
        if (
            origin
            and request.path.startswith("/api/")
            and not origins.allows(origin, request)
            and origin != request.host_url.rstrip("/")
            and origin not in warned
            and len(warned) < 100
        ):
            warned.add(origin)
            if origins.anyone:
                method = request.headers.get("Access-Control-Request-Method", request.method)
                log.warning(
                    'a page of %s made a %s call to the API: "*" in web.cors_origins covers '
                    "reads and the feedback beacon only; name the origin to allow its writes",
                    printable(origin),
                    printable(method, 10),
                )
            else:
                log.warning(
                    "a page of %s called the API, but that origin is not in web.cors_origins: "
                    "browsers hide the answers from it (an embedded widget there stays empty)",
                    printable(origin),
                )
        return response

    return log_refused
