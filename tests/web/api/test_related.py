"""``/related`` and ``/feed`` through the HTTP API (the lists themselves are issue 4's tests)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any
from urllib.parse import quote

import pytest
from flask.testing import FlaskClient

from tests.factories import CARD
from tests.web.api.test_articles import assert_error
from tests.web.api.test_duplicates import repost
from tests.web.conftest import AUTH


@pytest.fixture
def corpus_size() -> int:
    return 60


def related(client: FlaskClient, article: str, query: str = "") -> Any:
    return client.get(f"/api/v1/articles/{article}/related{query}")


def test_related_body_paging_and_k_limits(
    client: FlaskClient, corpus: list[dict[str, Any]]
) -> None:
    first = corpus[0]["id"]
    body = related(client, first).get_json()
    assert body["article"] == first and len(body["items"]) == 10  # related.default_k
    assert first not in {i["id"] for i in body["items"]}
    item = body["items"][0]
    assert set(item) == {"id", "title", "url", "score", "reasons", *CARD} and 0 < item["score"] <= 1
    assert item["reasons"]["shared_terms"]
    assert [i["score"] for i in body["items"]] == sorted(
        (i["score"] for i in body["items"]), reverse=True
    )
    page = related(client, first, "?k=5&offset=5").get_json()["items"]
    assert [i["id"] for i in page] == [i["id"] for i in body["items"][5:10]]
    for bad in ("?k=0", "?k=101", "?offset=-1", "?offset=1001", "?min_score=2", "?k=x"):
        assert_error(related(client, first, bad), 422, "invalid_request")


def test_related_filters(client: FlaskClient, corpus: list[dict[str, Any]]) -> None:
    first = next(r for r in corpus if r["category"] == "AI 应用开发")
    category = quote(first["category"])
    items = related(client, first["id"], f"?categories={category}&k=20&min_score=0").get_json()[
        "items"
    ]
    assert items and all(i["reasons"]["same_category"] for i in items)
    other = related(client, first["id"], "?categories=no-such-category").get_json()
    assert other["items"] == []
    top = related(client, first["id"]).get_json()["items"][0]["id"]
    without = related(client, first["id"], f"?exclude={top}").get_json()["items"]
    assert top not in {i["id"] for i in without}
    floored = related(client, first["id"], "?min_score=0.999").get_json()
    assert floored["items"] == [] and floored["floor"] == {"min_score": 0.999, "dropped": 10}
    window = "?published_after=2030-01-01T00:00:00Z&published_before=2020-01-01T00:00:00Z"
    assert_error(related(client, first["id"], window), 422, "invalid_request")
    far = "?published_after=9999-12-31T23:59:59-14:00"
    message = assert_error(related(client, first["id"], far), 422, "invalid_request")["error"]
    assert message["message"].startswith("published_after: year 9999 is outside 1900-2100")


def test_the_command_lines_spellings_are_accepted_and_unknown_parameters_refused(
    client: FlaskClient, corpus: list[dict[str, Any]]
) -> None:
    first = next(r for r in corpus if r["category"] == "AI 应用开发")
    category = quote(first["category"])
    wanted = related(client, first["id"], f"?categories={category}&k=20&min_score=0").get_json()
    assert wanted["items"]
    assert related(client, first["id"], f"?category={category}&k=20&min_score=0").get_json() == (
        wanted
    )
    tagged = next(r for r in corpus if r["tags"])
    tag = quote(tagged["tags"][0])
    by_tag = related(client, tagged["id"], f"?tags={tag}&min_score=0").get_json()
    assert by_tag["items"] and all(i["reasons"]["shared_tags"] for i in by_tag["items"])
    assert related(client, tagged["id"], f"?tag={tag}&min_score=0").get_json() == by_tag
    both = related(client, first["id"], "?tag=a&tags=b&after=2020-01-01&k=3")
    assert both.status_code == 200
    for query, named in (
        ("?tagz=MySQL", "'tagz'"),
        ("?k=3&sort=date&Tags=x", "'Tags', 'sort'"),
        ("?after=2020-01-01&published_after=2020-01-01", "published_after or after"),
    ):
        error = assert_error(related(client, first["id"], query), 422, "invalid_request")
        assert named in error["error"]["message"]
    unknown = client.get(f"/api/v1/articles/{first['id']}?fields=title")
    assert "'fields'" in assert_error(unknown, 422, "invalid_request")["error"]["message"]
    feed = client.get("/api/v1/users/u/feed?categroy=x", headers=AUTH)
    assert "'categroy'" in assert_error(feed, 422, "invalid_request")["error"]["message"]


def test_a_repost_is_suppressed_and_a_new_article_is_listed_at_once(
    client: FlaskClient, corpus: list[dict[str, Any]]
) -> None:
    source = corpus[7]
    assert (
        client.post("/api/v1/articles", json=repost(source, "copy"), headers=AUTH).status_code
        == 200
    )
    body = related(client, source["id"], "?k=50").get_json()
    assert "copy" not in {i["id"] for i in body["items"]}
    assert {"id": "copy", "duplicate_of": source["id"]}.items() <= next(
        s for s in body["suppressed"] if s["id"] == "copy"
    ).items()
    fresh = {**corpus[8], "id": "fresh", "title": corpus[8]["title"] + "（续）"}
    fresh["content"] = corpus[8]["content"][: len(corpus[8]["content"]) // 2]
    client.post("/api/v1/articles", json=fresh, headers=AUTH)
    assert related(client, "fresh").get_json()["items"]  # no reindex needed


def test_related_errors(client: FlaskClient, corpus: list[dict[str, Any]]) -> None:
    assert_error(related(client, "nope"), 404, "not_found")
    client.delete(f"/api/v1/articles/{corpus[1]['id']}", headers=AUTH)
    assert_error(related(client, corpus[1]["id"]), 404, "not_found")
    listed = related(client, corpus[0]["id"], "?k=60").get_json()["items"]
    assert corpus[1]["id"] not in {i["id"] for i in listed}  # deleted: gone from lists too


def test_related_before_any_model_is_503(client: FlaskClient) -> None:
    client.post("/api/v1/articles", json={"id": "a", "title": "标题"}, headers=AUTH)
    assert_error(related(client, "a"), 503, "model_missing")


def test_feed_leaves_out_what_was_read_and_its_copies(
    client: FlaskClient, corpus: list[dict[str, Any]]
) -> None:
    cold = client.get("/api/v1/users/new-reader/feed?k=5", headers=AUTH).get_json()
    assert cold["user"] == "new-reader" and len(cold["items"]) == 5  # fresh articles
    client.post("/api/v1/articles", json=repost(corpus[2], "copy"), headers=AUTH)
    read = [corpus[2]["id"], corpus[3]["id"]]
    at = (datetime.now(UTC) - timedelta(days=30)).isoformat()
    events = [{"article": a, "at": at} for a in read]
    assert client.post("/api/v1/users/r1/events", json=events, headers=AUTH).status_code == 200
    feed = client.get("/api/v1/users/r1/feed?k=20", headers=AUTH).get_json()
    shown = {i["id"] for i in feed["items"]}
    assert feed["items"] and not shown & {*read, "copy"}
    assert_error(client.get("/api/v1/users/r1/feed?k=1000", headers=AUTH), 422, "invalid_request")


def test_items_carry_what_a_card_shows(client: FlaskClient, corpus: list[dict[str, Any]]) -> None:
    """Related and feed items name their image, summary, publication time and category, as
    stored (the image of the Markdown, a summary cut at a sentence end); the published
    contract says so."""
    dated = {**corpus[0], "id": "dated", "published_at": "2024-05-01T08:00:00+08:00"}
    dated["image"] = "https://cdn.example/cover.jpg"
    assert client.post("/api/v1/articles", json=dated, headers=AUTH).status_code == 200
    by_id = {r["id"]: r for r in corpus}
    items = related(client, corpus[1]["id"], "?k=20&min_score=0").get_json()["items"]
    listed = {i["id"]: i for i in items}
    assert "dated" in listed
    assert listed["dated"]["published_at"] == "2024-05-01T00:00:00Z"
    assert listed["dated"]["image"] == "https://cdn.example/cover.jpg"
    others = [i for i in items if i["id"] != "dated"]
    assert all(i["category"] == by_id[i["id"]]["category"] for i in others)
    assert all(i["published_at"] is None for i in others)  # the corpus has no dates
    assert all(0 < len(i["summary"]) <= 120 and "**" not in i["summary"] for i in items)
    assert any((i["image"] or "").startswith("https://oss.javaguide.cn/") for i in others)
    feed = client.get("/api/v1/users/nobody/feed?k=5", headers=AUTH).get_json()["items"]
    assert feed and all(set(i) >= CARD for i in feed)
    schema = client.get("/openapi.json").get_json()["components"]["schemas"]
    item = next(v for k, v in schema.items() if k.startswith("RelatedItem"))
    assert set(item["properties"]) >= CARD and not CARD & set(item.get("required", []))
