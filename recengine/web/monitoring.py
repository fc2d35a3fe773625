"""Wiring the metrics into the app: a latency per request, the index gauges, ``GET /metrics``.

The figures themselves are :mod:`recengine.web.metrics`. ``/metrics`` needs the API key
(``Authorization: Bearer``, as a Prometheus ``authorization`` block sends it) unless
``metrics.public`` is set; the demo's open writes open it too.
"""

from __future__ import annotations

import time

from flask import Flask, Response, g, request
from flask.typing import ResponseReturnValue

from recengine.web.api.answers import OBSERVED_KEY
from recengine.web.api.routing import Router
from recengine.web.metrics import CONTENT_TYPE, Metrics
from recengine.web.services import Services, services, session

METRICS_PATH = "/metrics"
UNMATCHED = "unmatched"


def init_app(router: Router, found: Services) -> None:
    """Time every request and serve ``/metrics`` (when ``metrics.enabled``)."""
    if not found.settings.metrics.enabled:
        return
    found.metrics = Metrics()
    app: Flask = router.app
    app.before_request(_start)
    app.after_request(_observe)
    router.add(
        METRICS_PATH,
        metrics,
        method="GET",
        # The key as writes need it (documented as the operation's security, 401/403):
        # the figures describe the whole deployment, so they are not a public read.
        write=None if found.settings.metrics.public else True,
        tag="service",
        ok=None,
        ok_description="Prometheus text format (prometheus-client).",
    )


def _start() -> None:
    g.metrics_started = time.perf_counter()


def _observe(response: Response) -> Response:
    found = services()
    started = g.get("metrics_started")
    if found.metrics is None or started is None or request.environ.get(OBSERVED_KEY):
        return response  # a cacheable read is timed by the answer cache, hit or miss
    rule = request.url_rule
    endpoint = rule.rule if rule is not None else UNMATCHED
    found.metrics.observe(
        endpoint, request.method, response.status_code, time.perf_counter() - started
    )
    found.metrics.publish_indexes(found.followers())
    return response


def metrics() -> ResponseReturnValue:
    """Every figure of this server (all workers) in Prometheus' text format."""
    found = services()
    assert found.metrics is not None
    body = found.metrics.render(session=session())
    response = Response(body, content_type=CONTENT_TYPE)
    response.cache_control.no_store = True
    return response
