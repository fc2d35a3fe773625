"""Stored urls in the widget, in a real headless Chromium (issue 46, item 14).

An article's url is used as a link when it names its scheme (``https://...``: any site, as the
site owner wrote it) or resolves to the embedding page's own site (``/2024/x.html``,
``//<this host>/x``); a url without a scheme that resolves elsewhere (``//evil.example/x``,
``/\\evil.example/x``) or to another scheme (``javascript:``) is never a link.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urljoin

import pytest
from flask import Flask
from markupsafe import escape
from playwright.sync_api import Browser

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
from tests.web.pages.test_browser import Console, browser, settle  # noqa: F401 (the fixture)

K = 8


def page_app() -> Flask:
    """A site's article page: the README's embed, no link template (only stored urls link)."""
    app = Flask("site")

    @app.get("/2024/<path:article_id>")
    def post(article_id: str) -> str:
        from flask import request

        api = escape(request.args["api"])
        return (
            "<!doctype html><html lang='en'><head><title>post</title></head><body>"
            f"<div id='slot' data-recengine-article='{escape(article_id)}'"
            f" data-recengine-k='{K}'></div><script src='{api}/widget.js'></script></body></html>"
        )

    return app


@dataclass
class Placed:
    api: str
    site: str
    article: str
    urls: dict[str, str]  # related article id -> its stored url


def stored_urls(site: str) -> list[str]:
    own = site.split("://", 1)[1]  # host:port of the embedding site
    return [
        "/2024/own-path.html",  # a path on this site
        "https://other.example/syndicated",  # another site, by its scheme
        f"//{own}/protocol-relative-own",  # this site, without its scheme
        "//evil.example/x",  # another site, without its scheme: never a link
        "/\\evil.example/y",  # a browser reads "/\" as "//"
        "\\\\evil.example/z",
        "javascript:window.__clicked=1",
        "relative/path.html",  # a path relative to the page's folder
    ]


@pytest.fixture(scope="module")
def placed(
    tmp_path_factory: pytest.TempPathFactory, tokenizer: Tokenizer, data_dir: Path
) -> Iterator[Placed]:
    folder = tmp_path_factory.mktemp("browser-urls")
    with live_server(page_app()) as site:
        settings = load_settings(
            {"data_dir": str(folder), "api_key": KEY, "web": {"cors_origins": [site]}}
        )
        engine = make_engine(settings.resolved_database_url)
        upgrade(engine)
        records = javaguide_records(data_dir, 40)
        app = create_app(settings, tokenizer=tokenizer)
        client = app.test_client()
        assert client.post("/api/v1/articles", json=records, headers=AUTH).status_code == 200
        reindex(factory=make_session_factory(engine), featurizer=Featurizer(settings, tokenizer))
        engine.dispose()
        article = records[1]["id"]
        listed = client.get(f"/api/v1/articles/{article}/related?k={K}&min_score=0").get_json()
        by_id = {r["id"]: r for r in records}
        urls = dict(zip([i["id"] for i in listed["items"]], stored_urls(site), strict=True))
        changed = [{**by_id[i], "url": url} for i, url in urls.items()]
        assert client.post("/api/v1/articles", json=changed, headers=AUTH).status_code == 200
        with live_server(app) as api:
            yield Placed(api, site, article, urls)


def test_only_explicit_or_own_site_urls_become_links(
    browser: Browser,  # noqa: F811
    placed: Placed,
    tmp_path: Path,
) -> None:
    shots = Path(os.environ.get("RECENGINE_SCREENSHOTS", tmp_path))
    console = Console()
    page = console.watch(browser.new_page())
    url = f"{placed.site}/2024/{placed.article}?api={placed.api}"
    page.goto(url)
    settle(page)
    hrefs = page.eval_on_selector_all("#slot a.recengine-link", "links => links.map(a => a.href)")
    site = placed.site
    assert sorted(hrefs) == sorted(
        [
            f"{site}/2024/own-path.html",
            "https://other.example/syndicated",
            f"{site}/protocol-relative-own",
            urljoin(url, "relative/path.html"),
        ]
    ), hrefs
    assert not any("evil" in h or h.startswith("javascript") for h in hrefs)
    page.screenshot(path=str(shots / "widget-urls.png"))
    assert console.page_errors == []
    page.close()
