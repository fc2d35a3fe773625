"""``POST /api/v1/users/<user>/events``: reader events, stored all or none."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime, timedelta

from flask import Flask
from flask.testing import FlaskClient
from sqlalchemy import select
from sqlalchemy.orm import Session, sessionmaker

from recengine.storage.models import ReaderEvent
from recengine.storage.state import read_state
from tests.factories import record
from tests.web.api.test_articles import assert_error
from tests.web.conftest import AUTH


def events(factory: sessionmaker[Session]) -> list[tuple[str, int, str]]:
    with factory() as session:
        rows = session.execute(
            select(ReaderEvent.user_id, ReaderEvent.article_id, ReaderEvent.at).order_by(
                ReaderEvent.id
            )
        )
        return [(r.user_id, r.article_id, r.at.isoformat()) for r in rows]


# A recent day (events older than events.retention_days, 365, are refused).
DAY = (datetime.now(UTC) - timedelta(days=10)).date().isoformat()
NEXT_DAY = (datetime.now(UTC) - timedelta(days=9)).date().isoformat()


def seed(client: FlaskClient) -> None:
    client.post("/api/v1/articles", json=[record(1), record(2)], headers=AUTH)


def test_one_event_and_a_batch(client: FlaskClient, factory: sessionmaker[Session]) -> None:
    seed(client)
    one = client.post("/api/v1/users/reader-1/events", json={"article": "a1"}, headers=AUTH)
    assert one.status_code == 200 and one.get_json() == {"user": "reader-1", "recorded": 1}
    batch = [
        {"article": "a2", "at": f"{DAY}T08:00:00+08:00"},
        {"article": "a1", "kind": "read", "at": f"{NEXT_DAY}T00:00:00Z"},
    ]
    response = client.post("/api/v1/users/读者 2/events", json=batch, headers=AUTH)
    assert response.get_json() == {"user": "读者 2", "recorded": 2}
    stored = events(factory)
    assert sorted(u for u, _, _ in stored) == ["reader-1", "读者 2", "读者 2"]
    assert f"{DAY}T00:00:00+00:00" in {at for _, _, at in stored}  # stored in UTC


def test_unknown_or_deleted_article_stores_nothing(
    client: FlaskClient, factory: sessionmaker[Session]
) -> None:
    seed(client)
    client.delete("/api/v1/articles/a2", headers=AUTH)
    batch = [{"article": "a1"}, {"article": "nope"}, {"article": "a2"}]
    response = client.post("/api/v1/users/u/events", json=batch, headers=AUTH)
    assert "'nope'" in assert_error(response, 404, "not_found")["error"]["message"]
    assert events(factory) == []
    response = client.post("/api/v1/users/u/events", json=batch[::2], headers=AUTH)
    assert "'a2'" in assert_error(response, 404, "not_found")["error"]["message"]  # deleted
    assert events(factory) == []


def test_invalid_events_are_422(client: FlaskClient, factory: sessionmaker[Session]) -> None:
    seed(client)
    cases = [
        ({"article": "a1", "at": "0001-01-01T00:00:00+14:00"}, "at: year 1 is outside 1900-2100"),
        ({"article": "a1", "at": "9999-12-31T23:59:59-14:00"}, "at: year 9999"),
        ({"article": "a1", "at": "yesterday"}, "at: 'yesterday' is not a time"),
        ({"article": "a1", "at": True}, "at"),
        ({"article": "a1", "kind": "like"}, "kind"),
        ({"article": ""}, "article"),
        ({"article": "a1", "extra": 1}, "extra"),
        ([], "at least 1"),
        ({"article": "a1", "at": "2099-01-01"}, "at: 2099-01-01T00:00:00+00:00 is in the future"),
        ({"article": "a1", "at": _ahead(seconds=301)}, "events.max_future_seconds"),
    ]
    for body, fragment in cases:
        response = client.post("/api/v1/users/u/events", json=body, headers=AUTH)
        assert fragment in assert_error(response, 422, "invalid_request")["error"]["message"]
    response = client.post("/api/v1/users/%20/events", json={"article": "a1"}, headers=AUTH)
    assert "user" in assert_error(response, 422, "invalid_request")["error"]["message"]
    assert events(factory) == []


def _ahead(seconds: float) -> str:
    return (datetime.now(UTC) + timedelta(seconds=seconds)).isoformat()


def test_a_read_a_little_ahead_of_the_servers_clock_is_taken(
    client: FlaskClient, factory: sessionmaker[Session]
) -> None:
    """The site's servers' clocks may run a little ahead (events.max_future_seconds = 300)."""
    seed(client)
    response = client.post(
        "/api/v1/users/u/events", json={"article": "a1", "at": _ahead(60)}, headers=AUTH
    )
    assert response.status_code == 200 and len(events(factory)) == 1


def test_events_per_request_are_capped(
    make_app: Callable[..., Flask], factory: sessionmaker[Session]
) -> None:
    client = make_app(web={"max_events": 2}).test_client()
    seed(client)
    response = client.post("/api/v1/users/u/events", json=[{"article": "a1"}] * 3, headers=AUTH)
    assert "at most 2" in assert_error(response, 422, "invalid_request")["error"]["message"]
    assert events(factory) == []


def test_an_event_sent_again_is_stored_once_and_takes_no_sequence_number(
    client: FlaskClient, factory: sessionmaker[Session]
) -> None:
    """Events are idempotent on reader, article, kind and time (a retried request stores
    nothing twice), and change nothing lists or duplicates depend on: no worker's cached
    answers are dropped for them (they take no change sequence number)."""
    seed(client)
    batch = [
        {"article": "a1", "at": f"{DAY}T08:00:00+08:00"},
        {"article": "a2", "at": f"{DAY}T00:00:00Z"},
    ]
    with factory() as session:
        seq = read_state(session=session).seq
    for _ in range(2):
        response = client.post("/api/v1/users/r/events", json=batch, headers=AUTH)
        assert response.get_json() == {"user": "r", "recorded": 2}  # the same answer
    same_instant = {"article": "a2", "at": f"{DAY}T08:00:00+08:00"}  # another spelling
    again = client.post(
        "/api/v1/users/r/events", json=[same_instant, {"article": "a1"}], headers=AUTH
    )
    assert again.get_json() == {"user": "r", "recorded": 2}
    stored = events(factory)
    assert len(stored) == 3 and len(set(stored)) == 3
    with factory() as session:
        assert read_state(session=session).seq == seq
