"""``GET /api/v1/articles/<id>/duplicates`` and the demo page's editor view, on real text."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from flask.testing import FlaskClient
from sqlalchemy.orm import Session, sessionmaker

from recengine.pipeline.featurize import Featurizer
from recengine.pipeline.reindex import reindex
from tests.factories import javaguide_records
from tests.web.conftest import AUTH
from tests.web.test_articles import assert_error


def repost(original: dict[str, Any], new_id: str) -> dict[str, Any]:
    """What reposting really does: a header and a footer around the same text."""
    content = f"转载自技术公众号，原文如下。\n\n{original['content']}\n\n（完）欢迎关注与转发。"
    return {**original, "id": new_id, "content": content}


@pytest.fixture
def corpus(
    client: FlaskClient, factory: sessionmaker[Session], featurizer: Featurizer, data_dir: Path
) -> list[dict[str, Any]]:
    records = javaguide_records(data_dir, 30)
    assert client.post("/api/v1/articles", json=records, headers=AUTH).status_code == 200
    reindex(factory=factory, featurizer=featurizer)
    return records


def test_a_repost_joins_the_cluster_of_the_original(
    client: FlaskClient, corpus: list[dict[str, Any]]
) -> None:
    original = corpus[3]["id"]
    assert (
        client.post("/api/v1/articles", json=repost(corpus[3], "copy"), headers=AUTH).status_code
        == 200
    )
    body = client.get(f"/api/v1/articles/{original}/duplicates").get_json()
    assert body["article"] == original and body["canonical"] == original  # ingested first
    assert [d["id"] for d in body["duplicates"]] == ["copy"]
    copy = body["duplicates"][0]
    assert (
        copy["canonical"] is False
        and copy["resemblance"] > 0.5
        and copy["cosine"] > 0.9
        and copy["shared_terms"]
        and copy["rule"] == "resemblance"
        and copy["containment"] >= copy["coverage"] > 0.5
    )
    other = client.get("/api/v1/articles/copy/duplicates").get_json()
    assert other["canonical"] == original
    assert [(d["id"], d["canonical"]) for d in other["duplicates"]] == [(original, True)]

    page = client.get(f"/?article={original}").get_data(as_text=True)
    assert "本文的重复稿" in page and "?article=copy" in page  # the editors' view of its cluster


def test_an_article_without_copies_is_its_own_canonical(
    client: FlaskClient, corpus: list[dict[str, Any]]
) -> None:
    alone = corpus[0]["id"]
    body = client.get(f"/api/v1/articles/{alone}/duplicates").get_json()
    assert body == {"article": alone, "canonical": alone, "duplicates": []}
    assert_error(client.get("/api/v1/articles/nope/duplicates"), 404, "not_found")


def test_deleting_the_canonical_promotes_the_copy(
    client: FlaskClient, corpus: list[dict[str, Any]]
) -> None:
    original = corpus[5]["id"]
    client.post("/api/v1/articles", json=repost(corpus[5], "copy"), headers=AUTH)
    assert client.delete(f"/api/v1/articles/{original}", headers=AUTH).status_code == 200
    body = client.get("/api/v1/articles/copy/duplicates").get_json()
    assert body == {"article": "copy", "canonical": "copy", "duplicates": []}
    assert_error(client.get(f"/api/v1/articles/{original}/duplicates"), 404, "not_found")
