"""The widget's requests, warnings and heading, in a real headless Chromium.

* A list request carries a split id (``reader=`` or ``session=``) only while an A/B test runs,
  as the served ``widget.js`` says: otherwise every reader of a page asks for the same URL and
  a shared cache (a CDN) answers them all.
* An item the widget cannot link (no url, or not http(s), and no ``data-recengine-link``) is
  left out with one console warning per list naming the ids.
* The heading follows the page's language (``lang``), unless the page names it; its level is
  ``data-recengine-heading-level``.
"""

from __future__ import annotations

import json
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from flask import Flask, request
from markupsafe import escape
from playwright.sync_api import Browser, Page

from recengine.config import load_settings
from recengine.pipeline.featurize import Featurizer
from recengine.pipeline.reindex.full import reindex
from recengine.storage.db import make_engine, make_session_factory
from recengine.storage.migrate import upgrade
from recengine.text.words.tokenize import Tokenizer
from recengine.web import create_app
from tests.factories import javaguide_records
from tests.web.conftest import AUTH, KEY
from tests.web.livesupport import live_server
from tests.web.pages.test_browser import NO_ICON, Console, Warnings, browser, settle

__all__ = ["browser"]  # the module-scoped Chromium of test_browser, shared as a fixture

EXPERIMENT = {
    "name": "floor-test",
    "variants": {"control": {"share": 1}, "strict": {"share": 1, "min_score": 0.08}},
}


def page_app() -> Flask:
    """An article page embedding the widget: ``/p/<id>?api=...`` with optional ``lang``,
    ``heading``, ``level``, ``link`` (data-recengine-link) and ``reader``."""
    app = Flask("pages")

    @app.get("/p/<path:article_id>")
    def page(article_id: str) -> str:
        attributes = {"data-recengine-article": article_id, "data-recengine-k": "8"}
        for name in ("heading", "link", "reader"):
            if name in request.args:
                attributes[f"data-recengine-{name}"] = request.args[name]
        if "level" in request.args:
            attributes["data-recengine-heading-level"] = request.args["level"]
        shown = " ".join(f"{k}='{escape(v)}'" for k, v in attributes.items())
        lang = escape(request.args.get("lang", "en"))
        return (
            f"<!doctype html><html lang='{lang}'><head>{NO_ICON}<title>p</title></head><body>"
            f"<div id='slot' {shown}></div>"
            f"<script src='{escape(request.args['api'])}/widget.js'></script></body></html>"
        )

    return app


@dataclass
class Sites:
    plain: str  # the service, no A/B test
    tested: str  # the same database served with an A/B test
    pages: str  # another origin with article pages
    ids: list[str]
    linked: set[str]  # articles stored with a url


@pytest.fixture(scope="module")
def sites(
    tmp_path_factory: pytest.TempPathFactory, tokenizer: Tokenizer, data_dir: Path
) -> Iterator[Sites]:
    folder = tmp_path_factory.mktemp("widget")
    with live_server(page_app()) as pages:
        base = {"data_dir": str(folder), "api_key": KEY, "web": {"cors_origins": [pages]}}
        settings = load_settings(base)
        engine = make_engine(settings.resolved_database_url)
        upgrade(engine)
        records = javaguide_records(data_dir, 40)
        for i, r in enumerate(records):  # every third has no url, one a url it cannot follow
            r["url"] = None if i % 3 == 0 else f"https://blog.example.com/{i}"
        records[4]["url"] = "javascript:alert(1)"
        plain = create_app(settings, tokenizer=tokenizer)
        assert (
            plain.test_client().post("/api/v1/articles", json=records, headers=AUTH).status_code
            == 200
        )
        reindex(factory=make_session_factory(engine), featurizer=Featurizer(settings, tokenizer))
        engine.dispose()
        tested = create_app(load_settings({**base, "experiment": EXPERIMENT}), tokenizer=tokenizer)
        with live_server(plain) as plain_url, live_server(tested) as tested_url:
            linked = {r["id"] for r in records if r["url"] and r["url"].startswith("https:")}
            yield Sites(plain_url, tested_url, pages, [r["id"] for r in records], linked)


