"""CORS with ``"*"``: any page may read and send the feedback beacon; writes only for origins
named in ``web.cors_origins`` (issue 46, item 11)."""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

import pytest
from flask import Flask
from flask.testing import FlaskClient

from tests.factories import record
from tests.web.conftest import AUTH

NAMED = "https://editors.example.com"
ANY = "https://any.example"
ACAO = "Access-Control-Allow-Origin"


@pytest.fixture
def open_client(make_app: Callable[..., Flask]) -> FlaskClient:
    client = make_app(web={"cors_origins": ["*", NAMED]}).test_client()
    assert client.post("/api/v1/articles", json=record(1), headers=AUTH).status_code == 200
    assert client.post("/api/v1/articles", json=record(2), headers=AUTH).status_code == 200
    return client


def preflight(client: FlaskClient, path: str, origin: str, method: str, headers: str) -> Any:
    return client.options(
        path,
        headers={
            "Origin": origin,
            "Access-Control-Request-Method": method,
            "Access-Control-Request-Headers": headers,
        },
    )


WRITES = [
    ("POST", "/api/v1/articles", "authorization, content-type"),
    ("DELETE", "/api/v1/articles/a1", "authorization"),
    ("POST", "/api/v1/users/u/events", "authorization, content-type"),
    ("POST", "/api/v1/overrides", "authorization, content-type"),
    ("DELETE", "/api/v1/overrides/1", "authorization"),
]


def test_a_wildcard_does_not_open_writes_to_every_origin(open_client: FlaskClient) -> None:
    for method, path, headers in WRITES:
        refused = preflight(open_client, path, ANY, method, headers)
        assert ACAO not in refused.headers, (method, path, dict(refused.headers))
        assert "Access-Control-Allow-Methods" not in refused.headers
        allowed = preflight(open_client, path, NAMED, method, headers)
        assert allowed.headers[ACAO] == NAMED, (method, path)
        assert method in allowed.headers["Access-Control-Allow-Methods"]
        assert "authorization" in allowed.headers["Access-Control-Allow-Headers"].lower()
    # a write sent anyway (no preflight: a client that ignores CORS) gets no CORS headers
    deleted = open_client.delete("/api/v1/articles/a2", headers={**AUTH, "Origin": ANY})
    assert deleted.status_code == 200 and ACAO not in deleted.headers
    added = open_client.post("/api/v1/articles", json=record(3), headers={**AUTH, "Origin": NAMED})
    assert added.status_code == 200 and added.headers[ACAO] == NAMED


def test_a_wildcard_covers_reads_and_the_feedback_beacon(open_client: FlaskClient) -> None:
    read = open_client.get("/api/v1/articles/a1", headers={"Origin": ANY})
    assert read.status_code == 200 and read.headers[ACAO] in (ANY, "*")
    assert "Origin" in read.headers.get("Vary", "")
    missing = open_client.get("/api/v1/articles/nope", headers={"Origin": ANY})
    assert missing.status_code == 404 and missing.headers[ACAO] in (ANY, "*")
    # a read's preflight is told only the read methods: no write is cached as allowed
    checked = preflight(open_client, "/api/v1/articles/a1", ANY, "GET", "content-type")
    assert checked.headers[ACAO] in (ANY, "*")
    assert checked.headers["Access-Control-Allow-Methods"] == "GET, HEAD"
    beacon = preflight(open_client, "/api/v1/feedback", ANY, "POST", "content-type")
    assert beacon.headers[ACAO] in (ANY, "*")
    assert beacon.headers["Access-Control-Allow-Methods"] == "POST"
    event = {"type": "impression", "article": "a1", "variant": "default", "slot": 0}
    sent = open_client.post(
        "/api/v1/feedback", json=event, headers={"Origin": ANY, "Content-Type": "text/plain"}
    )
    assert sent.status_code == 200 and sent.headers[ACAO] in (ANY, "*")


def test_a_refused_write_of_a_wildcard_origin_is_logged_once(
    open_client: FlaskClient, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.WARNING, logger="recengine.web.api.cors"):
        for _ in range(2):
            preflight(open_client, "/api/v1/articles", ANY, "POST", "authorization")
        open_client.get("/api/v1/articles/a1", headers={"Origin": "https://reader.example"})
    said = [r.getMessage() for r in caplog.records if r.name == "recengine.web.api.cors"]
    assert len(said) == 1 and ANY in said[0] and "POST" in said[0], said
    assert "name the origin" in said[0]
