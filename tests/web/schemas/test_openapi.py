"""What ``/openapi.json`` declares matches what the service does (issue 45, item 24)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from flask import Flask
from flask.testing import FlaskClient

from recengine.config import Settings
from recengine.web.schemas.core import Filters, build_models, query_names
from tests.web.conftest import AUTH

RELATED = "/api/v1/articles/{article_id}/related"
FEED = "/api/v1/users/{user}/feed"


def document(client: FlaskClient) -> dict[str, Any]:
    response = client.get("/openapi.json")
    assert response.status_code == 200
    spec: dict[str, Any] = response.get_json()
    return spec


def test_the_score_is_described_as_the_rankings_blend(client: FlaskClient) -> None:
    score = document(client)["components"]["schemas"]["RelatedItem"]["properties"]["score"]
    text = score["description"]
    assert "related.dense_weight" in text and "dense (LSA)" in text and "feed" in text, text


def test_the_feedback_body_is_declared_as_json_and_text_plain(client: FlaskClient) -> None:
    body = document(client)["paths"]["/api/v1/feedback"]["post"]["requestBody"]
    assert set(body["content"]) == {"application/json", "text/plain"}
    assert body["content"]["text/plain"] == body["content"]["application/json"]
    event = {"type": "impression", "article": "a1", "variant": "default", "slot": 0}
    sent = client.post(
        "/api/v1/feedback", data=str(event).replace("'", '"'), content_type="text/plain"
    )
    assert sent.status_code == 404  # accepted as JSON; the article does not exist


def test_apps_of_one_process_keep_their_own_limits_and_variants(
    make_app: Callable[..., Flask],
) -> None:
    """A process builds each set of request models and schemas once (``build_models``,
    ``web.api.routing``): apps built one after another, with other limits or the same ones,
    still publish and apply each its own."""
    two = {"name": "t", "variants": {"control": {}, "strict": {}}}
    three = {"name": "u", "variants": {"a": {}, "b": {}, "c": {}}}
    cases = ((5, two, ["control", "strict"]), (100, three, ["a", "b", "c"])) * 2
    for max_k, experiment, variants in cases:
        related = {"max_k": max_k, "default_k": 5}
        client = make_app(related=related, experiment=experiment).test_client()
        spec = document(client)
        k = next(p for p in spec["paths"][RELATED]["get"]["parameters"] if p["name"] == "k")
        event = spec["components"]["schemas"]["FeedbackEvent"]["properties"]
        assert (k["schema"]["maximum"], event["slot"]["exclusiveMaximum"]) == (max_k, max_k)
        assert event["variant"]["enum"] == variants
        over = client.get(f"/api/v1/articles/a1/related?k={max_k + 1}")
        assert over.status_code == 422, max_k


def test_every_accepted_query_parameter_is_declared(
    client: FlaskClient, settings: Settings
) -> None:
    paths = document(client)["paths"]
    models = build_models(settings)
    for path, model in ((RELATED, models.related_query), (FEED, models.feed_query)):
        parameters = [p for p in paths[path]["get"]["parameters"] if p["in"] == "query"]
        assert {p["name"] for p in parameters} == query_names(model), path
        for p in parameters:
            if p["name"] in Filters.ALIASES:
                assert "command line" in p["description"], p
    both = client.get(
        "/api/v1/users/u/feed?after=2024-01-01&published_after=2024-01-01", headers=AUTH
    )
    assert both.status_code == 422 and "not both" in both.get_json()["error"]["message"]


def test_the_document_uses_json_schema_keywords_only(client: FlaskClient) -> None:
    """pydantic writes a constraint it cannot place as its own name (``"ge"``), which JSON
    Schema ignores: a client generated from the document would not know the bound."""
    todo: list[Any] = [document(client)]
    while todo:
        node = todo.pop()
        if isinstance(node, dict):
            assert not {"ge", "le", "gt", "lt"} & set(node), node
            todo.extend(node.values())
        elif isinstance(node, list):
            todo.extend(node)
