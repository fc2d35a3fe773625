"""``/api/v1/users/<user>``: reader events (what a reader read), the reader's feed, and the
reader's data: the history as stored and its erasure (``recommend.feeds.retention``).

A feed says what its reader read (``because_you_read``), so it needs the API key unless
``web.public_feeds``; the history and the erasure always need it. Every request this app
answers also gives the retention of events (``events.retention_days``) its chance to run
(``reader_data.Expiry``: at most once an hour per worker, in a thread of its own).
"""

from __future__ import annotations

from datetime import datetime
from functools import partial

from recengine.errors import ModelMissing, NotFound
from recengine.storage.db import transaction
from recengine.web.api.routing import Router, validated_body, validated_query
from recengine.web.schemas.core import EventsIn, EventsRecorded, FeedOut, FeedQuery, Models
from recengine.web.schemas.readers import ReaderErased, ReaderEventsOut, ReaderEventsQuery
from recengine.web.services import services, session


def record(user: str) -> EventsRecorded:
    """Record that the reader read one article or several: all in one transaction, or none.

    Each event is stored once (reader, article, time): sending it again, as a retried
    request does, stores nothing more and gets the same answer. A time more than
    ``events.max_future_seconds`` ahead, or older than ``events.retention_days``, is refused.
    Read articles, and every near-duplicate of them, leave the reader's feed.
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


def history(user: str) -> ReaderEventsOut:
    """Every stored event of the reader, oldest stored first, paged (a data-access request):
    what they read and when, deleted articles included."""
    query = validated_query(ReaderEventsQuery)
    body = services().readers.history(
        user, session=session(), after_id=query.after, limit=query.limit
    )
    return ReaderEventsOut.model_validate(body)


def erase(user: str) -> ReaderErased:
    """Erase the reader: every stored event is deleted (nothing else is kept by reader)."""
    return ReaderErased.model_validate(services().readers.erase(user))


def _expire() -> None:
    services().expiry.tick()


def init_app(router: Router, models: Models) -> None:
    router.app.before_request(_expire)
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
        write=not router.settings.web.public_feeds,  # the key, as for a write
        ok=FeedOut,
        query=models.feed_query,
        errors=(ModelMissing,),
    )
    add(
        "/api/v1/users/<id:user>/events",
        history,
        method="GET",
        write=True,  # personal data: the key, always
        ok=ReaderEventsOut,
        query=ReaderEventsQuery,
    )
    add("/api/v1/users/<id:user>", erase, method="DELETE", write=True, ok=ReaderErased)
