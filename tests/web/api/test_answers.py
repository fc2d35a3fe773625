"""Cacheable answers: ETag, Cache-Control, 304, and a worker's cache kept exact under writes.

The cache is emptied by every change (by sequence); tests check both directions of the ETag (a
write that changes a list changes its ETag and is in the next answer; one that cannot, does
not). The randomised comparison of every answer, computed and cached, with one computed by an
app without a cache after each write is ``test_answers_random_writes``.
"""

from __future__ import annotations

from collections.abc import Callable
from types import SimpleNamespace
from typing import Any

import pytest
from flask import Flask
from flask.testing import FlaskClient
from werkzeug.test import TestResponse

from recengine.index.follower import Step
from recengine.recommend.answers import AnswerCache, CacheStats
from tests.web.api.test_duplicates import repost
from tests.web.conftest import AUTH

# Words no real article has: an article made of them shares no term with any list.
NONSENSE = " ".join(f"zqx{chr(97 + i)}vwp{chr(97 + j)}" for i in range(8) for j in range(6))


@pytest.fixture
def corpus_size() -> int:
    return 60


# Readers' signals off: with them (shipped: engagement and co-read weights above 0) stored
# answers expire at every ``signals.refresh_s`` boundary (``answers_epoch``), so a hit these
# tests assert would be a miss when the minute turns between two requests.
NO_SIGNALS = {"engagement_weight": 0.0, "coread_weight": 0.0}


@pytest.fixture
def app(make_app: Callable[..., Flask], request: pytest.FixtureRequest) -> Flask:
    """The app of ``tests/web/conftest.py``, without readers' signals (:data:`NO_SIGNALS`)."""
    if "corpus" in request.fixturenames:
        request.getfixturevalue("corpus")
    return make_app(related=NO_SIGNALS)


def stats(app: Flask, op: str = "related") -> CacheStats:
    cache: AnswerCache[Any] = app.wsgi_app.caches[op]  # type: ignore[attr-defined]
    return cache.stats


def get(client: FlaskClient, path: str, etag: str | None = None) -> TestResponse:
    headers = {"If-None-Match": etag} if etag else {}
    return client.get(path, headers=headers)


def post(client: FlaskClient, *records: dict[str, Any]) -> None:
    response = client.post("/api/v1/articles", json=list(records), headers=AUTH)
    assert response.status_code == 200, response.get_json()


def unrelated(n: int) -> dict[str, Any]:
    return {"id": f"nonsense-{n}", "title": f"zqx标题{n}", "content": NONSENSE}


def test_related_answers_carry_an_etag_and_a_conditional_request_gets_304(
    app: Flask, client: FlaskClient, corpus: list[dict[str, Any]]
) -> None:
    path = f"/api/v1/articles/{corpus[0]['id']}/related?k=5"
    first = get(client, path)
    assert first.status_code == 200 and first.get_json()["items"]
    etag = first.headers["ETag"]
    assert etag.startswith('"') and len(etag) > 10
    assert first.headers["Cache-Control"] == "public, max-age=60, stale-while-revalidate=300"
    again = get(client, path)  # from the cache: the same bytes and tag
    assert again.data == first.data and again.headers["ETag"] == etag
    assert stats(app).hits == 1 and stats(app).stored == 1
    fresh = get(client, path, etag)
    assert fresh.status_code == 304 and fresh.data == b"" and fresh.headers["ETag"] == etag
    assert "Content-Type" not in fresh.headers
    assert get(client, path, f'"other", W/{etag}').status_code == 304  # weak comparison
    assert get(client, path, '"other"').status_code == 200
    head = client.head(path)
    assert head.status_code == 200 and head.headers["ETag"] == etag and head.data == b""
    # another page is another answer; the same article's list again is the same tag
    assert get(client, f"/api/v1/articles/{corpus[0]['id']}/related?k=6").headers["ETag"] != etag


def test_a_write_that_changes_a_list_changes_its_etag_and_one_that_cannot_does_not(
    app: Flask, client: FlaskClient, corpus: list[dict[str, Any]]
) -> None:
    query = corpus[5]
    path = f"/api/v1/articles/{query['id']}/related?k=10&min_score=0"
    before = get(client, path)
    etag = before.headers["ETag"]
    items = [i["id"] for i in before.get_json()["items"]]

    hits = stats(app).hits
    assert get(client, path, etag).status_code == 304 and stats(app).hits == hits + 1
    resets = stats(app).resets
    post(client, unrelated(1))  # shares no term with the list: recomputed (by sequence), same tag
    assert get(client, path, etag).status_code == 304 and stats(app).resets > resets

    # a new article made of the query's own text enters the list: new tag, in the answer
    mixed = {"id": "mixed", "title": query["title"], "content": query["content"][:3000]}
    post(client, mixed)
    changed = get(client, path, etag)
    assert changed.status_code == 200 and changed.headers["ETag"] != etag
    assert "mixed" in {i["id"] for i in changed.get_json()["items"]} | {
        s["id"] for s in changed.get_json()["suppressed"]
    }
    etag = changed.headers["ETag"]

    # deleting an item changes the list; so does editing the query article
    assert client.delete(f"/api/v1/articles/{items[0]}", headers=AUTH).status_code == 200
    gone = get(client, path, etag)
    assert gone.status_code == 200 and items[0] not in {i["id"] for i in gone.get_json()["items"]}
    etag = gone.headers["ETag"]
    post(client, {**query, "title": "全新的标题", "content": corpus[40]["content"]})
    edited = get(client, path, etag)
    assert edited.status_code == 200 and edited.headers["ETag"] != etag

    # a title change of an item shows in the list (its title is part of the answer)
    etag, top = edited.headers["ETag"], edited.get_json()["items"][0]["id"]
    record = next(r for r in corpus if r["id"] == top)
    post(client, {**record, "title": record["title"] + "（修订）"})
    retitled = get(client, path, etag)
    assert retitled.headers["ETag"] != etag
    assert retitled.get_json()["items"][0]["title"].endswith("（修订）")


