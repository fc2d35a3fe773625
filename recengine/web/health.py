"""``/api/v1/health``: is the database reachable, and how fresh is what this worker serves."""

from __future__ import annotations

import os

from sqlalchemy.exc import SQLAlchemyError

from recengine.storage.state import read_state
from recengine.web.errors import Unavailable, status_of
from recengine.web.routing import Router
from recengine.web.schemas import DatabaseHealth, HealthOut, IndexHealth
from recengine.web.services import discard_session, services, session


def health() -> HealthOut | tuple[HealthOut, int]:
    """Database reachability, the change sequence, and each in-memory index's lag behind it.

    200 while the database answers; 503 (with the same report) when it does not, so a load
    balancer can take the worker out.
    """
    settings = services().settings
    try:
        state = read_state(session=session())
    except SQLAlchemyError as exc:
        discard_session()
        report = HealthOut(
            status="unavailable",
            worker=os.getpid(),
            database=DatabaseHealth(reachable=False, error=type(exc).__name__),
            indexes=[],
            refresh_seconds=settings.web.refresh_seconds,
        )
        return report, status_of(Unavailable)
    indexes: list[IndexHealth] = []
    lagging = any(i.lag for i in indexes)
    return HealthOut(
        status="degraded" if lagging else "ok",
        worker=os.getpid(),
        database=DatabaseHealth(
            reachable=True, seq=state.seq, model_version=state.active_model_version
        ),
        indexes=indexes,
        refresh_seconds=settings.web.refresh_seconds,
    )


def init_app(router: Router) -> None:
    router.add(
        "/api/v1/health",
        health,
        method="GET",
        write=None,
        tag="service",
        ok=HealthOut,
        unavailable=HealthOut,
    )
