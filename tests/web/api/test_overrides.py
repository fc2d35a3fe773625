"""``/api/v1/overrides`` through the HTTP API: the key, the lists they change, their errors."""

from __future__ import annotations

from typing import Any

import pytest
from flask.testing import FlaskClient

from tests.web.api.test_articles import assert_error
from tests.web.conftest import AUTH

OVERRIDES = "/api/v1/overrides"


@pytest.fixture
def corpus_size() -> int:
    return 40


def items(client: FlaskClient, article: str, query: str = "?k=10&min_score=0") -> list[str]:
    body = client.get(f"/api/v1/articles/{article}/related{query}").get_json()
    return [i["id"] for i in body["items"]]


def test_every_override_operation_needs_the_key(
    client: FlaskClient, corpus: list[dict[str, Any]]
) -> None:
    body = {"kind": "exclude", "article": corpus[0]["id"], "by": "ed"}
    for response in (
        client.post(OVERRIDES, json=body),
        client.get(OVERRIDES),
        client.delete(f"{OVERRIDES}/1"),
    ):
        assert_error(response, 401, "unauthorized")
    wrong = {"Authorization": "Bearer nope"}
    assert_error(client.post(OVERRIDES, json=body, headers=wrong), 403, "forbidden")
    assert client.get(OVERRIDES, headers=AUTH).get_json() == {"overrides": [], "next_after": None}


def test_pin_block_exclude_over_http(client: FlaskClient, corpus: list[dict[str, Any]]) -> None:
    query = corpus[0]["id"]
    before = items(client, query)
    far = next(r["id"] for r in corpus[1:] if r["id"] not in before)
    pin = client.post(
        OVERRIDES,
        json={"kind": "pin", "article": query, "other": far, "reason": "series", "by": "ann"},
        headers=AUTH,
    )
    assert pin.status_code == 200
    added = pin.get_json()
    assert added["created"] and added["replaced"] == []
    shown = added["override"]
    assert {k: shown[k] for k in ("kind", "article", "other", "position", "reason", "by")} == {
        "kind": "pin",
        "article": query,
        "other": far,
        "position": 0,
        "reason": "series",
        "by": "ann",
    }
    assert shown["active"] and shown["deleted"] == [] and shown["at"].endswith("+00:00")
    body = client.get(f"/api/v1/articles/{query}/related?k=3").get_json()
    assert body["items"][0]["id"] == far and body["items"][0]["reasons"]["pinned"] is True
    assert (
        client.post(
            OVERRIDES, json={"kind": "block", "article": before[0], "other": query}, headers=AUTH
        ).get_json()["override"]["by"]
        == "api"
    )  # the default author
    assert (
        client.post(
            OVERRIDES, json={"kind": "exclude", "article": before[1]}, headers=AUTH
        ).status_code
        == 200
    )
    after = items(client, query)
    assert after[0] == far and before[0] not in after and before[1] not in after
    listed = client.get(f"{OVERRIDES}?kind=pin&kind=block", headers=AUTH).get_json()
    assert [o["kind"] for o in listed["overrides"]] == ["pin", "block"]
    named = client.get(f"{OVERRIDES}?article={before[1]}", headers=AUTH).get_json()
    assert [o["kind"] for o in named["overrides"]] == ["exclude"]
    page = client.get(f"{OVERRIDES}?limit=2", headers=AUTH).get_json()
    assert len(page["overrides"]) == 2 and page["next_after"] == page["overrides"][1]["id"]
    rest = client.get(f"{OVERRIDES}?after={page['next_after']}", headers=AUTH).get_json()
    assert [o["kind"] for o in rest["overrides"]] == ["exclude"] and rest["next_after"] is None
    # removing them brings the list back as it was
    for o in client.get(OVERRIDES, headers=AUTH).get_json()["overrides"]:
        gone = client.delete(f"{OVERRIDES}/{o['id']}", headers=AUTH)
        assert gone.status_code == 200 and gone.get_json()["removed"] is True
    assert items(client, query) == before
    assert_error(client.delete(f"{OVERRIDES}/{shown['id']}", headers=AUTH), 404, "not_found")


def test_bad_overrides_are_clear_errors(client: FlaskClient, corpus: list[dict[str, Any]]) -> None:
    a, b, c = (r["id"] for r in corpus[:3])

    def post(body: dict[str, Any]) -> Any:
        return client.post(OVERRIDES, json=body, headers=AUTH)

    assert_error(post({"kind": "exclude", "article": "nope"}), 404, "not_found")
    for body in (
        {"kind": "like", "article": a},
        {"kind": "pin", "article": a},
        {"kind": "block", "article": a, "other": a},
        {"kind": "exclude", "article": a, "other": b},
        {"kind": "pin", "article": a, "other": b, "position": -1},
        {"kind": "exclude", "article": a, "reason": "x" * 2001},
        {"kind": "exclude", "article": a, "extra": 1},
        {"kind": "exclude", "article": a, "by": ""},
    ):
        assert_error(post(body), 422, "invalid_request")
    assert_error(client.get(f"{OVERRIDES}?kind=like", headers=AUTH), 422, "invalid_request")
    assert_error(client.get(f"{OVERRIDES}?article=nope", headers=AUTH), 404, "not_found")
    assert post({"kind": "same_article", "article": a, "other": b}).status_code == 200
    assert post({"kind": "same_article", "article": b, "other": c}).status_code == 200
    assert_error(post({"kind": "not_duplicate", "article": c, "other": a}), 409, "conflict")
    alone = assert_error(post({"kind": "not_duplicate", "article": c}), 409, "conflict")
    assert "same_article" in alone["error"]["message"]  # the one-article form, like the pair's
    assert len(client.get(OVERRIDES, headers=AUTH).get_json()["overrides"]) == 2


def test_the_contract_publishes_overrides_and_feedback(client: FlaskClient) -> None:
    spec = client.get("/openapi.json").get_json()
    paths = spec["paths"]
    assert {"post", "get"} <= set(paths["/api/v1/overrides"])
    assert "delete" in paths["/api/v1/overrides/{override_id}"]
    for operation in (
        *paths["/api/v1/overrides"].values(),
        paths["/api/v1/overrides/{override_id}"]["delete"],
    ):
        assert operation["security"] == [{"bearer": []}]
        assert "401" in operation["responses"] and "403" in operation["responses"]
    assert "409" in paths["/api/v1/overrides"]["post"]["responses"]
    beacon = paths["/api/v1/feedback"]["post"]
    assert "security" not in beacon or beacon["security"] == []
    assert {"200", "422", "429", "503"} <= set(beacon["responses"])


def test_a_pin_of_a_near_duplicate_is_refused_with_why(
    client: FlaskClient, corpus: list[dict[str, Any]]
) -> None:
    """It would be stored and never shown (a list never shows a copy of its article)."""
    query = corpus[0]["id"]
    copy = {
        **corpus[0],
        "id": "copy-of-0",
        "content": corpus[0]["content"] + "\n\n转载请注明出处。",
    }
    assert client.post("/api/v1/articles", json=copy, headers=AUTH).status_code == 200
    body = {"kind": "pin", "article": query, "other": "copy-of-0"}
    refused = assert_error(client.post(OVERRIDES, json=body, headers=AUTH), 409, "conflict")
    assert "near-duplicate of the article (they are in one" in refused["error"]["message"]
    assert client.get(OVERRIDES, headers=AUTH).get_json()["overrides"] == []