def list_requests(page: Page, asked: list[str]) -> list[str]:
    """``asked``, to which every related-list URL the page requests is appended."""
    page.on("request", lambda r: asked.append(r.url) if "/related" in r.url else None)
    return asked


def test_no_split_id_is_sent_while_no_ab_test_runs(browser: Browser, sites: Sites) -> None:
    """Without an A/B test every reader of a page asks for the same URL (a CDN can answer them
    all); with one, each list names its split id, the reader's when the page gives one."""
    article = sites.ids[1]
    asked: list[str] = []
    for reader in ("", "&reader=r1", ""):  # three readers, each in a browser of their own
        context = browser.new_context()
        page = context.new_page()
        list_requests(page, asked)
        page.goto(f"{sites.pages}/p/{article}?api={sites.plain}&link=/p/{{id}}{reader}")
        settle(page)
        context.close()
    assert len(asked) == 3 and len(set(asked)) == 1, asked
    assert "session=" not in asked[0] and "reader=" not in asked[0]
    page = browser.new_page()
    asked = list_requests(page, [])

    page.goto(f"{sites.pages}/p/{article}?api={sites.tested}&link=/p/{{id}}")
    settle(page)
    assert "session=" in asked[-1]  # an A/B test: the tab's own id splits the traffic
    page.goto(f"{sites.pages}/p/{article}?api={sites.tested}&link=/p/{{id}}&reader=r1")
    settle(page)
    assert "reader=r1" in asked[-1] and "session=" not in asked[-1]
    page.close()


def test_each_item_left_out_is_named_once_per_list(browser: Browser, sites: Sites) -> None:
    """Some items have no url (and the page gives no data-recengine-link) or one that is not
    http(s): the others are shown, and one warning per list names the ones left out."""
    console, warnings = Console(), Warnings()
    page = warnings.watch(console.watch(browser.new_page()))
    lists = 0
    for article in sites.ids[1:6]:
        with urllib.request.urlopen(f"{sites.plain}/api/v1/articles/{article}/related?k=8") as r:
            items = json.load(r)["items"]
        left_out = [i["id"] for i in items if i["id"] not in sites.linked]
        before = len(warnings.ours())
        page.goto(f"{sites.pages}/p/{article}?api={sites.plain}")
        settle(page)
        shown = [a.get_attribute("href") or "" for a in page.locator("#slot a").all()]
        assert len(shown) == len(items) - len(left_out)
        assert all(h.startswith("https://blog.example.com/") for h in shown)
        said = warnings.ours()[before:]
        if not left_out:
            assert said == []
            continue
        lists += 1
        assert len(said) == 1, warnings.texts  # one per list
        assert f"{len(left_out)} of {len(items)} related articles of {article} left out" in said[0]
        assert "data-recengine-link" in said[0] and said[0].endswith(
            f"(ids: {', '.join(left_out)})"
        )
    assert lists >= 2  # the corpus gives lists with some items left out
    assert console.page_errors == []
    page.close()


@pytest.mark.parametrize(
    ("query", "tag", "text"),
    [
        ("lang=en", "h2", "Related articles"),
        ("lang=en-GB&level=3", "h3", "Related articles"),
        ("lang=zh-CN", "h2", "相关文章"),
        ("lang=zh-Hant&level=4", "h4", "相关文章"),
        ("lang=", "h2", "Related articles"),
        ("lang=fr&heading=À lire aussi&level=9", "h2", "À lire aussi"),  # a bad level: h2
    ],
)
def test_the_heading_follows_the_pages_language(
    browser: Browser, sites: Sites, query: str, tag: str, text: str
) -> None:
    page = browser.new_page()
    page.goto(f"{sites.pages}/p/{sites.ids[1]}?api={sites.plain}&link=/p/{{id}}&{query}")
    settle(page)
    heading = page.locator("#slot .recengine-heading")
    assert heading.evaluate("e => e.tagName.toLowerCase()") == tag
    assert heading.inner_text() == text
    page.close()
