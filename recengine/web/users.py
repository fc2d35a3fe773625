"""``/api/v1/users/<user>``: reader events (what a reader read) and the reader's feed."""

from __future__ import annotations

from recengine.errors import NotFound
from recengine.pipeline.changes import ReadEvent, record_events
from recengine.web.routing import Router, validated_body
from recengine.web.schemas import EventsIn, EventsRecorded, Models
from recengine.web.services import services


def record(user: str) -> EventsRecorded:
    """Record that the reader read one article or several (all or none).

    Events feed the reader's feed: read articles and their near-duplicates leave it.
    """
    body = validated_body(EventsIn)
    events = [ReadEvent(article=e.article, kind=e.kind, at=e.at) for e in body.events()]
    recorded = record_events(factory=services().factory, user_id=user, events=events)
    return EventsRecorded(user=user, recorded=recorded)


def init_app(router: Router, models: Models) -> None:
    router.add(
        "/api/v1/users/<path:user>/events",
        record,
        method="POST",
        write=True,
        tag="readers",
        ok=EventsRecorded,
        json=models.events_in,
        errors=(NotFound,),
    )
