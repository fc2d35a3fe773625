"""Cacheable answers: ETag, Cache-Control, 304, and a worker's cache of computed answers.

``GET /api/v1/articles/<id>/related`` (and its HTML fragment, ``related.html``) and
``.../duplicates`` go through :class:`CachedReads`
(WSGI middleware in front of Flask):

* **hit**: the worker's index is caught up with SQL (the per-request check, or a change
  notification, ``index.follower``), and the answer for the same request (path, query string
  and ``Origin``, as sent) is in the cache (``recommend.answers``: emptied at every change
  the worker's index applies, by change sequence): it is sent as stored, without Flask, the
  view or SQL;
* **miss**: Flask answers; the view says what the answer was computed from (:func:`mark`),
  and a 200 is stored, with its headers, before it is sent.

Either way the answer has a strong ``ETag`` (a hash of the body: the same answer has the same
tag on every worker and node, however it was computed, so a write that cannot change a list
does not change its tag, and one that does, does) and ``Cache-Control: public, max-age=...,
stale-while-revalidate=...`` (``[cache]``; ``private`` when reads need the API key), and a
request whose ``If-None-Match`` holds that tag gets ``304 Not Modified`` with no body. Errors
are never cached (``no-store``), nor is any write. An answer is not served from the cache while
a reindex's new model is being opened (the cache follows the old one until then).
"""

from __future__ import annotations

import base64
import hashlib
import time
from collections.abc import Callable, Hashable, Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from flask import request

from recengine.errors import RecengineError
from recengine.recommend.answers import AnswerCache, drop, follow
from recengine.recommend.signals.scoring import answers_epoch
from recengine.web.api.auth import check_key
from recengine.web.api.paths import PREFIX

if TYPE_CHECKING:
    from _typeshed.wsgi import StartResponse, WSGIApplication, WSGIEnvironment

    from recengine.web.services import Services

CACHE_KEY = "recengine.cache"  # environ: what the answer cache did for this request

SLOT_KEY = "recengine.answer"  # environ: the view's Cacheable, for the middleware
OBSERVED_KEY = "recengine.observed"  # environ: timed here, the app's hook skips it
ROUTES = {
    "related": PREFIX + "<id:article_id>/related",
    "related.html": PREFIX + "<id:article_id>/related.html",
    "duplicates": PREFIX + "<id:article_id>/duplicates",
}
DROPPED_ON_304 = {"content-type", "content-length"}


@dataclass(frozen=True)
class Cacheable:
    """What an answer was computed from: the index at ``(version, seq)``."""

    version: int
    seq: int


@dataclass
class _Slot:
    answer: Cacheable | None = None


@dataclass(frozen=True)
class Stored:
    """An answer as sent: status line, headers (ETag and Cache-Control included), body."""

    status: str
    headers: tuple[tuple[str, str], ...]
    body: bytes
    etag: str


def mark(version: int, seq: int) -> None:
    """Called by a cacheable view: its answer was computed from the index at ``(version,
    seq)`` (a no-op outside :class:`CachedReads`)."""
    slot = request.environ.get(SLOT_KEY)
    if isinstance(slot, _Slot):
        slot.answer = Cacheable(version, seq)


def etag_of(body: bytes) -> str:
    """A strong entity tag: 128 bits of BLAKE2b of the body, URL-safe base64, quoted."""
    digest = hashlib.blake2b(body, digest_size=16).digest()
    return '"' + base64.urlsafe_b64encode(digest).decode().rstrip("=") + '"'


def matches(if_none_match: str | None, etag: str) -> bool:
    """RFC 9110 13.1.2: weak comparison of ``etag`` with each tag of ``If-None-Match``."""
    if not if_none_match:
        return False
    tags = [t.strip() for t in if_none_match.split(",")]
    return "*" in tags or etag in {t.removeprefix("W/") for t in tags}


@dataclass
class _Capture:
    status: str = ""
    headers: list[tuple[str, str]] = field(default_factory=list)
    exc_info: Any = None

    def start_response(
        self, status: str, headers: list[tuple[str, str]], exc_info: Any = None
    ) -> Callable[[bytes], object]:
        self.status, self.headers, self.exc_info = status, list(headers), exc_info
        return lambda _data: None


