"""Health of the service, for people and load balancers: ``/api/v1/health`` and its ``/live``
and ``/ready`` parts.

The report describes the service, not the worker that answers it: it is read from the database
(reachable, schema current, change sequence, active IDF model), never from the answering
worker's memory. A worker's related-articles index is a cache that the worker brings up to date
before each query it answers (``related.sync_interval_s``), so which worker a load balancer
reaches, and whether that worker has served a query since the last reindex, does not change
the answer: every worker gives the same report for the same state.

* ``GET /api/v1/health/live``: liveness. 200 whenever the process answers HTTP; it looks at
  nothing else, so a database outage never gets healthy processes restarted.
* ``GET /api/v1/health/ready``: readiness. 200 when the service can take traffic (the database
  answers and has this code's schema); 503 with the same report otherwise: route traffic
  elsewhere, do not restart.
* ``GET /api/v1/health``: the same report and status codes as ``ready``.

``status``: ``ok``; ``degraded`` (200: serving, with something missing, listed in ``problems``:
no IDF model yet, so related lists and feeds answer 503 until ``recengine reindex``);
``unavailable`` (503: the database is down, or its schema is not this code's).
"""

from __future__ import annotations

from functools import partial

from flask import Response, request
from sqlalchemy.exc import SQLAlchemyError

from recengine.storage.migrate import schema_revisions
from recengine.storage.state import read_state
from recengine.web.api.errors import Unavailable, status_of
from recengine.web.api.routing import Router
from recengine.web.schemas.core import DatabaseHealth, HealthOut, LiveOut
from recengine.web.services import discard_session, services, session

HEALTH_PATH = "/api/v1/health"  # and its sub-paths: the worker lets them skip its queue
HEALTH_PATHS = frozenset({HEALTH_PATH, f"{HEALTH_PATH}/ready", f"{HEALTH_PATH}/live"})
NO_MODEL = "no IDF model yet: related lists and feeds answer 503 until `recengine reindex`"


def live() -> LiveOut:
    """Liveness: 200 whenever this process answers HTTP. Looks at nothing else."""
    return LiveOut(status="ok", version=services().version)


def ready() -> HealthOut | tuple[HealthOut, int]:
    """Readiness: 200 (``ok`` or ``degraded``) when the service can take traffic, else 503.

    The same report from every worker for the same database state.
    """
    return report()


def health() -> HealthOut | tuple[HealthOut, int]:
    """The service's health: the database, its schema, the change sequence, the active model.

    The same report and status as ``/api/v1/health/ready``.
    """
    return report()


def report() -> HealthOut | tuple[HealthOut, int]:
    version = services().version
    try:
        current, head = schema_revisions(session=session())
        state = read_state(session=session()) if current == head else None
    except SQLAlchemyError as exc:
        discard_session()
        database = DatabaseHealth(reachable=False, error=type(exc).__name__)
        return _unavailable(version, database, "the database cannot be reached")
    if state is None:
        database = DatabaseHealth(reachable=True, schema_current=False)
        problem = f"the schema is at {current or 'nothing'}, this code needs {head}: run "
        return _unavailable(version, database, problem + "`recengine db upgrade`")
    problems = [] if state.active_model_version is not None else [NO_MODEL]
    return HealthOut(
        status="degraded" if problems else "ok",
        version=version,
        database=DatabaseHealth(
            reachable=True,
            schema_current=True,
            seq=state.seq,
            model_version=state.active_model_version,
        ),
        problems=problems,
    )


def _unavailable(version: str, database: DatabaseHealth, problem: str) -> tuple[HealthOut, int]:
    body = HealthOut(status="unavailable", version=version, database=database, problems=[problem])
    return body, status_of(Unavailable)


def _revalidated(response: Response) -> Response:
    """Health answers (the report, readiness, liveness) carry an ETag and must be revalidated
    every time (``no-cache``): a poller sending ``If-None-Match`` gets 304 while nothing it
    reports has changed."""
    if request.path in HEALTH_PATHS and response.status_code == 200:
        response.headers["Cache-Control"] = "no-cache"
        response.add_etag()
        response.make_conditional(request)
    return response


def init_app(router: Router) -> None:
    router.app.after_request(_revalidated)
    add = partial(router.add, method="GET", write=None, tag="service")
    add(HEALTH_PATH, health, ok=HealthOut, unavailable=HealthOut)
    add(f"{HEALTH_PATH}/ready", ready, ok=HealthOut, unavailable=HealthOut)
    add(f"{HEALTH_PATH}/live", live, ok=LiveOut)
