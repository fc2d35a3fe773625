"""Ids in URL paths (``recengine.web.api.paths``): ids with slashes, ids ending in an operation's
name.

Through the Flask test client (which passes the raw path as ``RAW_URI``, as gunicorn does); the
served check is in ``test_slow_clients.py``.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pytest
from flask.testing import FlaskClient
from sqlalchemy.orm import Session, sessionmaker

from recengine.pipeline.featurize import Featurizer
from recengine.pipeline.ingest.ingester import Ingester
from recengine.web.api.paths import split_article_path
from tests.factories import javaguide_records
from tests.templates import ingest_and_reindex, load_cloned
from tests.web.api.test_articles import assert_error
from tests.web.api.test_duplicates import repost
from tests.web.conftest import AUTH

AWKWARD = ["x/related", "x/duplicates", "related", "a/b/related/duplicates", "100%/related"]


def test_split_article_path() -> None:
    assert split_article_path("x/related", raw=True) == ("x", "related")
    assert split_article_path("x%2Frelated", raw=True) == ("x/related", "")
    assert split_article_path("x%2Frelated/related", raw=True) == ("x/related", "related")
    assert split_article_path("x/related/duplicates", raw=True) == ("x/related", "duplicates")
    assert split_article_path("related", raw=True) == ("related", "")
    assert split_article_path("/related", raw=True) == ("/related", "")
    assert split_article_path("csdn/2024/%E6%96%87", raw=True) == ("csdn/2024/文", "")
    assert split_article_path("a%FF", raw=True) is None  # not UTF-8: no such endpoint
    assert split_article_path("", raw=True) is None


@pytest.fixture
def corpus(
    factory: sessionmaker[Session], featurizer: Featurizer, data_dir: Path
) -> list[dict[str, Any]]:
    """Real articles, and a repost of the first under each awkward id (written after the
    reindex, as a site's new articles are)."""
    records = javaguide_records(data_dir, 20)
    load_cloned(factory, featurizer, records, _load_with_reposts)
    return records


def _load_with_reposts(
    factory: sessionmaker[Session], featurizer: Featurizer, records: Sequence[dict[str, Any]]
) -> None:
    ingest_and_reindex(factory, featurizer, records)
    copies = [repost(dict(records[0]), awkward) for awkward in AWKWARD]
    Ingester(factory, featurizer).ingest_records(copies)


@pytest.mark.parametrize("awkward", AWKWARD)
def test_every_operation_on_an_id_ending_in_an_operations_name(
    client: FlaskClient, corpus: list[dict[str, Any]], awkward: str
) -> None:
    encoded = quote(awkward, safe="")
    article = client.get(f"/api/v1/articles/{encoded}")
    assert article.status_code == 200 and article.get_json()["id"] == awkward

    related = client.get(f"/api/v1/articles/{encoded}/related?k=50").get_json()
    assert related["article"] == awkward
    assert corpus[0]["id"] in {s["id"] for s in related["suppressed"]}  # its original
    # the operation's name may follow an unencoded id too
    unencoded = client.get(f"/api/v1/articles/{quote(awkward)}/related?k=50").get_json()
    assert unencoded == related

    duplicates = client.get(f"/api/v1/articles/{encoded}/duplicates").get_json()
    assert duplicates["article"] == awkward and duplicates["canonical"] == corpus[0]["id"]

    deleted = client.delete(f"/api/v1/articles/{encoded}", headers=AUTH).get_json()
    assert deleted == {"id": awkward, "deleted": True}
    assert_error(client.get(f"/api/v1/articles/{encoded}"), 404, "not_found")
    # the original is still there, and no longer lists the deleted copy
    assert client.get(f"/api/v1/articles/{quote(corpus[0]['id'], safe='')}").status_code == 200
    left = client.get(f"/api/v1/articles/{corpus[0]['id']}/duplicates").get_json()
    assert awkward not in {d["id"] for d in left["duplicates"]}


def test_unencoded_operation_names_keep_their_meaning(
    client: FlaskClient, corpus: list[dict[str, Any]]
) -> None:
    """``x/related`` unencoded is the list of ``x``, as before; ``x`` is not stored."""
    assert_error(client.get("/api/v1/articles/x/related"), 404, "not_found")
    first = corpus[0]["id"]
    assert client.get(f"/api/v1/articles/{first}/related").get_json()["article"] == first
    assert client.get(f"/api/v1/articles/{first}/duplicates").get_json()["article"] == first


def test_ids_with_slashes_work_encoded_and_not(client: FlaskClient) -> None:
    body = {"id": "csdn/2024/文章 1", "title": "标题"}
    assert client.post("/api/v1/articles", json=body, headers=AUTH).status_code == 200
    for path in ("csdn/2024/文章%201", quote("csdn/2024/文章 1", safe=""), "csdn%2F2024/文章%201"):
        reply = client.get(f"/api/v1/articles/{path}")
        assert reply.status_code == 200 and reply.get_json()["id"] == body["id"]
    assert_error(client.get("/api/v1/articles/a%FF"), 404, "not_found")


def test_reader_ids_with_slashes_control_characters_or_operation_names(
    client: FlaskClient,
) -> None:
    """A reader's id followed by an operation may hold anything; a control character is
    refused by the id's rule (422), not left unrouted (404)."""
    for user in ("u/feed", "a/b/events", "读者 1"):
        for sent in (quote(user), quote(user, safe="")):
            reply = client.get(f"/api/v1/users/{sent}/feed", headers=AUTH)
            assert reply.status_code in (200, 503)
    assert_error(client.get("/api/v1/users/a%0Ab/feed", headers=AUTH), 422, "invalid_request")
    assert_error(client.get("/api/v1/articles/a%0Ab"), 422, "invalid_request")


def test_the_schema_says_how_to_send_an_id(client: FlaskClient) -> None:
    spec = client.get("/openapi.json").get_json()
    parameters = spec["paths"]["/api/v1/articles/{article_id}"]["get"]["parameters"]
    (article_id,) = [p for p in parameters if p["name"] == "article_id"]
    assert "%2F" in article_id["description"] and article_id["schema"]["maxLength"] == 255
