"""The editor view of the demo page and the widget's feedback, in a real headless Chromium.

The editor's buttons store real overrides through the API with a key typed once, and the lists
on the page change accordingly; a hostile reason is shown as text. The widget, embedded by
another origin, reports its impressions and clicks with ``navigator.sendBeacon`` to the real
endpoint, and they reach the daily counters in SQL. Nothing is mocked.
"""

from __future__ import annotations

import json
import os
import time
import urllib.request
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pytest
from flask import Flask, request
from markupsafe import escape
from playwright.sync_api import Browser, Page
from sqlalchemy.orm import Session, sessionmaker

from recengine.config import load_settings
from recengine.pipeline.featurize import Featurizer
from recengine.pipeline.reindex.full import reindex
from recengine.storage.db import make_engine, make_session_factory
from recengine.storage.migrate import upgrade
from recengine.storage.rows.feedback import counts_between
from recengine.text.words.tokenize import Tokenizer
from recengine.web import create_app
from tests.neardup_helpers import corpus
from tests.web.conftest import AUTH, KEY
from tests.web.livesupport import live_server
from tests.web.pages.test_browser import TIMEOUT_MS, Console, browser, settle
from tests.web.serving import served

__all__ = ["browser"]  # the module-scoped Chromium of test_browser, shared as a fixture

SHOTS = os.environ.get("RECENGINE_SCREENSHOTS")  # a folder: the tests save what they saw there
XSS_REASON = '<img src=x onerror="window.__xss=1"></span><script>window.__xss=2</script>'


def host_app() -> Flask:
    """Another origin's article page: a tall article, then the widget (off screen at first)."""
    app = Flask("tall-host")

    @app.get("/post/<path:article_id>")
    def post(article_id: str) -> str:
        api = escape(request.args["api"])
        return (
            f"<!doctype html><html lang='en'><head><title>post {escape(article_id)}</title>"
            f"</head><body><h1>post</h1><div style='height: 3000px'>article text</div>"
            f"<div id='slot' data-recengine-article='{escape(article_id)}' data-recengine-k='5'"
            f" data-recengine-api='{api}' data-recengine-link='/post/{{id}}?api={api}'></div>"
            f"<script src='{api}/widget.js'></script></body></html>"
        )

    return app


@dataclass
class Editorial:
    api: str
    host: str
    factory: sessionmaker[Session]
    bases: list[dict[str, Any]]
    reposts: list[dict[str, Any]]


@pytest.fixture(scope="module")
def site(
    tmp_path_factory: pytest.TempPathFactory, tokenizer: Tokenizer, data_dir: Path
) -> Iterator[Editorial]:
    folder = tmp_path_factory.mktemp("editorial")
    with live_server(host_app()) as host:
        settings = load_settings(
            {"data_dir": str(folder), "api_key": KEY, "web": {"cors_origins": [host]}}
        )
        engine = make_engine(settings.resolved_database_url)
        upgrade(engine)
        factory = make_session_factory(engine)
        bases, reposts = corpus(data_dir, 40, 4)
        app = create_app(settings, tokenizer=tokenizer)
        client = app.test_client()
        assert (
            client.post("/api/v1/articles", json=bases + reposts, headers=AUTH).status_code == 200
        )
        reindex(factory=factory, featurizer=Featurizer(settings, tokenizer))
        with live_server(app) as api:
            yield Editorial(api, host, factory, bases, reposts)
        engine.dispose()


def get(url: str) -> Any:
    with urllib.request.urlopen(url) as reply:
        return json.load(reply)


def wait_for(
    condition: Callable[[], bool],
    what: str,
    timeout: float = 30.0,
    seen: Callable[[], object] = lambda: "",
) -> None:
    """Poll until ``condition`` holds (a deadline, not a sleep: a loaded machine only waits
    longer); a timeout's message ends with ``seen()`` (e.g. the page's requests)."""
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, f"timed out waiting for {what}; {seen()}"
        time.sleep(0.05)


def shoot(page: Page, name: str) -> None:
    """A screenshot of the editor view in ``RECENGINE_SCREENSHOTS``, when set (to look at it)."""
    if SHOTS:
        page.locator("section.editor").screenshot(path=str(Path(SHOTS) / f"{name}.png"))


def ready(page: Page) -> None:
    page.wait_for_function(
        "() => document.querySelector('section.editor').dataset.editorState === 'ready'",
        timeout=TIMEOUT_MS,
    )


