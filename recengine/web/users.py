"""``/api/v1/users/<user>``: reader events (what a reader read) and the reader's feed."""

from __future__ import annotations

from datetime import datetime
from functools import partial

from recengine.errors import ModelMissing, NotFound
from recengine.storage.db import transaction
from recengine.web.routing import Router, validated_body, validated_query
from recengine.web.schemas import EventsIn, EventsRecorded, FeedOut, FeedQuery, Models
from recengine.web.services import services, session


def record(user: str) -> EventsRecorded:
    """Record that the reader read one article or several: all in one transaction, or none.

    Reading an article twice at the same time counts once. Read articles, and every
    near-duplicate of them, leave the reader's feed.
    """
    by_time: dict[datetime | None, list[str]] = {}
    for event in validated_body(EventsIn).events():
        by_time.setdefault(event.at, []).append(event.article)
    feeds, recorded = services().feeds, 0
    with transaction(services().factory) as writing:
        for at, articles in by_time.items():
            recorded += feeds.record_reads(user, articles, session=writing, at=at)
    return EventsRecorded(user=user, recorded=recorded)


def feed(user: str) -> FeedOut:
    """The reader's feed: articles related to what they read, weighted by how much of their
    history each interest takes and by recency; read articles and their near-duplicates left
    out, at most one per duplicate cluster. A reader with no history gets fresh articles."""
    query = validated_query(FeedQuery)
    body = services().feeds.feed(
        user, session=session(), k=query.k, offset=query.offset, **query.as_kwargs()
    )
    return FeedOut.model_validate(body)


def init_app(router: Router, models: Models) -> None:
    add = partial(router.add, tag="readers")
    add(
        "/api/v1/users/<id:user>/events",
        record,
        method="POST",
        write=True,
        ok=EventsRecorded,
        json=models.events_in,
        errors=(NotFound,),
    )
    add(
        "/api/v1/users/<id:user>/feed",
        feed,
        method="GET",
        write=False,
        ok=FeedOut,
        query=models.feed_query,
        errors=(ModelMissing,),
    )
