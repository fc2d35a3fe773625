"""``GET /api/v1/articles/<id>/related.html``: the JSON list as an escaped HTML fragment."""

from __future__ import annotations

import re
from typing import Any
from urllib.parse import quote

import pytest
from flask.testing import FlaskClient

from tests.recommend.test_fragment import HOSTILE, parsed
from tests.web.api.test_articles import assert_error
from tests.web.conftest import AUTH


@pytest.fixture
def corpus_size() -> int:
    return 40


def fragment(client: FlaskClient, article: str, query: str = "") -> Any:
    return client.get(f"/api/v1/articles/{quote(article, safe='')}/related.html{query}")


def linked(corpus: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [{**r, "url": f"/p/{r['id']}"} for r in corpus]


@pytest.mark.parametrize("layout", ["list", "cards", "grid"])
def test_the_fragment_is_the_json_list_in_the_widgets_markup(
    client: FlaskClient, corpus: list[dict[str, Any]], layout: str
) -> None:
    assert client.post("/api/v1/articles", json=linked(corpus), headers=AUTH).status_code == 200
    article = corpus[1]["id"]
    items = client.get(f"/api/v1/articles/{article}/related?k=6").get_json()["items"]
    response = fragment(client, article, f"?k=6&layout={layout}&lang=zh-CN")
    assert response.status_code == 200 and response.mimetype == "text/html"
    assert response.mimetype_params["charset"] == "utf-8"
    html = response.get_data(as_text=True)
    assert html.startswith(f'<section class="recengine-related recengine-layout-{layout}')
    assert ">相关文章</h2>" in html
    elements = parsed(html)
    hrefs = [a["href"] for tag, a in elements.tags if tag == "a"]
    assert hrefs == [f"/p/{i['id']}" for i in items]  # the same list, in order
    titles = re.findall(r'<span class="recengine-title">(.*?)</span>', html)
    assert len(titles) == len(items)
    assert ("<img" in html) is (layout != "list")


def test_the_fragment_takes_the_widgets_options_and_refuses_others(
    client: FlaskClient, corpus: list[dict[str, Any]]
) -> None:
    article = corpus[1]["id"]
    link = quote("/post/{id}")
    html = fragment(
        client,
        article,
        f"?k=3&layout=list&show=image,summary&heading=More&heading_level=3&link={link}",
    ).get_data(as_text=True)
    assert '<h3 class="recengine-heading"' in html and ">More</h3>" in html
    assert html.count('class="recengine-item"') == 3 and 'href="/post/' in html  # no urls stored
    assert "recengine-summary" in html and "<time" not in html
    for bad in (
        "?layout=carousel",
        "?show=image,votes",
        "?heading_level=7",
        "?lang=<x>",
        "?k=0",
        "?colour=red",
    ):
        assert_error(fragment(client, article, bad), 422, "invalid_request")
    assert_error(fragment(client, "no-such-article"), 404, "not_found")


def test_the_fragment_is_cacheable_like_the_json(
    client: FlaskClient, corpus: list[dict[str, Any]]
) -> None:
    article = corpus[2]["id"]
    first = fragment(client, article, "?link=/p/{id}")
    assert first.status_code == 200 and "public" in first.headers["Cache-Control"]
    etag = first.headers["ETag"]
    again = client.get(
        f"/api/v1/articles/{article}/related.html?link=/p/{{id}}",
        headers={"If-None-Match": etag},
    )
    assert again.status_code == 304
    empty = fragment(client, article, "?min_score=0.999&link=/p/{id}")
    assert empty.status_code == 200 and empty.get_data() == b""  # nothing related: nothing shown
    paths = client.get("/openapi.json").get_json()["paths"]
    assert "get" in paths["/api/v1/articles/{article_id}/related.html"]


def test_hostile_text_and_urls_stay_inert_in_the_fragment(
    client: FlaskClient, corpus: list[dict[str, Any]]
) -> None:
    mixed = corpus[0]["content"][:1500] + "\n" + corpus[2]["content"][:1500]
    hostile = {
        "id": "hostile",
        "url": "/p/hostile",
        "content": mixed,
        **{k: v for k, v in HOSTILE.items() if k in ("title", "summary", "category", "image")},
    }
    assert client.post("/api/v1/articles", json=hostile, headers=AUTH).status_code == 200
    found = False
    for article in (corpus[0]["id"], corpus[2]["id"]):
        html = fragment(client, article, "?k=40&min_score=0&layout=grid").get_data(as_text=True)
        if "/p/hostile" not in html:
            continue
        found = True
        elements = parsed(html)
        assert not [t for t, _ in elements.tags if t in ("script", "svg")]
        assert all(not n.startswith("on") for _, a in elements.tags for n in a)
        assert "javascript:" not in html and 'src="x"' not in html
        assert HOSTILE["title"] in "".join(elements.text)  # shown as text
    assert found, "the hostile article should be related to articles 0 or 2"
