"""``/api/v1/health``: is the database reachable, and how fresh is what this worker serves."""

from __future__ import annotations

import os

from sqlalchemy.exc import SQLAlchemyError

from recengine.storage.state import State, read_state
from recengine.web.errors import Unavailable, status_of
from recengine.web.routing import Router
from recengine.web.schemas import DatabaseHealth, HealthOut, IndexHealth
from recengine.web.services import discard_session, services, session

HEALTH_PATH = "/api/v1/health"


def health() -> HealthOut | tuple[HealthOut, int]:
    """Database reachability, the change sequence, and this worker's index and its lag.

    200 while the database answers; 503 (with the same report) when it does not, so a load
    balancer can take the worker out. Looking does not load or update an index.
    """
    try:
        state = read_state(session=session())
    except SQLAlchemyError as exc:
        discard_session()
        report = HealthOut(
            status="unavailable",
            worker=os.getpid(),
            database=DatabaseHealth(reachable=False, error=type(exc).__name__),
            indexes=[],
        )
        return report, status_of(Unavailable)
    index = related_index(state)
    stale = index.rebuilding or (index.loaded and index.model_version != state.active_model_version)
    return HealthOut(
        status="degraded" if stale else "ok",
        worker=os.getpid(),
        database=DatabaseHealth(
            reachable=True, seq=state.seq, model_version=state.active_model_version
        ),
        indexes=[index],
    )


def related_index(state: State) -> IndexHealth:
    stats = services().index.stats()
    seq = stats["seq"]
    return IndexHealth(
        name="related",
        loaded=stats["loaded"],
        model_version=stats["version"],
        seq=seq,
        lag=None if seq is None else max(0, state.seq - seq),
        articles=stats["articles"],
        segments=stats["segments"],
        rebuilding=stats["busy"],
    )


def init_app(router: Router) -> None:
    router.add(
        HEALTH_PATH,
        health,
        method="GET",
        write=None,
        tag="service",
        ok=HealthOut,
        unavailable=HealthOut,
    )