def test_a_new_copy_of_an_item_is_suppressed_at_once(
    client: FlaskClient, corpus: list[dict[str, Any]]
) -> None:
    """A cluster change (a repost of an item) alters suppression: the cached list goes."""
    query = corpus[7]
    path = f"/api/v1/articles/{query['id']}/related?k=20&min_score=0"
    first = get(client, path)
    item = first.get_json()["items"][0]["id"]
    original = next(r for r in corpus if r["id"] == item)
    post(client, repost(original, "copy-of-item"))
    after = get(client, path, first.headers["ETag"]).get_json()
    assert "copy-of-item" not in {i["id"] for i in after["items"]}
    assert "copy-of-item" in {s["id"] for s in after["suppressed"]}


def test_duplicates_answers_are_cached_and_follow_their_cluster(
    app: Flask, client: FlaskClient, corpus: list[dict[str, Any]]
) -> None:
    source = corpus[3]
    path = f"/api/v1/articles/{source['id']}/duplicates"
    first = get(client, path)
    assert first.status_code == 200 and first.get_json()["duplicates"] == []
    etag = first.headers["ETag"]
    assert get(client, path, etag).status_code == 304
    assert stats(app, "duplicates").hits == 1
    post(client, unrelated(2))
    assert get(client, path, etag).status_code == 304  # recomputed: the same answer, same tag
    post(client, repost(source, "copy"))
    after = get(client, path, etag)
    assert after.status_code == 200 and after.headers["ETag"] != etag
    assert [d["id"] for d in after.get_json()["duplicates"]] == ["copy"]
    etag = after.headers["ETag"]
    assert client.delete("/api/v1/articles/copy", headers=AUTH).status_code == 200
    emptied = get(client, path, etag)
    assert emptied.status_code == 200 and emptied.get_json()["duplicates"] == []


def test_health_has_an_etag_and_writes_and_errors_are_never_stored(
    client: FlaskClient, corpus: list[dict[str, Any]]
) -> None:
    health = client.get("/api/v1/health")
    assert health.headers["Cache-Control"] == "no-cache" and health.headers["ETag"]
    assert get(client, "/api/v1/health", health.headers["ETag"]).status_code == 304
    written = client.post("/api/v1/articles", json=unrelated(3), headers=AUTH)
    assert written.headers["Cache-Control"] == "no-store"
    missing = client.get("/api/v1/articles/nope/related")
    assert missing.status_code == 404 and missing.headers["Cache-Control"] == "no-store"
    assert "ETag" not in missing.headers
    assert client.get("/api/v1/users/r/feed").headers["Cache-Control"] == "no-store"


def test_private_reads_are_private_and_need_the_key_from_the_cache_too(
    make_app: Callable[..., Flask], corpus: list[dict[str, Any]]
) -> None:
    client = make_app(web={"public_reads": False}, related=NO_SIGNALS).test_client()
    path = f"/api/v1/articles/{corpus[0]['id']}/related"
    assert client.get(path, headers=AUTH).headers["Cache-Control"].startswith("private, ")
    assert client.get(path).status_code == 401  # a cached answer is not a way around the key
    assert client.get(path, headers={"Authorization": "Bearer wrong"}).status_code == 403


def test_a_reset_between_computing_and_storing_drops_the_answer() -> None:
    """Answers depend on the dense part too, which follows SQL beside the related index: its
    step empties the caches at their position (``answers.drop``), and an answer computed
    before the step (e.g. without the dense part while it was opening) is not stored."""
    cache: AnswerCache[str] = AnswerCache(10_000)
    cache.reset(1, 5)
    assert cache.put("a", "answer", size=6, version=1, seq=5)
    before = cache.generation
    cache.clear()  # what drop() does on a step of the dense index
    assert cache.get("a", version=1, seq=5) is None  # emptied, still at (1, 5)
    assert not cache.put("b", "stale", size=5, version=1, seq=5, generation=before)
    assert cache.get("b", version=1, seq=5) is None
    assert cache.put("b", "fresh", size=5, version=1, seq=5, generation=cache.generation)
    assert cache.get("b", version=1, seq=5) == "fresh"


def test_the_caches_follow_the_dense_index_too(app: Flask) -> None:
    services = app.extensions["recengine"]
    caches = list(app.wsgi_app.caches.values())  # type: ignore[attr-defined]
    generations = [c.generation for c in caches]
    at = SimpleNamespace(version=1, seq=5)
    for listener in services.index.dense._listeners:
        listener(Step(at, at, 5, None))  # a compacted copy swapped in: nothing changed
    assert [c.generation for c in caches] == generations
    for listener in services.index.dense._listeners:
        listener(Step(None, at, 0, None))  # opened (or caught up): answers may change
    assert [c.generation for c in caches] == [g + 1 for g in generations]
