"""``GET /api/v1/users/<user>/feed?offset=``: feeds page as related lists do (and as the command
line's ``recengine feed --offset``)."""

from __future__ import annotations

from typing import Any

from flask.testing import FlaskClient

from tests.web.api.test_articles import assert_error
from tests.web.conftest import AUTH


def feed(client: FlaskClient, user: str, query: str) -> Any:
    return client.get(f"/api/v1/users/{user}/feed{query}", headers=AUTH)


def test_a_feed_page_is_the_same_feed_after_offset_items(
    client: FlaskClient, corpus: list[dict[str, Any]]
) -> None:
    events = [{"article": corpus[i]["id"]} for i in (0, 1)]
    assert client.post("/api/v1/users/r/events", json=events, headers=AUTH).status_code == 200
    for user in ("r", "nobody"):
        whole = feed(client, user, "?k=12").get_json()
        page = feed(client, user, "?k=7&offset=5").get_json()
        assert page["items"] == whole["items"][5:12], user
    assert_error(feed(client, "r", "?offset=1001"), 422, "invalid_request")  # feed.max_offset
    assert_error(feed(client, "r", "?offset=-1"), 422, "invalid_request")
