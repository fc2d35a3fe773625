"""Reader-feedback beacons answered on the worker's event loop, without a thread.

``POST /api/v1/feedback`` (:mod:`recengine.web.api.feedback`, the Flask view, answers it
everywhere else) is the one write a page sends on every impression: recengine's worker answers
it on its loop, where the body is already read, and hands the events to the same group commit
(``services.feedback``). A chunked body, or any other request, is left to the app.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

from pydantic import ValidationError

from recengine.errors import InvalidRequest, Overloaded, RecengineError
from recengine.web.api.errors import InvalidJson, describe, status_of
from recengine.web.api.feedback import FEEDBACK_PATH, MODELS, events_of
from recengine.web.schemas.editorial import FeedbackIn
from recengine.web.server.http.dispatch import Answerer, Outcome
from recengine.web.server.http.front import Head, error_response, json_response
from recengine.web.services import EXTENSION, Services


def beacon_answerer(app: Any) -> Answerer | None:
    """The worker's coroutine for feedback requests of ``app`` (None: not a recengine app,
    or feedback is off). It answers None for a request it leaves to the app (not this path,
    or a chunked body)."""
    found = getattr(app, "extensions", {}).get(EXTENSION)
    models = getattr(app, "extensions", {}).get(MODELS)
    if not isinstance(found, Services) or models is None or not found.settings.feedback.enabled:
        return None
    svc: Services = found
    timeout = float(svc.settings.web.timeout_seconds)

    async def answer(head: Head, data: bytes, client: Any, keep_alive: bool) -> Outcome | None:
        if head.method != "POST" or head.path.split("?", 1)[0] != FEEDBACK_PATH or head.chunked:
            return None
        address = client[0] if isinstance(client, tuple) and client else str(client)
        try:
            body = _parse(models.feedback_in, data[len(head.raw) :])
            future = svc.feedback.submit(events_of(body), address)
            counted = await asyncio.wait_for(asyncio.wrap_future(future), timeout)
        except RecengineError as exc:
            return Outcome(error_response(status_of(type(exc)), exc.code, str(exc)), False)
        except TimeoutError:
            message = "the feedback could not be committed in time: try again"
            return Outcome(error_response(503, Overloaded.code, message), False)
        except Exception:  # the database: as the app answers it
            message = "the database cannot be reached"
            return Outcome(error_response(503, "unavailable", message), False)
        return Outcome(_ok({"counted": counted}, keep_alive), keep_alive)

    return answer


def _parse(model: type[FeedbackIn], raw: bytes) -> FeedbackIn:
    try:
        return model.model_validate_json(raw)
    except ValidationError as exc:
        if any(e["type"] == "json_invalid" for e in exc.errors()):
            raise InvalidJson("the body is not valid JSON") from None
        raise InvalidRequest(describe(exc)) from None


def _ok(body: dict[str, Any], keep_alive: bool) -> bytes:
    return json_response(200, json.dumps(body).encode(), keep_alive=keep_alive)
