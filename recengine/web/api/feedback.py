"""``POST /api/v1/feedback``: the widget's impressions and clicks (``pipeline.feedback``).

Public (readers' browsers send it, with no key), cheap and rate limited per client address.
The body is JSON, sent as ``text/plain`` by ``navigator.sendBeacon`` (a cross-origin beacon
may not send ``application/json``); :class:`BeaconBodies` lets the app read it as JSON.

On recengine's worker the endpoint never takes one of the request threads: the worker hands
a complete request for this path to :func:`beacon_answerer`'s coroutine on its event loop,
which validates it, queues its events and waits (without a thread) for their group commit,
so a burst of beacons cannot delay related lists. Any other server runs the same checks in
the Flask view below (on a request thread).
"""

from __future__ import annotations

import concurrent.futures
from collections.abc import Callable, Iterable
from typing import Any

from flask import request

from recengine.errors import NotFound, Overloaded, RateLimited
from recengine.pipeline.feedback import Event
from recengine.web.api.routing import Router, validated_body
from recengine.web.schemas.editorial import EditorialModels, FeedbackCounted, FeedbackIn
from recengine.web.services import services

FEEDBACK_PATH = "/api/v1/feedback"
MODELS = "recengine.editorial_models"

WSGIApp = Callable[[dict[str, Any], Callable[..., Any]], Iterable[bytes]]


def events_of(body: FeedbackIn) -> list[Event]:
    return [Event(e.type, e.article, e.variant, e.slot, e.item) for e in body.events()]


def count_feedback() -> FeedbackCounted:
    """Count what readers did with a related list: impressions (the list was seen, one event
    per slot shown) and clicks, under the list's variant and slot, and of the item in it when
    the event names it.

    Counted per day, list article, variant and slot, and per day, list article and item (no
    cookie, no reader id, nothing personal is stored). Answered once committed. Rate limited
    per client address (429).
    """
    counter = services().feedback
    future = counter.submit(events_of(validated_body(FeedbackIn)), request.remote_addr or "")
    return FeedbackCounted(counted=_wait(future, services().settings.web.timeout_seconds))


def _wait(future: concurrent.futures.Future[int], timeout: float) -> int:
    try:
        return future.result(timeout)
    except concurrent.futures.TimeoutError:
        raise Overloaded("the feedback could not be committed in time: try again") from None


class BeaconBodies:
    """WSGI middleware: a ``text/plain`` body posted to the feedback endpoint is read as JSON."""

    def __init__(self, app: WSGIApp) -> None:
        self.app = app

    def __call__(self, environ: dict[str, Any], start_response: Callable[..., Any]) -> Any:
        if environ.get("PATH_INFO") == FEEDBACK_PATH and environ.get("CONTENT_TYPE", "").startswith(
            "text/plain"
        ):
            environ = {**environ, "CONTENT_TYPE": "application/json"}
        return self.app(environ, start_response)


def init_app(router: Router, models: EditorialModels) -> None:
    router.app.extensions[MODELS] = models
    if router.settings.feedback.enabled:
        router.add(
            FEEDBACK_PATH,
            count_feedback,
            method="POST",
            write=None,
            tag="readers",
            ok=FeedbackCounted,
            json=models.feedback_in,
            errors=(NotFound, RateLimited, Overloaded),
            media_types=("text/plain",),  # navigator.sendBeacon's (BeaconBodies)
        )
