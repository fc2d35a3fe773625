"""``GET /api/v1/articles/<id>/duplicates`` and the demo page's editor view, on real text."""

from __future__ import annotations

from typing import Any

import numpy as np
from flask.testing import FlaskClient

from recengine.pipeline.featurize import compared_of
from recengine.text.neardup.compare import article_passages
from tests.web.api.test_articles import assert_error
from tests.web.conftest import AUTH


def excerpt_of(original: dict[str, Any], share: float) -> dict[str, Any]:
    """The first ``share`` of the paragraphs and a "read on" link, as aggregators post."""
    paragraphs = original["content"].split("\n\n")
    kept = paragraphs[: max(1, int(len(paragraphs) * share))]
    return {**original, "id": "excerpt", "content": "\n\n".join(kept) + "\n\n……阅读全文"}


def _only_contained(source: dict[str, Any], excerpt: dict[str, Any]) -> bool:
    a = compared_of(source["title"], source["content"])
    b = compared_of(excerpt["title"], excerpt["content"])
    shared = np.intersect1d(a.shingles, b.shingles).size
    jaccard = shared / np.union1d(a.shingles, b.shingles).size
    coverage = shared / a.shingles.size
    held = [article_passages(d["title"], d["content"]) for d in (source, excerpt)]
    return jaccard < 0.45 and coverage >= 0.36 and bool(np.intersect1d(*held).size)


def contained_excerpt(corpus: list[dict[str, Any]]) -> tuple[dict[str, Any], dict[str, Any]]:
    """A long article and 40% of it: all of it contained, covering 35-45% of the source (a
    resemblance under 0.45: only the containment rule holds). Of the long ones, the first that
    fits and whose excerpt is a candidate (shares a passage hash: likely, not certain;
    candidate recall is measured in bench/neardup_quality.py)."""
    return next(
        (r, e)
        for r in sorted(corpus, key=lambda r: -len(r["content"]))
        for e in [excerpt_of(r, 0.4)]
        if _only_contained(r, e)
    )


def repost(original: dict[str, Any], new_id: str) -> dict[str, Any]:
    """What reposting really does: a header and a footer around the same text."""
    content = f"转载自技术公众号，原文如下。\n\n{original['content']}\n\n（完）欢迎关注与转发。"
    return {**original, "id": new_id, "content": content}


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
    assert copy["joined_by"] == "resemblance" and copy["joined_score"] > 0.5  # as stored
    other = client.get("/api/v1/articles/copy/duplicates").get_json()
    assert other["canonical"] == original
    assert [(d["id"], d["canonical"]) for d in other["duplicates"]] == [(original, True)]
    assert other["duplicates"][0]["joined_by"] == ""  # the canonical joined nothing

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


def test_an_excerpt_is_stored_and_shown_as_contained_in_its_source(
    client: FlaskClient, corpus: list[dict[str, Any]]
) -> None:
    source, record = contained_excerpt(corpus)
    assert client.post("/api/v1/articles", json=record, headers=AUTH).status_code == 200
    body = client.get(f"/api/v1/articles/{source['id']}/duplicates").get_json()
    (copy,) = body["duplicates"]
    assert copy["id"] == "excerpt" and copy["rule"] == "containment"
    assert copy["joined_by"] == "containment" and copy["joined_score"] >= 0.8


def test_suppressed_entries_say_which_rule_matched(
    client: FlaskClient, corpus: list[dict[str, Any]]
) -> None:
    # a source with a repost (resemblance) and an excerpt only the containment rule joins
    source, excerpt = contained_excerpt(corpus)
    copies = [excerpt, repost(source, "copy")]
    assert client.post("/api/v1/articles", json=copies, headers=AUTH).status_code == 200
    joined = {
        d["id"]: d
        for d in client.get(f"/api/v1/articles/{source['id']}/duplicates").get_json()["duplicates"]
    }
    assert {d["joined_by"] for d in joined.values()} == {"containment", "resemblance"}

    def cuts(article: str) -> dict[str, dict[str, Any]]:
        body = client.get(f"/api/v1/articles/{article}/related?k=50").get_json()
        return {s["id"]: s for s in body["suppressed"]}

    # each copy is cut as the source's duplicate, with the rule and figure it joined by
    mine = cuts(source["id"])
    for name, rule in (("excerpt", "containment"), ("copy", "resemblance")):
        assert mine[name]["duplicate_of"] == source["id"] and mine[name]["via"] is None
        assert mine[name]["rule"] == rule == joined[name]["joined_by"]
        assert mine[name]["score"] == joined[name]["joined_score"]
    assert mine["excerpt"]["score"] >= 0.8 and mine["copy"]["score"] >= 0.45
    # from the excerpt: the source joined it by containment; the copy met it only through the
    # canonical (the source), so its figure is its own join to the canonical
    theirs = cuts("excerpt")
    assert theirs[source["id"]]["rule"] == "containment" and theirs[source["id"]]["via"] is None
    assert theirs["copy"]["duplicate_of"] == "excerpt" and theirs["copy"]["via"] == source["id"]
    assert (theirs["copy"]["rule"], theirs["copy"]["score"]) == (
        "resemblance",
        joined["copy"]["joined_score"],
    )
    # the editor view names the rule of every cut and of every duplicate
    page = client.get(f"/?article={excerpt['id']}").get_data(as_text=True)
    assert page.count('data-rule="containment"') >= 2  # the source cut; the source as duplicate
    assert '<td class="rule" data-rule="resemblance">文本相似度' in page and "经由主稿" in page
