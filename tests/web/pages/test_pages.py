"""The demo page, the widget script, the published OpenAPI document and the health check."""

from __future__ import annotations

import gzip
from collections.abc import Callable
from typing import Any

import pytest
from flask import Flask
from flask.testing import FlaskClient
from sqlalchemy import Engine, text
from sqlalchemy.orm import Session, sessionmaker

from recengine.pipeline.featurize import Featurizer
from recengine.pipeline.reindex.full import reindex
from recengine.web.api.health import NO_MODEL
from tests.factories import record
from tests.web.conftest import AUTH

XSS_TITLE = '<script>alert("t")</script>" onmouseover="alert(1)'
XSS_CONTENT = "<p>正文</p><img src=x onerror=alert(2)>&lt;script&gt;alert(3)&lt;/script&gt;"


def test_demo_page_shows_the_article_escaped(client: FlaskClient) -> None:
    client.post(
        "/api/v1/articles",
        json=[
            record(1),
            record(
                2,
                title=XSS_TITLE,
                content=XSS_CONTENT,
                tags=["<b>tag</b>"],
                url="javascript:alert(4)",
            ),
        ],
        headers=AUTH,
    )
    response = client.get("/?article=a2")
    assert response.status_code == 200 and response.mimetype == "text/html"
    page = response.get_data(as_text=True)
    assert "<script>alert" not in page and "onerror" not in page and "<b>tag" not in page
    assert "&lt;script&gt;alert(&#34;t&#34;)&lt;/script&gt;&#34; onmouseover=&#34;alert(1)" in page
    assert "javascript:" not in page  # a non-http(s) URL is not linked
    assert 'data-recengine-article="a2"' in page and 'src="/widget.js"' in page
    # the widget and the editor view, from this origin, nothing inline
    assert page.count("<script") == 2
    assert 'src="/static/editor.js"' in page and "<script>" not in page
    csp = response.headers["Content-Security-Policy"]
    assert "script-src 'self'" in csp and "unsafe-inline" not in csp
    assert response.headers["X-Content-Type-Options"] == "nosniff"


def test_demo_page_defaults_to_the_latest_and_404s_unknown(client: FlaskClient) -> None:
    empty = client.get("/").get_data(as_text=True)
    assert "还没有文章" in empty and "找不到" not in empty
    client.post("/api/v1/articles", json=[record(1), record(2, title="最新的文章")], headers=AUTH)
    assert "<h1>最新的文章</h1>" in client.get("/").get_data(as_text=True)
    missing = client.get("/?article=nope")
    page = missing.get_data(as_text=True)
    assert missing.status_code == 404
    # the unknown id is named; the database is not called empty; the latest are offered
    assert "找不到这篇文章" in page and "<code>nope</code>" in page
    assert "还没有文章" not in page and "最新的文章" in page


def test_demo_page_opens_on_the_configured_article(make_app: Callable[..., Flask]) -> None:
    client = make_app(web={"demo_article": "a1"}).test_client()
    client.post("/api/v1/articles", json=[record(1, title="开篇"), record(2)], headers=AUTH)
    assert "<h1>开篇</h1>" in client.get("/").get_data(as_text=True)  # not the latest (a2)
    client.delete("/api/v1/articles/a1", headers=AUTH)
    assert "<h1>" + record(2)["title"] + "</h1>" in client.get("/").get_data(as_text=True)


def test_demo_page_shows_paragraphs_no_sentiment_tags_and_what_was_suppressed(
    client: FlaskClient, factory: sessionmaker[Session], featurizer: Featurizer
) -> None:
    body = "。".join(f"第{i}句讲的是数据库索引和查询优化的细节" for i in range(40)) + "。"
    copy = {**record(3, content=body), "id": "copy", "title": "转载"}
    client.post(
        "/api/v1/articles",
        json=[record(1, content=body), record(2), copy],
        headers=AUTH,
    )
    reindex(factory=factory, featurizer=featurizer)
    page = client.get("/?article=a1").get_data(as_text=True)
    assert page.count("<p>第") >= 3  # one line of text shown as several paragraphs
    assert "本文的重复稿" in page and "?article=copy" in page  # its cluster, for editors
    assert "neutral" not in page and "positive" not in page
    assert "For editors" not in page and "No articles" not in page  # one language: Chinese


def test_widget_script_is_cacheable_javascript(client: FlaskClient) -> None:
    response = client.get("/widget.js")
    assert response.status_code == 200 and response.mimetype == "text/javascript"
    assert "max-age=300" in response.headers["Cache-Control"]
    assert "textContent" in response.get_data(as_text=True)
    etag = response.headers["ETag"]
    assert client.get("/widget.js", headers={"If-None-Match": etag}).status_code == 304


def test_widget_stylesheet_is_cacheable_css_and_both_are_served_without_comments(
    client: FlaskClient,
) -> None:
    response = client.get("/widget.css")
    assert response.status_code == 200 and response.mimetype == "text/css"
    assert "max-age=300" in response.headers["Cache-Control"]
    css = response.get_data(as_text=True)
    assert ".recengine-layout-cards" in css and "prefers-color-scheme: dark" in css
    assert (
        client.get("/widget.css", headers={"If-None-Match": response.headers["ETag"]}).status_code
        == 304
    )
    script = client.get("/widget.js").get_data(as_text=True)
    for served in (css, script):
        assert served.startswith("/*! recengine related-articles widget | MIT */\n")
        lines = served.splitlines()
        assert not [line for line in lines[1:] if line.startswith(("//", "/*", " *"))]
        assert not [line for line in lines if line != line.strip() or not line]
    # a generous ceiling against regressions (the figure is bench.widget_size's: ~5.5 KB)
    assert len(gzip.compress(css.encode())) + len(gzip.compress(script.encode())) < 10_000