def related_ids(page: Page) -> list[str]:
    return [li.get_attribute("data-id") or "" for li in page.locator("#editor-related > li").all()]


def click_and_wait(page: Page, selector: str) -> None:
    page.locator(selector).first.click()
    ready(page)
    assert not page.locator("#editor-status.failed").count(), page.locator(
        "#editor-status"
    ).inner_text()


def test_editor_buttons_store_overrides_and_the_lists_change(
    browser: Browser, site: Editorial
) -> None:
    base, copy = site.bases[0]["id"], site.reposts[0]["id"]
    console = Console()
    page = console.watch(browser.new_page())
    page.goto(f"{site.api}/?article={base}")
    ready(page)
    row = f"tr[data-id='{copy}']"
    assert page.locator(row).count() == 1
    assert page.locator(f"{row} button.editor-action").is_disabled()  # no key yet
    page.fill("#editor-key", KEY)
    page.fill("#editor-reason", XSS_REASON)
    page.locator("#editor-key-form button[type=submit]").click()
    page.wait_for_function(
        "() => document.getElementById('editor-status').textContent.includes('密钥只保存')",
        timeout=TIMEOUT_MS,
    )
    assert page.locator("#editor-key").input_value() == ""  # not left in the form

    click_and_wait(page, f"{row} button[data-kind=not_duplicate]")
    assert page.locator(row).count() == 0
    assert get(f"{site.api}/api/v1/articles/{base}/duplicates")["duplicates"] == []

    before = related_ids(page)
    assert len(before) >= 4
    pinned, blocked, same = before[3], before[1], before[2]
    click_and_wait(page, f"#editor-related > li[data-id='{pinned}'] button[data-kind=pin]")
    assert related_ids(page)[0] == pinned
    assert page.locator("#editor-related > li").first.locator(".badge").inner_text() == "置顶"
    click_and_wait(page, f"#editor-related > li[data-id='{blocked}'] button[data-kind=block]")
    assert blocked not in related_ids(page)
    served = [i["id"] for i in get(f"{site.api}/api/v1/articles/{base}/related?k=8")["items"]]
    assert served[0] == pinned and blocked not in served  # what readers get too
    click_and_wait(page, f"#editor-related > li[data-id='{same}'] button[data-kind=same_article]")
    cluster = get(f"{site.api}/api/v1/articles/{base}/duplicates")
    assert same in {d["id"] for d in cluster["duplicates"]}
    widget = page.locator(".widget-slot a.recengine-link")
    settle(page)  # refreshed at each change, or (not yet seen) loaded when near
    hrefs = [a.get_attribute("href") or "" for a in widget.all()]
    assert hrefs and not any(h.endswith("=" + quote(blocked, safe="-_.!~*'()")) for h in hrefs)

    texts = page.locator("#editor-overrides .override-text").all_inner_texts()
    assert len(texts) == 4
    # the reason, as text, with its own decision only: the field is emptied once it is saved
    assert [XSS_REASON in t for t in texts] == [True, False, False, False]
    assert page.locator("#editor-reason").input_value() == ""
    assert page.locator("#editor-overrides img, #editor-overrides script").count() == 0
    assert page.evaluate("() => window.__xss === undefined")
    title = {r["id"]: r["title"] for r in site.bases + site.reposts}
    pin_text = next(t for t in texts if t.startswith("置顶"))
    assert f"《{title[base]}》 · 《{title[pinned]}》" in pin_text  # by title, not by id
    assert pinned not in pin_text and base not in pin_text
    shoot(page, "editor-overrides-by-title")

    click_and_wait(page, "#editor-overrides button.editor-remove")  # the not_duplicate
    assert copy in {
        d["id"] for d in get(f"{site.api}/api/v1/articles/{base}/duplicates")["duplicates"]
    }
    assert page.locator("#editor-overrides li").count() == 3
    assert console.errors == [] and console.page_errors == []
    page.close()


def test_a_wrong_key_is_refused_and_not_kept(browser: Browser, site: Editorial) -> None:
    console = Console()
    page = console.watch(browser.new_page())
    page.goto(f"{site.api}/?article={site.bases[5]['id']}")
    ready(page)
    page.fill("#editor-key", "not-the-key")
    page.locator("#editor-key-form button[type=submit]").click()
    page.wait_for_selector("#editor-status.failed", timeout=TIMEOUT_MS)
    assert page.locator("#editor-status").inner_text() == "API 密钥不对，没有保存。"
    assert page.locator("button.editor-action").first.is_disabled()
    assert console.page_errors == []
    page.close()


