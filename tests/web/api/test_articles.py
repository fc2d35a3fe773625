"""``/api/v1/articles`` through the Flask test client: upsert, read, delete, and every error."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from flask import Flask
from flask.testing import FlaskClient
from sqlalchemy import func, select
from sqlalchemy.orm import Session, sessionmaker

from recengine.storage.models import Article, ArticleFeatures, EngineState
from tests.factories import record
from tests.web.conftest import AUTH


def snapshot(factory: sessionmaker[Session]) -> tuple[int, int, int]:
    """(articles, feature rows, change seq): what "nothing was written" compares."""
    with factory() as session:
        return (
            session.scalar(select(func.count()).select_from(Article)) or 0,
            session.scalar(select(func.count()).select_from(ArticleFeatures)) or 0,
            session.scalar(select(EngineState.seq)) or 0,
        )


def post(client: FlaskClient, body: Any, **kwargs: Any) -> Any:
    return client.post("/api/v1/articles", json=body, headers=AUTH, **kwargs)


def assert_error(response: Any, status: int, code: str) -> dict[str, Any]:
    assert response.status_code == status, response.get_data(as_text=True)
    assert response.mimetype == "application/json"
    body = response.get_json()
    assert set(body) == {"error"} and set(body["error"]) == {"code", "message"}
    assert body["error"]["code"] == code
    assert body["error"]["message"]
    return body


def test_upsert_one_then_read_it_back(client: FlaskClient) -> None:
    sent = record(1, url="https://example.com/1", author="作者", category="数据库")
    response = post(client, sent)
    assert response.status_code == 200
    assert response.get_json() == {
        "read": 1,
        "inserted": 1,
        "updated": 0,
        "unchanged": 0,
        "superseded": 0,
        "features_pending": 1,
        "ids": ["a1"],
        "ignored_fields": {},
    }
    got = client.get("/api/v1/articles/a1").get_json()
    assert got["id"] == "a1" and got["title"] == sent["title"] and got["content"] == sent["content"]
    assert got["url"] == sent["url"] and got["tags"] == ["数据库"] and got["author"] == "作者"
    assert got["published_at"] == "2024-05-01T00:00:00Z"  # +08:00 stored as UTC
    assert got["created_at"] and got["updated_at"]


def test_the_fields_other_names_are_stored_as_from_a_file(client: FlaskClient) -> None:
    sent = {"_id": "b1", "title": "标题", "body": "<p>正文</p>", "keywords": "Spring Boot;缓存"}
    batch = [sent, {"id": "b2", "text": "只有正文", "link": "https://x.test/2"}]
    assert post(client, batch).status_code == 200
    first = client.get("/api/v1/articles/b1").get_json()
    assert first["content"] == "<p>正文</p>" and first["tags"] == ["Spring Boot", "缓存"]
    second = client.get("/api/v1/articles/b2").get_json()
    assert second["content"] == "只有正文" and second["url"] == "https://x.test/2"


def test_an_unknown_field_is_refused_by_name_and_writes_nothing(
    client: FlaskClient, factory: sessionmaker[Session]
) -> None:
    before = snapshot(factory)
    for body in (record(1, section="README.md"), [record(2), record(1, contnet="正文")]):
        message = assert_error(post(client, body), 422, "invalid_request")["error"]["message"]
        assert "unknown field '" in message and ("'section'" in message or "(id 'a1')" in message)
    conflict = assert_error(post(client, record(1, body="另一个正文")), 422, "invalid_request")
    assert "give content or body, not both" in conflict["error"]["message"]
    assert snapshot(factory) == before


def test_extra_fields_report_stores_the_record_and_lists_them(
    make_app: Callable[..., Flask],
) -> None:
    client = make_app(ingest={"extra_fields": "report"}).test_client()
    response = post(client, [record(1, section="README.md", views=3), record(2)])
    assert response.status_code == 200
    assert response.get_json()["ignored_fields"] == {"a1": ["section", "views"]}
    assert client.get("/api/v1/articles/a1").get_json()["title"] == record(1)["title"]


def test_batch_is_counted_and_the_last_record_of_an_id_wins(client: FlaskClient) -> None:
    batch = [record(1), record(2), record(1, title="second version")]
    body = post(client, batch).get_json()
    assert (body["read"], body["inserted"], body["superseded"]) == (3, 2, 1)
    assert body["ids"] == ["a1", "a2"]
    assert client.get("/api/v1/articles/a1").get_json()["title"] == "second version"
    again = post(client, batch[1:]).get_json()
    assert (again["unchanged"], again["inserted"], again["updated"]) == (2, 0, 0)
    changed = post(client, record(2, content="新的内容")).get_json()
    assert changed["updated"] == 1


def test_new_articles_get_features_once_a_model_exists(
    client: FlaskClient, factory: sessionmaker[Session], featurizer: Any
) -> None:
    from recengine.pipeline.reindex.full import reindex

    post(client, [record(i) for i in range(3)])
    reindex(factory=factory, featurizer=featurizer)
    body = post(client, record(9)).get_json()
    assert body["features_pending"] == 0
    assert snapshot(factory)[1] == 4


def test_an_invalid_record_in_a_batch_writes_nothing(
    client: FlaskClient, factory: sessionmaker[Session]
) -> None:
    post(client, record(0))
    before = snapshot(factory)
    bad = [record(1), record(2, title="", content=""), record(3)]
    body = assert_error(post(client, bad), 422, "invalid_request")
    # the position of the bad record and its id
    assert body["error"]["message"] == "item [1] (id 'a2'): title or content must be non-empty"
    assert "title or content must be non-empty" in body["error"]["message"]
    assert snapshot(factory) == before


@pytest.mark.parametrize(
    ("body", "fragment"),
    [
        ({"title": "no id"}, "id: Field required"),
        ({"id": "x", "title": "t", "published_at": "soon"}, "published_at"),
        ({"id": "x", "title": "t", "tags": [1]}, "tags.0"),
        ([], "at least 1 item"),
        ("just a string", "expected a JSON object, got string"),
        ({"id": "\n", "title": "t"}, "id"),
    ],
)
def test_invalid_bodies_are_422_with_the_field_named(
    client: FlaskClient, factory: sessionmaker[Session], body: Any, fragment: str
) -> None:
    before = snapshot(factory)
    message = assert_error(post(client, body), 422, "invalid_request")["error"]["message"]
    assert fragment in message
    assert snapshot(factory) == before


def test_batch_size_is_capped_by_settings(
    make_app: Callable[..., Flask], factory: sessionmaker[Session]
) -> None:
    client = make_app(web={"max_batch": 3}).test_client()
    body = assert_error(post(client, [record(i) for i in range(4)]), 422, "invalid_request")
    assert "at most 3" in body["error"]["message"]
    assert snapshot(factory)[0] == 0
    assert post(client, [record(i) for i in range(3)]).status_code == 200


def test_body_size_is_capped_by_settings(
    make_app: Callable[..., Flask], factory: sessionmaker[Session]
) -> None:
    client = make_app(web={"max_body_bytes": 2_000}).test_client()
    body = assert_error(post(client, record(1, content="长" * 1_000)), 413, "too_large")
    assert "2000 bytes" in body["error"]["message"]
    assert snapshot(factory)[0] == 0


def test_malformed_json_is_400_and_other_media_types_415(client: FlaskClient) -> None:
    response = client.post(
        "/api/v1/articles", data='{"id": 1,', content_type="application/json", headers=AUTH
    )
    assert "line 1 column 10" in assert_error(response, 400, "invalid_json")["error"]["message"]
    response = client.post("/api/v1/articles", data="id=1", content_type="text/plain", headers=AUTH)
    assert_error(response, 415, "unsupported_media_type")


def test_ids_with_slashes_and_unicode_round_trip(client: FlaskClient) -> None:
    post(client, [record(1, id="csdn/2024/文章 1"), record(2, id="a/b/related")])
    assert client.get("/api/v1/articles/csdn/2024/文章%201").get_json()["id"] == "csdn/2024/文章 1"
    assert client.get("/api/v1/articles/csdn%2F2024%2F%E6%96%87%E7%AB%A0%201").status_code == 200


def test_unknown_article_is_404(client: FlaskClient) -> None:
    assert_error(client.get("/api/v1/articles/nope"), 404, "not_found")
    assert_error(client.delete("/api/v1/articles/nope", headers=AUTH), 404, "not_found")


def test_delete_is_soft_then_reads_404_and_upsert_brings_it_back(
    client: FlaskClient, factory: sessionmaker[Session]
) -> None:
    post(client, [record(1), record(2)])
    seq = snapshot(factory)[2]
    response = client.delete("/api/v1/articles/a1", headers=AUTH)
    assert response.status_code == 200 and response.get_json() == {"id": "a1", "deleted": True}
    assert snapshot(factory)[2] == seq + 1  # the deletion took a change number
    with factory() as session:
        row = session.scalars(select(Article).where(Article.external_id == "a1")).one()
        assert row.deleted_at is not None and row.seq == seq + 1
    assert_error(client.get("/api/v1/articles/a1"), 404, "not_found")
    assert_error(client.delete("/api/v1/articles/a1", headers=AUTH), 404, "not_found")
    assert snapshot(factory)[2] == seq + 1  # the refused delete changed nothing
    assert post(client, record(1)).get_json()["inserted"] == 1
    assert client.get("/api/v1/articles/a1").status_code == 200


def test_wrong_method_is_405_and_unknown_path_404(client: FlaskClient) -> None:
    response = client.put("/api/v1/articles", json={}, headers=AUTH)
    assert_error(response, 405, "method_not_allowed")
    assert "POST" in response.headers["Allow"]
    assert_error(client.get("/api/v2/nothing"), 404, "not_found")


def test_internal_error_rolls_back_and_leaks_nothing(
    client: FlaskClient,
    factory: sessionmaker[Session],
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    import recengine.pipeline.ingest.ingester as ingest

    def explode(**_: Any) -> None:
        raise RuntimeError("secret detail /srv/recengine/passwords.txt")

    post(client, record(0))
    before = snapshot(factory)
    monkeypatch.setattr(ingest, "update_articles", explode)  # fails after the inserts ran
    response = post(client, [record(1), record(0, title="changed")])
    body = assert_error(response, 500, "internal")
    text = response.get_data(as_text=True)
    assert "secret" not in text and "Traceback" not in text and "RuntimeError" not in text
    assert body["error"]["message"] == "internal error"
    assert snapshot(factory) == before  # the insert of a1 was rolled back with the rest
    assert "secret detail" in caplog.text  # ... and the operator still sees what happened


def test_database_down_is_503(client: FlaskClient, monkeypatch: pytest.MonkeyPatch) -> None:
    from sqlalchemy.exc import OperationalError

    import recengine.recommend.articles as views  # what GET /api/v1/articles/<id> reads with

    def down(**_: Any) -> None:
        raise OperationalError("SELECT 1", {}, ConnectionRefusedError("connection refused"))

    monkeypatch.setattr(views, "get_article", down)
    body = assert_error(client.get("/api/v1/articles/a1"), 503, "unavailable")
    assert "refused" not in body["error"]["message"]


def test_a_request_past_its_deadline_commits_nothing(client: FlaskClient) -> None:
    """What recengine's worker relies on when it cuts a request
    (recengine.web.server.http.deadline)."""
    import time

    past = {"recengine.deadline": time.monotonic() - 1.0}
    response = client.post("/api/v1/articles", json=record(1), headers=AUTH, environ_base=past)
    assert_error(response, 503, "timeout")
    assert_error(client.get("/api/v1/articles/a1"), 404, "not_found")
    assert post(client, record(1)).status_code == 200  # without a past deadline it goes in


def test_a_missing_article_has_one_phrasing_everywhere(
    client: FlaskClient, factory: sessionmaker[Session], featurizer: Any
) -> None:
    from recengine.pipeline.reindex.full import reindex

    post(client, [record(1), record(2)])
    reindex(factory=factory, featurizer=featurizer)  # so related answers (not model_missing)
    post(client, record(3))
    client.delete("/api/v1/articles/a3", headers=AUTH)
    for missing in ("nope", "a3"):  # never stored; deleted
        answers = [
            client.get(f"/api/v1/articles/{missing}"),
            client.delete(f"/api/v1/articles/{missing}", headers=AUTH),
            client.get(f"/api/v1/articles/{missing}/related"),
            client.get(f"/api/v1/articles/{missing}/duplicates"),
            client.post("/api/v1/users/u/events", json={"article": missing}, headers=AUTH),
        ]
        for response in answers:
            error = assert_error(response, 404, "not_found")["error"]
            assert error["message"] == f"no article with id {missing!r}"
