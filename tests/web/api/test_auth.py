"""API keys on writes (and on reads when configured), and CORS limited to configured origins."""

from __future__ import annotations

import hmac
import logging
from collections.abc import Callable
from typing import Any

import pytest
from flask import Flask
from flask.testing import FlaskClient

from tests.factories import record
from tests.web.api.test_articles import assert_error
from tests.web.conftest import AUTH, KEY

WRITES = [
    ("POST", "/api/v1/articles", record(1)),
    ("DELETE", "/api/v1/articles/a1", None),
    ("POST", "/api/v1/users/u/events", {"article": "a1"}),
]


@pytest.mark.parametrize(("method", "path", "body"), WRITES)
def test_writes_need_the_key(client: FlaskClient, method: str, path: str, body: Any) -> None:
    response = client.open(path, method=method, json=body)
    assert_error(response, 401, "unauthorized")
    assert response.headers["WWW-Authenticate"].startswith("Bearer")
    for wrong in (f"Bearer {KEY}x", "Bearer " + KEY[:-1], f"Bearer {KEY.upper()}", "Bearer é"):
        response = client.open(path, method=method, json=body, headers={"Authorization": wrong})
        assert_error(response, 403, "forbidden")
    for malformed in (KEY, f"Basic {KEY}", "Bearer", "Bearer  "):
        response = client.open(path, method=method, json=body, headers={"Authorization": malformed})
        assert_error(response, 401, "unauthorized")


def test_the_key_is_checked_before_the_body(client: FlaskClient) -> None:
    response = client.post("/api/v1/articles", data="{not json", content_type="application/json")
    assert_error(response, 401, "unauthorized")  # an anonymous client learns nothing more


def test_right_key_writes_and_reads_are_public(client: FlaskClient) -> None:
    assert client.post("/api/v1/articles", json=record(1), headers=AUTH).status_code == 200
    assert client.get("/api/v1/articles/a1").status_code == 200
    scheme_case = {"Authorization": f"bearer {KEY}"}
    assert client.delete("/api/v1/articles/a1", headers=scheme_case).status_code == 200


def test_keys_are_compared_in_constant_time(
    client: FlaskClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls: list[tuple[bytes, bytes]] = []
    real = hmac.compare_digest

    def spy(a: bytes, b: bytes) -> bool:
        calls.append((a, b))
        return real(a, b)

    monkeypatch.setattr("recengine.web.api.auth.hmac.compare_digest", spy)
    client.post("/api/v1/articles", json=record(1), headers={"Authorization": "Bearer guess"})
    assert calls == [(b"guess", KEY.encode())]


def test_no_key_configured_refuses_writes_unless_open(make_app: Callable[..., Flask]) -> None:
    closed = make_app(api_key="").test_client()
    response = closed.post("/api/v1/articles", json=record(1), headers=AUTH)
    assert "RECENGINE_API_KEY" in assert_error(response, 403, "writes_disabled")["error"]["message"]
    assert closed.get("/api/v1/articles/a1").status_code == 404  # nothing was written

    demo = make_app(api_key="", allow_open_writes=True).test_client()
    assert demo.post("/api/v1/articles", json=record(1)).status_code == 200
    # a key sent to a server that has none is wrong, not ignored (nothing is written)
    for sent in (AUTH, {"Authorization": "Bearer wrong"}):
        refused = demo.post("/api/v1/articles", json=record(3), headers=sent)
        assert "this server has none" in assert_error(refused, 403, "forbidden")["error"]["message"]
    assert demo.get("/api/v1/articles/a3").status_code == 404
    # a configured key is required even where open writes are allowed
    keyed = make_app(allow_open_writes=True).test_client()
    assert_error(keyed.post("/api/v1/articles", json=record(2)), 401, "unauthorized")


def test_private_reads_need_the_key_but_the_widget_and_schema_do_not(
    make_app: Callable[..., Flask],
) -> None:
    client = make_app(web={"public_reads": False}).test_client()
    client.post("/api/v1/articles", json=record(1), headers=AUTH)
    for path in ("/api/v1/articles/a1", "/"):
        assert_error(client.get(path), 401, "unauthorized")
        assert client.get(path, headers=AUTH).status_code == 200
    for path in ("/widget.js", "/openapi.json", "/api/v1/health"):
        assert client.get(path).status_code == 200
    spec = client.get("/openapi.json").get_json()
    assert spec["paths"]["/api/v1/articles/{article_id}"]["get"]["security"] == [{"bearer": []}]


ALLOWED = "https://blog.example.com"


def test_cors_only_for_configured_origins(make_app: Callable[..., Flask]) -> None:
    client = make_app(web={"cors_origins": [ALLOWED]}).test_client()
    client.post("/api/v1/articles", json=record(1), headers=AUTH)
    ok = client.get("/api/v1/articles/a1", headers={"Origin": ALLOWED})
    assert ok.headers["Access-Control-Allow-Origin"] == ALLOWED
    assert "Origin" in ok.headers.get("Vary", "")
    other = client.get("/api/v1/articles/a1", headers={"Origin": "https://evil.example"})
    assert "Access-Control-Allow-Origin" not in other.headers
    missing = client.get("/api/v1/articles/nope", headers={"Origin": ALLOWED})
    assert missing.status_code == 404
    assert missing.headers["Access-Control-Allow-Origin"] == ALLOWED  # errors readable too

    preflight = {
        "Origin": ALLOWED,
        "Access-Control-Request-Method": "POST",
        "Access-Control-Request-Headers": "authorization, content-type",
    }
    response = client.options("/api/v1/articles", headers=preflight)
    assert response.headers["Access-Control-Allow-Origin"] == ALLOWED
    assert "authorization" in response.headers["Access-Control-Allow-Headers"].lower()
    evil = client.options(
        "/api/v1/articles", headers={**preflight, "Origin": "https://evil.example"}
    )
    assert "Access-Control-Allow-Origin" not in evil.headers


def test_no_cors_headers_without_configured_origins(client: FlaskClient) -> None:
    response = client.get("/api/v1/health", headers={"Origin": ALLOWED})
    assert "Access-Control-Allow-Origin" not in response.headers


def test_a_refused_origin_is_logged_once(
    make_app: Callable[..., Flask], caplog: pytest.LogCaptureFixture
) -> None:
    """The operator's side of the widget's console warning: which origin was refused."""
    client = make_app(web={"cors_origins": [ALLOWED]}).test_client()
    with caplog.at_level(logging.WARNING, logger="recengine.web.api.cors"):
        for origin in ("https://evil.example", "https://evil.example", ALLOWED):
            client.get("/api/v1/articles/nope", headers={"Origin": origin})
        client.get("/", headers={"Origin": "https://page.example"})  # not the API: not logged
    said = [r.getMessage() for r in caplog.records if r.name == "recengine.web.api.cors"]
    assert len(said) == 1 and "https://evil.example" in said[0] and "cors_origins" in said[0]