def test_health_describes_the_service(
    client: FlaskClient, factory: sessionmaker[Session], featurizer: Featurizer
) -> None:
    body = client.get("/api/v1/health").get_json()
    assert body["status"] == "degraded"  # serving, but no model: related lists answer 503
    assert body["problems"] == [NO_MODEL] and body["version"]
    assert body["database"] == {
        "reachable": True,
        "schema_current": True,
        "seq": 0,
        "model_version": None,
        "error": None,
    }
    assert "worker" not in body and "indexes" not in body  # nothing of the answering worker
    client.post("/api/v1/articles", json=[record(1), record(2)], headers=AUTH)
    reindex(factory=factory, featurizer=featurizer)
    body = client.get("/api/v1/health").get_json()
    assert body["status"] == "ok" and body["problems"] == []
    assert body["database"]["model_version"] == 1 and body["database"]["seq"] >= 2
    ready = client.get("/api/v1/health/ready")
    assert ready.status_code == 200 and ready.get_json() == body
    live = client.get("/api/v1/health/live")
    assert live.status_code == 200
    assert live.get_json() == {"status": "ok", "version": body["version"]}


def test_health_is_503_when_the_database_is_down_and_live_stays_200(
    client: FlaskClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    from sqlalchemy.exc import OperationalError

    import recengine.web.api.health as health

    def down(**_: Any) -> None:
        raise OperationalError("SELECT", {}, ConnectionRefusedError())

    monkeypatch.setattr(health, "schema_revisions", down)
    for path in ("/api/v1/health", "/api/v1/health/ready"):
        response = client.get(path)
        assert response.status_code == 503
        body = response.get_json()
        assert body["status"] == "unavailable" and body["database"]["reachable"] is False
        assert body["problems"] == ["the database cannot be reached"]
    assert client.get("/api/v1/health/live").status_code == 200  # do not restart the process


def test_health_is_503_when_the_schema_is_not_this_codes(
    client: FlaskClient, engine: Engine
) -> None:
    with engine.begin() as connection:
        connection.execute(text("UPDATE alembic_version SET version_num = 'older'"))
    response = client.get("/api/v1/health/ready")
    assert response.status_code == 503
    body = response.get_json()
    assert body["status"] == "unavailable" and body["database"]["schema_current"] is False
    assert "run `recengine db upgrade`" in body["problems"][0]


CONTRACT = {
    ("post", "/api/v1/articles"),
    ("get", "/api/v1/articles/{article_id}"),
    ("delete", "/api/v1/articles/{article_id}"),
    ("get", "/api/v1/articles/{article_id}/duplicates"),
    ("get", "/api/v1/articles/{article_id}/related"),
    ("get", "/api/v1/users/{user}/feed"),
    ("post", "/api/v1/users/{user}/events"),
    ("get", "/api/v1/users/{user}/events"),
    ("delete", "/api/v1/users/{user}"),
    ("get", "/api/v1/health"),
    ("get", "/api/v1/health/live"),
    ("get", "/api/v1/health/ready"),
    ("get", "/openapi.json"),
    ("get", "/widget.js"),
    ("get", "/widget.css"),
}


PUBLIC_POSTS = {"/api/v1/feedback"}


def test_openapi_describes_every_endpoint_and_error(make_app: Callable[..., Flask]) -> None:
    client = make_app(web={"max_batch": 7, "max_events": 9}).test_client()
    spec = client.get("/openapi.json").get_json()
    assert spec["openapi"].startswith("3.1")
    operations = {(m, p): op for p, ops in spec["paths"].items() for m, op in ops.items()}
    assert set(operations) >= CONTRACT
    error_ref = {"$ref": "#/components/schemas/ErrorBody"}
    for (method, path), op in operations.items():
        statuses = set(op["responses"])
        assert "200" in statuses and "422" in statuses and "503" in statuses, (method, path)
        if method != "get" and path not in PUBLIC_POSTS:
            assert {"401", "403"} <= statuses and op["security"] == [{"bearer": []}]
        if path in PUBLIC_POSTS:  # readers' browsers send it: no key, but rate limited
            assert "401" not in statuses and "429" in statuses and not op.get("security")
        if "requestBody" in op:
            assert {"400", "413", "415"} <= statuses
        for status, response in op["responses"].items():
            if status.startswith("4") and (path, status) != ("/", "404"):  # the page's 404: a page
                assert response["content"]["application/json"]["schema"] == error_ref
    schemas = spec["components"]["schemas"]
    batch = schemas["ArticleUpsert"]["oneOf"][1]
    assert batch["maxItems"] == 7  # the deployment's own limit, from the validating model
    assert schemas["EventsIn"]["oneOf"][1]["maxItems"] == 9
    assert set(schemas["ArticleRecord"]["required"]) == {"id"}
    assert spec["components"]["securitySchemes"]["bearer"] == {"type": "http", "scheme": "bearer"}


def test_demo_page_shows_the_stored_text_not_the_folded_one(client: FlaskClient) -> None:
    """NFKC folding is for comparing texts: the page shows what was stored (full-width
    punctuation and letters kept), its paragraphs from the text's own breaks."""
    body = "<p>数据库，索引（Ｂ树）的原理：查询优化！</p><p>　　第二段，ＳＱＬ。</p>"
    client.post("/api/v1/articles", json=record(1, content=body), headers=AUTH)
    page = client.get("/?article=a1").get_data(as_text=True)
    assert "<p>数据库，索引（Ｂ树）的原理：查询优化！</p>" in page
    assert "<p>第二段，ＳＱＬ。</p>" in page
    assert "数据库,索引(B树)" not in page and "SQL" not in page