class CachedReads:
    """The middleware (see the module docstring). One per app; thread-safe.

    Args:
        app: the WSGI app behind it (Flask, with its id-path rewriting).
        services: the app's services (settings, index, metrics).
    """

    def __init__(self, app: WSGIApplication, services: Services) -> None:
        self.app = app
        self.services = services
        settings = services.settings
        self.caches: dict[str, AnswerCache[Stored]] = {
            op: AnswerCache(settings.cache.max_bytes if settings.cache.enabled else 0)
            for op in ROUTES
        }
        caches = list(self.caches.values())
        services.index.follower.listen(lambda step: follow(caches, step))
        # answers also depend on the dense part, which follows SQL beside the related index
        services.index.dense.listen(lambda step: drop(caches, step))
        # of readers' signals, as the answers stored hold them (_expire)
        self._epoch: Hashable = answers_epoch(settings, time.time())
        scope = "public" if settings.web.public_reads else "private"
        c = settings.cache
        self.cache_control = (
            f"{scope}, max-age={c.max_age_s}, stale-while-revalidate={c.stale_while_revalidate_s}"
        )

    def __call__(self, environ: WSGIEnvironment, start_response: StartResponse) -> Iterable[bytes]:
        op = operation(str(environ.get("REQUEST_METHOD")), str(environ.get("PATH_INFO", "")))
        if op is None:
            return self.app(environ, start_response)
        started = time.perf_counter()
        environ[OBSERVED_KEY] = True
        key = (environ.get("RAW_URI") or _target(environ), environ.get("HTTP_ORIGIN", ""))
        cache = self.caches[op]
        self._expire()
        position = self._position(environ)  # the indexes caught up (their steps reset first)
        generation = cache.generation  # a reset while the answer is computed drops it
        if position is not None:
            stored = cache.get(key, version=position[0], seq=position[1])
            if stored is not None:
                return self._send(op, stored, environ, start_response, "hit", started)
        slot = _Slot()
        environ[SLOT_KEY] = slot
        capture = _Capture()
        head = environ.get("REQUEST_METHOD") == "HEAD"
        # a HEAD is answered as a GET here (stored, and its ETag is the body's), sent bodiless
        result = self.app(
            {**environ, "REQUEST_METHOD": "GET"} if head else environ, capture.start_response
        )
        try:
            body = b"".join(result)
        finally:
            close = getattr(result, "close", None)
            if close is not None:
                close()
        if capture.status.startswith("200") and slot.answer is not None and position is not None:
            stored = self._stored(capture, body)
            answer = slot.answer
            cache.put(
                key,
                stored,
                size=len(body),
                version=answer.version,
                seq=answer.seq,
                generation=generation,
            )
            return self._send(op, stored, environ, start_response, "miss", started)
        self.observe(op, str(environ.get("REQUEST_METHOD")), capture.status, started, "bypass")
        start_response(capture.status, capture.headers, capture.exc_info)
        return [] if head else [body]

    def stored_now(self, op: str, key: tuple[str, str], authorization: str | None) -> Stored | None:
        """The stored answer for ``key`` when it can be sent without reading SQL (the worker's
        event loop, :mod:`recengine.web.server.http.hits`): the cache on, reads allowed without a
        key or with the one sent, the index open with no position check due
        (``LiveIndex.fresh_position``: what a thread would answer from at this moment), the
        answer stored at that position. None: the request goes to the app (:meth:`__call__`
        checks and answers it, and counts the miss: none is counted here)."""
        index = self.services.opened_index()
        if index is None or not self._may_use(authorization):
            return None
        position = index.fresh_position()
        if position is None:
            return None
        version, seq = position
        self._expire()
        return self.caches[op].get(key, version=version, seq=seq, count_miss=False)

    def _expire(self) -> None:
        """Forget the answers when the readers' signals they weighed have moved on: lists
        ranked with clicks, co-reads or exploration are kept one refresh of those signals'
        summaries (``recommend.signals.scoring.answers_epoch``; never, without them)."""
        epoch = answers_epoch(self.services.settings, time.time())
        if epoch != self._epoch:
            self._epoch = epoch
            for cache in self.caches.values():
                cache.clear()

    def _position(self, environ: WSGIEnvironment) -> tuple[int, int] | None:
        """The index's ``(version, seq)`` once caught up (None: no answer may come from the
        cache: reads need a key not sent, no model, a new model is opening, SQL is down)."""
        if not self._may_use(environ.get("HTTP_AUTHORIZATION")):
            return None
        try:
            with self.services.factory() as session:
                snap = self.services.index.current(session=session)
        except Exception:  # no model, SQL down...: the app answers the error itself
            return None
        position = self.services.index.follower.position
        if position is None or position.version != snap.version:
            return None
        return snap.version, snap.seq

    def _may_use(self, authorization: str | None) -> bool:
        """Whether an answer may come from the cache at all: the cache on, and reads allowed
        with what was sent (else the app answers, the refusal included)."""
        if not self.services.settings.cache.enabled:
            return False
        try:
            check_key(self.services.settings, authorization, write=False)
        except RecengineError:
            return False
        return True

    def _stored(self, capture: _Capture, body: bytes) -> Stored:
        etag = etag_of(body)
        headers = [(k, v) for k, v in capture.headers if k.lower() not in ("etag", "cache-control")]
        headers += [("ETag", etag), ("Cache-Control", self.cache_control)]
        return Stored(capture.status, tuple(headers), body, etag)

    def _send(
        self,
        op: str,
        stored: Stored,
        environ: WSGIEnvironment,
        start_response: StartResponse,
        result: str,
        started: float,
    ) -> Iterable[bytes]:
        environ[CACHE_KEY] = result
        method = str(environ.get("REQUEST_METHOD", "GET"))
        status, headers, body = reply(stored, method, environ.get("HTTP_IF_NONE_MATCH"))
        self.observe(op, method, status, started, result)
        start_response(status, headers)
        return [body] if body else []

    def observe(self, op: str, method: str, status: str, started: float, result: str) -> None:
        """Count an answer of ``op`` in the metrics (latency from ``started``, a
        ``time.perf_counter()``; ``result``: hit, miss or bypass)."""
        metrics = self.services.metrics
        if metrics is None:
            return
        code = int(status.split(" ", 1)[0])
        metrics.observe(ROUTES[op], method, code, time.perf_counter() - started)
        metrics.cache_requests.labels(op, result).inc()
        if result != "bypass":
            cache = self.caches[op]
            metrics.cache_entries.labels(op).set(len(cache))
            metrics.cache_bytes.labels(op).set(cache.bytes)
        metrics.publish_indexes(self.services.followers())


def reply(
    stored: Stored, method: str, if_none_match: str | None
) -> tuple[str, list[tuple[str, str]], bytes]:
    """Status, headers and body that answer a request from ``stored``: ``304 Not Modified``
    (no body, no content headers) when ``If-None-Match`` holds its tag, no body for a HEAD."""
    if matches(if_none_match, stored.etag):
        headers = [(k, v) for k, v in stored.headers if k.lower() not in DROPPED_ON_304]
        return "304 Not Modified", headers, b""
    return stored.status, list(stored.headers), b"" if method == "HEAD" else stored.body


def operation(method: str, path: str) -> str | None:
    """The cacheable operation a request is (a key of ``ROUTES``), None for any other; ``path``
    is PATH_INFO (percent-decoded)."""
    if method not in ("GET", "HEAD") or not path.startswith(PREFIX):
        return None
    for op in ROUTES:
        if path.endswith("/" + op) and len(path) > len(PREFIX) + len(op) + 1:
            return op
    return None


def _target(environ: WSGIEnvironment) -> str:
    query = environ.get("QUERY_STRING")
    path = str(environ.get("PATH_INFO", ""))
    return f"{path}?{query}" if query else path
