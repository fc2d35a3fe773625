"""A request's deadline: past it, the request's transactions cannot commit.

recengine's worker answers a request still running after ``web.timeout_seconds`` with 503
``timeout`` and restarts, but a Python thread cannot be stopped from outside: the request runs
on until the worker exits. So that the client's "it failed" stays true, every session of the
app refuses to commit after the deadline (``before_commit`` raises, the transaction rolls
back). The worker passes the deadline in the environ (``recengine.deadline``); under another
server it is ``web.timeout_seconds`` after the request began.
"""

from __future__ import annotations

import time

from flask import Flask, g, has_request_context, request
from sqlalchemy import event
from sqlalchemy.orm import Session

from recengine.web.api.errors import TimedOut
from recengine.web.services import Services

DEADLINE_KEY = "recengine.deadline"  # environ: time.monotonic() after which nothing commits


def init_app(app: Flask, services: Services) -> None:
    timeout = services.settings.web.timeout_seconds

    def start() -> None:
        given = request.environ.get(DEADLINE_KEY)
        g.deadline = given if isinstance(given, float) else time.monotonic() + timeout

    app.before_request(start)
    event.listen(services.factory, "before_commit", _refuse_late_commit)


def _refuse_late_commit(_session: Session) -> None:
    if not has_request_context():
        return  # a background job (index rebuild), not a request
    deadline = g.get("deadline")
    if deadline is not None and time.monotonic() > deadline:
        raise TimedOut("the request ran past web.timeout_seconds: nothing it wrote was kept")
