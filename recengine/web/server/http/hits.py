"""Cache hits answered on the worker's event loop: no thread, no Flask, no SQL.

A widget's reads are mostly the same popular lists, and a stored answer costs microseconds to
send; on a thread it costs the hand-off to the pool and back, the WSGI environ and response,
the middleware and the freshness check: 604 us of server CPU per cached list against 225 us
here (measured, ``BENCHMARKS.md``, issue 17). Here the worker (``web.server.worker``) hands every
complete request, as gunicorn's parser read it (:mod:`recengine.web.server.http.parsing`: one parser
for every path, so a head a thread would refuse is refused before it gets here), to
:func:`hit_answerer`'s coroutine first, which sends the stored answer when all of this holds,
and otherwise leaves the request to a thread, where the app checks, computes or reads it as
always:

* ``GET`` or ``HEAD`` in HTTP/1.1, no body, an origin-form target (``/...``) of a cacheable
  route (``web.api.answers.ROUTES``: related lists, duplicate clusters);
* reads need no key, or the one sent is right (``web.api.auth.check_key``);
* the index is open and no position check is due (``LiveIndex.fresh_position``: PostgreSQL's
  notifications, SQLite's WAL watch, or ``index.sync_interval_s``): the loop never waits on
  SQL, so a check that is due is made by the next request on a thread, as before;
* the cache holds the answer at that position (same key as the app's: the target as sent and
  ``Origin``).

What is sent is what the app's cache path sends (``web.api.answers.reply``): the stored status,
headers (``ETag``, ``Cache-Control``, CORS) and body, ``304`` for a matching
``If-None-Match``, no body for ``HEAD``; counted in the same metrics (``hit``), and logged by
the worker like every answer of the loop. ``Server`` is not sent (gunicorn's
``pre_request``/``post_request`` hooks do not run for these answers either).
"""

from __future__ import annotations

import time
from typing import Any

from recengine.web.api.answers import CachedReads, operation, reply
from recengine.web.server.http.dispatch import Answerer, Outcome
from recengine.web.server.http.front import Head, path_info, response_bytes


def hit_answerer(app: Any) -> Answerer | None:
    """The worker's coroutine for cache hits of ``app`` (None: not a recengine app, or the
    answer cache is off); it answers None for every request it leaves to the app."""
    reads = getattr(app, "wsgi_app", None)
    if not isinstance(reads, CachedReads) or not reads.services.settings.cache.enabled:
        return None

    async def answer(head: Head, data: bytes, client: Any, keep_alive: bool) -> Outcome | None:
        return answer_hit(reads, head, keep_alive)

    return answer


def answer_hit(reads: CachedReads, head: Head, keep_alive: bool) -> Outcome | None:
    """The response to ``head`` from the cache of ``reads``, or None (module docstring)."""
    if head.method not in ("GET", "HEAD") or head.version != "HTTP/1.1":
        return None
    target = head.path
    if head.length or head.chunked or not target.startswith("/") or "#" in target:
        return None
    op = operation(head.method, path_info(target))
    if op is None:
        return None
    started = time.perf_counter()
    headers = head.headers
    stored = reads.stored_now(op, (target, headers.get("origin", "")), headers.get("authorization"))
    if stored is None:
        return None
    status, fields, body = reply(stored, head.method, headers.get("if-none-match"))
    keep = keep_alive and head.keep_alive
    data = response_bytes(status, fields, body, keep_alive=keep)
    reads.observe(op, head.method, status, started, "hit")
    return Outcome(data, keep, cache="hit")