def test_errors_are_said_in_the_pages_language(browser: Browser, site: Editorial) -> None:
    """The page is Chinese: so are its errors (the server's own message is the tooltip)."""
    console = Console()
    page = console.watch(browser.new_page())
    page.goto(f"{site.api}/?article={site.bases[6]['id']}")
    ready(page)
    page.fill("#editor-key", KEY)
    page.locator("#editor-key-form button[type=submit]").click()
    page.wait_for_function(
        "() => document.getElementById('editor-status').textContent.includes('密钥只保存')",
        timeout=TIMEOUT_MS,
    )
    page.fill("#editor-by", "")
    page.fill("#editor-reason", "kept for the next try")
    page.locator("#editor-related button[data-kind=pin]").first.click()
    page.wait_for_selector("#editor-status.failed", timeout=TIMEOUT_MS)
    status = page.locator("#editor-status")
    assert status.inner_text() == "请填写编辑署名，没有保存。"
    detail = status.get_attribute("title") or ""
    assert detail.startswith("invalid_request: ") and "by" in detail  # the server's own words
    assert page.locator("#editor-reason").input_value() == "kept for the next try"  # not saved
    shoot(page, "editor-error-in-chinese")
    assert console.page_errors == []
    page.close()


def counters(
    factory: sessionmaker[Session], article: str
) -> dict[tuple[str, int], tuple[int, int]]:
    today = datetime.now(UTC).date()
    with factory() as session:
        rows = counts_between(session=session, first=today, last=today)
    return {(r.variant, r.slot): (r.impressions, r.clicks) for r in rows if r.article == article}


def test_impressions_and_clicks_from_a_real_page_reach_the_counters(
    browser: Browser, site: Editorial
) -> None:
    article = site.bases[7]["id"]
    console = Console()
    page = console.watch(browser.new_page(viewport={"width": 800, "height": 400}))
    # another origin embeds the widget below a tall block: not seen until scrolled to
    page.goto(f"{site.host}/post/{article}?api={site.api}")
    settle(page)
    shown = page.locator("#slot a.recengine-link").count()
    assert shown >= 2
    assert page.locator("#slot").get_attribute("data-recengine-seen") is None
    assert counters(site.factory, article) == {}
    page.locator("#slot").scroll_into_view_if_needed()
    page.wait_for_selector("#slot[data-recengine-seen=true]", timeout=TIMEOUT_MS)
    # the page's requests in the message: once (1 of 5 clean runs, stop 56) no beacon reached
    # the API in 30 s; where it went is not known yet
    network = lambda: console.network  # noqa: E731
    wait_for(lambda: len(counters(site.factory, article)) == shown, "the impressions", seen=network)
    assert counters(site.factory, article) == {("default", s): (1, 0) for s in range(shown)}
    page.locator("#slot a.recengine-link").nth(1).click()  # navigates away at once
    page.wait_for_load_state()
    wait_for(
        lambda: counters(site.factory, article)[("default", 1)][1] == 1, "the click", seen=network
    )
    assert console.page_errors == []
    page.close()


def test_the_editor_works_in_the_demo_as_scripts_demo_starts_it(
    browser: Browser, tmp_path: Path
) -> None:
    """``recengine demo`` (what ``scripts/demo`` runs) serves with open writes and no key:
    the editor's buttons work there without one, and store what they say."""
    env = {"RECENGINE_DATA_DIR": str(tmp_path / "demo"), "RECENGINE_API_KEY": ""}
    env["RECENGINE_DATABASE_URL"] = ""
    with served(["demo", "--limit", "150", "--port", "0"], env, timeout=600) as demo:
        console = Console()
        page = console.watch(browser.new_page())
        page.goto(demo.url)
        ready(page)
        assert page.locator("#editor-key").count() == 0  # no key to type: none would do
        before = related_ids(page)
        assert len(before) >= 3
        click_and_wait(page, f"#editor-related > li[data-id='{before[2]}'] button[data-kind=pin]")
        assert related_ids(page)[0] == before[2]
        stored = page.locator("#editor-overrides .override-text").all_inner_texts()
        assert len(stored) == 1 and "置顶" in stored[0]
        shoot(page, "editor-demo-open-writes")
        assert console.errors == [] and console.page_errors == []
        page.close()
