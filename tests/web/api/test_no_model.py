"""Before the first model, ``/duplicates`` answers 503 ``model_missing`` as ``/related`` does
(an empty cluster would read as "no duplicates"); the demo page still opens."""

from __future__ import annotations

from flask.testing import FlaskClient

from tests.factories import record
from tests.web.api.test_articles import assert_error
from tests.web.conftest import AUTH


def test_duplicates_before_any_model_is_503(client: FlaskClient) -> None:
    copies = [record(1), {**record(1), "id": "copy"}]
    assert client.post("/api/v1/articles", json=copies, headers=AUTH).status_code in (200, 201)
    for path in ("/api/v1/articles/a1/duplicates", "/api/v1/articles/a1/related"):
        body = assert_error(client.get(path), 503, "model_missing")
        assert "recengine reindex" in body["error"]["message"]
    assert_error(client.get("/api/v1/articles/nope/duplicates"), 404, "not_found")
    spec = client.get("/openapi.json").get_json()
    answers = spec["paths"]["/api/v1/articles/{article_id}/duplicates"]["get"]["responses"]
    assert "503" in answers
    page = client.get("/?article=a1")
    assert page.status_code == 200 and "<h1>标题 1</h1>" in page.get_data(as_text=True)
