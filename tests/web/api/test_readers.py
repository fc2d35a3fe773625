"""Readers' data over HTTP: feeds need the key (``web.public_feeds`` off by default), a reader's
history is shown and erased with the key, and events past ``events.retention_days`` are left out
of feeds at once, refused when sent and deleted by the server; on SQLite and PostgreSQL."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

from flask import Flask
from flask.testing import FlaskClient
from sqlalchemy import insert, select
from sqlalchemy.orm import Session, sessionmaker

from recengine.storage.models import Article, ReaderEvent
from recengine.web.services import services_of
from tests.web.api.test_articles import assert_error
from tests.web.conftest import AUTH

USERS = "/api/v1/users"


def read(client: FlaskClient, user: str, articles: list[str], days_ago: float = 1) -> None:
    at = (datetime.now(UTC) - timedelta(days=days_ago)).isoformat()
    events = [{"article": a, "at": at} for a in articles]
    assert client.post(f"{USERS}/{user}/events", json=events, headers=AUTH).status_code == 200


def because(body: dict[str, Any]) -> set[str]:
    return {i for item in body["items"] for i in item["reasons"].get("because_you_read", [])}


def test_a_feed_needs_the_key_unless_feeds_are_public(
    make_app: Callable[..., Flask], corpus: list[dict[str, Any]]
) -> None:
    """A feed says what its reader read: by default the site's server fetches it with the key;
    related lists stay public."""
    client = make_app().test_client()
    read(client, "bob", [corpus[0]["id"]])
    assert_error(client.get(f"{USERS}/bob/feed"), 401, "unauthorized")
    assert_error(
        client.get(f"{USERS}/bob/feed", headers={"Authorization": "Bearer no"}), 403, "forbidden"
    )
    keyed = client.get(f"{USERS}/bob/feed", headers=AUTH)
    assert keyed.status_code == 200 and because(keyed.get_json()) == {corpus[0]["id"]}
    assert keyed.headers["Cache-Control"] == "no-store"
    assert client.get(f"/api/v1/articles/{corpus[0]['id']}/related").status_code == 200
    public = make_app(web={"public_feeds": True}).test_client()
    assert public.get(f"{USERS}/bob/feed").status_code == 200
    demo = make_app(api_key="", allow_open_writes=True).test_client()  # as the demo runs
    assert demo.get(f"{USERS}/bob/feed").status_code == 200
    spec = client.get("/openapi.json").get_json()["paths"]
    assert spec["/api/v1/users/{user}/feed"]["get"]["security"] == [{"bearer": []}]
    assert spec["/api/v1/users/{user}/events"]["get"]["security"] == [{"bearer": []}]
    assert spec["/api/v1/users/{user}"]["delete"]["security"] == [{"bearer": []}]


def test_a_readers_history_is_shown_and_erased_with_the_key(
    client: FlaskClient, corpus: list[dict[str, Any]]
) -> None:
    a, b, c = (r["id"] for r in corpus[:3])
    read(client, "bob", [a, b], days_ago=2)
    read(client, "bob", [c])
    read(client, "ann", [a])
    read(client, "a/b", [a])  # a reader id with a slash
    assert_error(client.get(f"{USERS}/bob/events"), 401, "unauthorized")
    assert_error(client.delete(f"{USERS}/bob"), 401, "unauthorized")
    client.delete(f"/api/v1/articles/{b}", headers=AUTH)
    shown = client.get(f"{USERS}/bob/events", headers=AUTH).get_json()
    assert shown["user"] == "bob" and shown["next_after"] is None
    assert [(e["article"], e["kind"], e["deleted"]) for e in shown["events"]] == [
        (a, "read", False),
        (b, "read", True),  # the article is gone; the reader's event is still theirs to see
        (c, "read", False),
    ]
    assert shown["events"][0]["title"] == corpus[0]["title"]
    page = client.get(f"{USERS}/bob/events?limit=2", headers=AUTH).get_json()
    assert len(page["events"]) == 2 and page["next_after"] == page["events"][1]["id"]
    rest = client.get(f"{USERS}/bob/events?after={page['next_after']}", headers=AUTH).get_json()
    assert [e["article"] for e in rest["events"]] == [c]

    erased = client.delete(f"{USERS}/bob", headers=AUTH)
    assert erased.status_code == 200 and erased.get_json() == {"user": "bob", "erased": 3}
    assert client.get(f"{USERS}/bob/events", headers=AUTH).get_json()["events"] == []
    assert because(client.get(f"{USERS}/bob/feed", headers=AUTH).get_json()) == set()
    again = client.delete(f"{USERS}/bob", headers=AUTH)  # idempotent
    assert again.get_json() == {"user": "bob", "erased": 0}
    assert len(client.get(f"{USERS}/ann/events", headers=AUTH).get_json()["events"]) == 1
    assert client.delete(f"{USERS}/a%2Fb", headers=AUTH).get_json() == {"user": "a/b", "erased": 1}


def _stored(factory: sessionmaker[Session], user: str, article: str, at: datetime) -> None:
    """An event written straight to SQL (as one stored before the retention was set)."""
    with factory() as session, session.begin():
        article_id = session.scalars(select(Article.id).where(Article.external_id == article)).one()
        session.execute(
            insert(ReaderEvent).values(user_id=user, article_id=article_id, kind="read", at=at)
        )


def test_events_past_the_retention_are_refused_ignored_and_deleted_by_the_server(
    make_app: Callable[..., Flask],
    factory: sessionmaker[Session],
    corpus: list[dict[str, Any]],
) -> None:
    old, recent = corpus[0]["id"], corpus[1]["id"]
    _stored(factory, "bob", old, datetime.now(UTC) - timedelta(days=40))  # before the setting
    app = make_app(events={"retention_days": 30})
    services = services_of(app)
    assert services is not None
    services.expiry.every_s = 1e9  # one run: the one the first request starts
    client = app.test_client()
    feed = client.get(f"{USERS}/bob/feed", headers=AUTH).get_json()
    assert because(feed) == set()  # the expired read weighs nothing, deleted or not yet
    at = (datetime.now(UTC) - timedelta(days=31)).isoformat()
    refused = client.post(f"{USERS}/bob/events", json={"article": old, "at": at}, headers=AUTH)
    message = assert_error(refused, 422, "invalid_request")["error"]["message"]
    assert "older than events.retention_days (30 days)" in message
    read(client, "bob", [recent], days_ago=29)
    services.expiry.join(timeout=60)
    assert services.expiry.expired == 1
    with factory() as session:
        left = session.scalars(select(ReaderEvent.at)).all()
    assert len(left) == 1 and left[0] > datetime.now(UTC) - timedelta(days=30)
    assert because(client.get(f"{USERS}/bob/feed", headers=AUTH).get_json()) == {recent}


def test_a_retention_of_zero_keeps_events_forever(
    make_app: Callable[..., Flask], factory: sessionmaker[Session], corpus: list[dict[str, Any]]
) -> None:
    app = make_app(events={"retention_days": 0})
    client = app.test_client()
    at = datetime(2001, 1, 1, tzinfo=UTC)
    response = client.post(
        f"{USERS}/bob/events", json={"article": corpus[0]["id"], "at": at.isoformat()}, headers=AUTH
    )
    assert response.status_code == 200
    services = services_of(app)
    assert services is not None and not services.expiry.tick()
    with factory() as session:
        assert session.scalars(select(ReaderEvent.at)).all() == [at]
