"""The widget and the demo page in a real headless Chromium (Debian's package, via Playwright).

Two origins, as on a real site: the recengine service (API, widget.js, demo page) on one port,
and a "host site" on another that embeds the widget with one tag; the service allows the host
origin by CORS. Nothing is mocked: the widget calls the real API of a real database.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import socket
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast
from urllib.parse import urlsplit

import pytest
from flask import Flask
from playwright.sync_api import (
    Browser,
    BrowserContext,
    ConsoleMessage,
    Page,
    Route,
    sync_playwright,
)

from recengine.config import load_settings
from recengine.pipeline.featurize import Featurizer
from recengine.pipeline.reindex.full import reindex
from recengine.storage.db import make_engine, make_session_factory
from recengine.storage.migrate import upgrade
from recengine.text.words.tokenize import Tokenizer
from recengine.web import create_app
from recengine.web.example_site import create_demo_app
from tests.factories import javaguide_records
from tests.web.conftest import AUTH, KEY
from tests.web.livesupport import Later, live_server

XSS_TITLE = '<img src=x onerror="window.__xss=1">" onmouseover="window.__xss=2'
# What else a card shows, each an attack too.
XSS_CARD = {
    "summary": '</p><script>window.__xss=3</script><img src=x onerror="window.__xss=4">',
    "category": '"><svg onload="window.__xss=5">',
    "image": "javascript:window.__xss=6",
}
TIMEOUT_MS = 10_000


def chromium_path() -> str:
    path = os.environ.get("RECENGINE_CHROMIUM") or shutil.which("chromium")
    assert path, "Chromium is needed: scripts/test installs Debian's chromium (RECENGINE_CHROMIUM)"
    return path


def cover(url: str) -> str:
    """A picture standing for the image at ``url`` (an SVG, 16:9, its colours from the URL)."""
    digest = hashlib.sha256(url.encode()).digest()
    hue, turn = digest[0] * 360 // 256, 40 + digest[1] % 100
    cx, cy, r = 80 + digest[2] % 320, 40 + digest[3] % 190, 50 + digest[4] % 90
    return (
        "<svg xmlns='http://www.w3.org/2000/svg' width='480' height='270' viewBox='0 0 480 270'>"
        f"<defs><linearGradient id='g' x1='0' y1='0' x2='1' y2='1'>"
        f"<stop offset='0' stop-color='hsl({hue},55%,62%)'/>"
        f"<stop offset='1' stop-color='hsl({(hue + turn) % 360},60%,38%)'/></linearGradient></defs>"
        "<rect width='480' height='270' fill='url(#g)'/>"
        f"<circle cx='{cx}' cy='{cy}' r='{r}' fill='white' fill-opacity='.18'/>"
        f"<rect x='{cx // 2}' y='{150 + digest[5] % 60}' width='{120 + digest[6] % 160}'"
        " height='14' rx='7' fill='white' fill-opacity='.35'/></svg>"
    )


def _is_remote(url: str) -> bool:
    return urlsplit(url).hostname not in ("127.0.0.1", "localhost")


def _offline(route: Route) -> None:
    """This machine has no network: a request to another host is answered here, an image
    with :func:`cover` (as the site's CDN would answer), anything else refused."""
    if route.request.resource_type == "image":
        route.fulfill(status=200, content_type="image/svg+xml", body=cover(route.request.url))
    else:
        route.abort()


class OfflineBrowser:
    """The browser, with every page's requests to other hosts answered by :func:`_offline`
    (the test corpora's articles hold images on real sites)."""

    def __init__(self, browser: Browser) -> None:
        self.browser = browser

    def new_page(self, **options: Any) -> Page:
        page = self.browser.new_page(**options)
        page.route(_is_remote, _offline)
        return page

    def new_context(self, **options: Any) -> BrowserContext:
        context = self.browser.new_context(**options)
        context.route(_is_remote, _offline)
        return context

    def __getattr__(self, name: str) -> Any:
        return getattr(self.browser, name)


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    with sync_playwright() as playwright:
        # Chromium refuses its sandbox as root (CI runs as root); the pages are our own.
        args = ["--no-sandbox"] if os.geteuid() == 0 else []
        launched = playwright.chromium.launch(
            executable_path=chromium_path(), headless=True, args=args
        )
        yield cast(Browser, OfflineBrowser(launched))
        launched.close()


@dataclass
class Site:
    api: str  # the recengine service
    host: str  # another origin embedding the widget
    ids: list[str] = field(default_factory=list)


# No favicon request: its 404 would be a console error, counted against the page (a test run
# alone, before any other had the browser cache the 404, failed on it).
NO_ICON = "<link rel='icon' href='data:,'>"


def host_app() -> Flask:
    """A site that embeds the widget: ``/post/<id>?api=...`` is an article page with the tag."""
    app = Flask("host")

    @app.get("/post/<path:article_id>")
    def post(article_id: str) -> str:
        from flask import request
        from markupsafe import escape

        api = request.args["api"]
        script = request.args.get("script", api)
        k = escape(request.args.get("k", "5"))
        floor = request.args.get("min_score")
        floor_attr = f" data-recengine-min-score='{escape(floor)}'" if floor is not None else ""
        return (
            f"<!doctype html><html lang='en'><head>{NO_ICON}<title>post {escape(article_id)}"
            f"</title></head><body><h1>post</h1>"
            f"<div id='slot' data-recengine-article='{escape(article_id)}' data-recengine-k='{k}'"
            f"{floor_attr} data-recengine-api='{escape(api)}'"
            f" data-recengine-link='/post/{{id}}?api={api}'>"
            f"</div><script src='{escape(script)}/widget.js'></script></body></html>"
        )

    @app.get("/bare/<path:article_id>")
    def bare(article_id: str) -> str:
        """The README's two-line embed, as is (``slots=2``: two placeholders)."""
        from flask import request
        from markupsafe import escape

        slot = f"data-recengine-article='{escape(article_id)}'"
        slots = [f"<div id='slot' {slot}></div>"]
        if request.args.get("slots") == "2":
            slots.append(f"<div id='slot2' {slot}></div>")
        return (
            f"<!doctype html><html lang='en'><head>{NO_ICON}<title>post</title></head><body>"
            + "".join(slots)
            + f"<script src='{escape(request.args['api'])}/widget.js' defer></script></body></html>"
        )

    return app


@pytest.fixture(scope="module")
def site(
    tmp_path_factory: pytest.TempPathFactory, tokenizer: Tokenizer, data_dir: Path
) -> Iterator[Site]:
    folder = tmp_path_factory.mktemp("browser")
    with live_server(host_app()) as host:
        settings = load_settings(
            {"data_dir": str(folder), "api_key": KEY, "web": {"cors_origins": [host]}}
        )
        engine = make_engine(settings.resolved_database_url)
        upgrade(engine)
        records = javaguide_records(data_dir, 60)
        # related to records 0 and 2, a near-duplicate of neither (half of it is each one's
        # opening: record 1, of 1,855 characters, would be mostly inside it); its title is an attack
        mixed = records[0]["content"][:1500] + "\n" + records[2]["content"][:1500]
        records.append({"id": "xss", "title": XSS_TITLE, "content": mixed, **XSS_CARD})
        app = create_app(settings, tokenizer=tokenizer)
        client = app.test_client()
        assert client.post("/api/v1/articles", json=records, headers=AUTH).status_code == 200
        reindex(factory=make_session_factory(engine), featurizer=Featurizer(settings, tokenizer))
        engine.dispose()
        with live_server(app) as api:
            yield Site(api=api, host=host, ids=[r["id"] for r in records])


@dataclass
class Console:
    errors: list[str] = field(default_factory=list)
    page_errors: list[str] = field(default_factory=list)
    # every request of the page as it went: what a failure message shows of a request that
    # never reached a server (a beacon, say) or failed on the way
    network: list[str] = field(default_factory=list)

    def watch(self, page: Page) -> Page:
        def on_console(message: ConsoleMessage) -> None:
            if message.type == "error":
                self.errors.append(message.text)

        page.on("console", on_console)
        page.on("pageerror", lambda exc: self.page_errors.append(str(exc)))
        page.on("request", lambda r: self.network.append(f"sent {r.method} {r.url}"))
        page.on("response", lambda r: self.network.append(f"{r.status} {r.request.method} {r.url}"))
        page.on(
            "requestfailed",
            lambda r: self.network.append(f"failed {r.method} {r.url}: {r.failure}"),
        )
        return page


def closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


# A placeholder waiting below the viewport (the widget asks for its list only when it comes
# within a screen's height) is scrolled half a screen below the viewport: near, as a reader
# scrolling down brings it, yet not on screen (no impression is counted).
BRING_NEAR = """e => {
  if (e.dataset.recengineState !== 'waiting') return;
  const top = e.getBoundingClientRect().top + window.scrollY;
  window.scrollTo(0, Math.max(0, top - 1.5 * window.innerHeight));
}"""
FINISHED = "e => ['done', 'failed'].includes(e.dataset.recengineState)"


def settle(page: Page) -> None:
    """Wait until every widget has finished (rendered, or given up and hidden itself), each
    brought near first when it waits for that."""
    for slot in page.locator("[data-recengine-article]").element_handles():
        slot.evaluate(BRING_NEAR)
        page.wait_for_function(FINISHED, arg=slot, timeout=TIMEOUT_MS)


def test_widget_stays_hidden_when_the_api_is_down(browser: Browser, site: Site) -> None:
    console = Console()
    page = console.watch(browser.new_page())
    down = f"http://127.0.0.1:{closed_port()}"
    # the script itself comes from the live service; its API calls go to a closed port
    page.goto(f"{site.host}/post/{site.ids[0]}?api={down}&script={site.api}")
    settle(page)
    slot = page.locator("#slot")
    assert slot.get_attribute("data-recengine-state") == "failed"
    assert slot.is_hidden() and slot.inner_html() == ""
    assert console.page_errors == []  # no uncaught exception: it degrades quietly
    page.close()


def test_widget_stays_hidden_for_an_unknown_article(browser: Browser, site: Site) -> None:
    console = Console()
    page = console.watch(browser.new_page())
    page.goto(f"{site.host}/post/no-such-article?api={site.api}")
    settle(page)
    assert page.locator("#slot").is_hidden()
    assert page.locator("#slot").inner_html() == ""
    assert console.page_errors == []
    page.close()


def test_demo_page_renders_the_article_as_text(browser: Browser, site: Site) -> None:
    console = Console()
    page = console.watch(browser.new_page())
    page.goto(f"{site.api}/?article=xss")
    assert page.locator("h1").inner_text() == XSS_TITLE  # shown as text, not markup
    assert page.evaluate("() => window.__xss === undefined")
    assert console.page_errors == []
    page.close()


def widget_links(page: Page) -> list[tuple[str, str]]:
    links = page.locator("#slot section.recengine-related ul > li > a")
    return [(a.inner_text(), a.get_attribute("href") or "") for a in links.all()]


def test_widget_renders_the_related_links_of_the_api(browser: Browser, site: Site) -> None:
    import json
    import urllib.request

    article = site.ids[0]
    with urllib.request.urlopen(f"{site.api}/api/v1/articles/{article}/related?k=5") as reply:
        expected = [item["title"] for item in json.load(reply)["items"]]
    assert len(expected) == 5
    console = Console()
    page = console.watch(browser.new_page())
    page.goto(f"{site.host}/post/{article}?api={site.api}")
    settle(page)
    assert page.locator("#slot h2.recengine-heading").inner_text() == "Related articles"  # lang=en
    section = page.locator("#slot section.recengine-related")
    heading_id = page.locator("#slot h2").get_attribute("id")
    assert section.get_attribute("aria-labelledby") == heading_id
    links = widget_links(page)
    assert [title for title, _ in links] == expected
    assert all(href.startswith(f"{site.host}/post/") for _, href in links)

    page.locator("#slot a").first.click()  # a click navigates to the related article
    page.wait_for_url(links[0][1])
    settle(page)
    assert widget_links(page)  # and that page has its own list
    assert console.errors == [] and console.page_errors == []
    page.close()


def test_widget_floor_attribute_is_sent_and_can_empty_the_list(
    browser: Browser, site: Site
) -> None:
    console = Console()
    page = console.watch(browser.new_page())
    asked: list[str] = []
    page.on("request", lambda r: asked.append(r.url) if "/related" in r.url else None)
    page.goto(f"{site.host}/post/{site.ids[0]}?api={site.api}&min_score=0.999")
    settle(page)
    slot = page.locator("#slot")
    assert slot.get_attribute("data-recengine-state") == "done"
    assert slot.is_hidden() and widget_links(page) == []  # nothing scores 0.999: no junk shown
    assert len(asked) == 1 and "min_score=0.999" in asked[0]
    page.goto(f"{site.host}/post/{site.ids[0]}?api={site.api}&min_score=nonsense")
    settle(page)
    assert widget_links(page)  # a bad attribute is ignored: the server's default applies
    assert "min_score" not in asked[-1]
    assert console.errors == [] and console.page_errors == []
    page.close()


def test_widget_is_usable_with_the_keyboard(browser: Browser, site: Site) -> None:
    page = browser.new_page()
    page.goto(f"{site.host}/post/{site.ids[1]}?api={site.api}")
    settle(page)
    first_href = widget_links(page)[0][1]
    for _ in range(10):  # Tab from the top of the page reaches the widget's first link
        page.keyboard.press("Tab")
        if page.evaluate("() => document.activeElement.classList.contains('recengine-link')"):
            break
    assert page.evaluate("() => document.activeElement.href") == first_href
    page.keyboard.press("Enter")
    page.wait_for_url(first_href)
    page.close()


def test_widget_shows_a_hostile_title_as_text(browser: Browser, site: Site) -> None:
    console = Console()
    page = console.watch(browser.new_page())
    shown = False
    for article in (site.ids[0], site.ids[2]):
        page.goto(f"{site.host}/post/{article}?api={site.api}&k=50")
        settle(page)
        titles = [title for title, _ in widget_links(page)]
        shown = shown or XSS_TITLE in titles
    assert shown, "the test article should be related to articles 0 or 2"
    assert page.locator("#slot img").count() == 0  # the markup in the title stayed text
    page.locator("#slot a").first.hover()
    assert page.evaluate("() => window.__xss === undefined")
    assert console.errors == [] and console.page_errors == []
    page.close()


def test_demo_page_with_its_widget_and_no_console_errors(browser: Browser, site: Site) -> None:
    import json
    import urllib.request

    console = Console()
    page = console.watch(browser.new_page())
    page.goto(f"{site.api}/?article={site.ids[2]}")
    settle(page)
    links = page.locator(".widget-slot a.recengine-link")
    with urllib.request.urlopen(f"{site.api}/api/v1/articles/{site.ids[2]}/related?k=8") as reply:
        expected = json.load(reply)["items"]  # the demo asks for 8; the floor may leave fewer
    assert 1 <= len(expected) <= 8 and links.count() == len(expected)
    href = links.first.get_attribute("href") or ""
    assert "/?article=" in href  # no stored URL: the demo links to its own page
    links.first.click()
    page.wait_for_url(f"**{href}")
    assert page.locator("h1").inner_text()
    assert page.locator("section.editor h2").inner_text().startswith("编辑视图")
    assert console.errors == [] and console.page_errors == []
    page.close()


def test_demo_page_keeps_hostile_cards_inert(browser: Browser, site: Site) -> None:
    """The demo page's cards (and its own meta line) show a hostile title, summary and
    category as text, and load no javascript: image."""
    console = Console()
    page = console.watch(browser.new_page())
    shown = False
    for article in (site.ids[0], site.ids[2]):
        page.goto(f"{site.api}/?article={article}")
        settle(page)
        titles = page.locator(".widget-slot .recengine-title").all_inner_texts()
        if XSS_TITLE not in titles:
            continue
        shown = True
        item = page.locator(".widget-slot li", has_text="window.__xss=2")
        assert item.locator(".recengine-category").inner_text() == XSS_CARD["category"]
        assert (
            item.locator(".recengine-thumb-none").count() == 1 and item.locator("img").count() == 0
        )
        assert page.locator(".widget-slot script, .widget-slot svg, img[src='x']").count() == 0
        item.hover()
    assert shown, "the hostile article should be related to articles 0 or 2"
    page.goto(f"{site.api}/?article=xss")
    assert XSS_CARD["category"] in page.locator("p.meta").inner_text()  # the page's own, as text
    assert page.evaluate("() => window.__xss === undefined")
    assert console.page_errors == []
    page.close()


@dataclass
class Warnings:
    texts: list[str] = field(default_factory=list)

    def watch(self, page: Page) -> Page:
        page.on("console", lambda m: self.texts.append(m.text) if m.type == "warning" else None)
        return page

    def ours(self) -> list[str]:
        return [text for text in self.texts if text.startswith("recengine widget: ")]


def test_widget_says_once_in_the_console_when_cors_refuses_this_origin(
    browser: Browser, site: Site
) -> None:
    """The README's embed on an origin the service does not allow: hidden, with one warning
    that names the origin and the setting (two placeholders on the page: still one)."""
    with live_server(host_app()) as other:  # the same site on an origin not in cors_origins
        console, warnings = Console(), Warnings()
        page = warnings.watch(console.watch(browser.new_page()))
        with page.expect_console_message(
            lambda m: m.text.startswith("recengine widget: "), timeout=TIMEOUT_MS
        ):
            page.goto(f"{other}/bare/{site.ids[0]}?api={site.api}&slots=2")
        settle(page)
        page.wait_for_load_state("networkidle")  # both placeholders' probes have answered
        assert page.locator("#slot").is_hidden() and page.locator("#slot2").is_hidden()
        assert page.locator("#slot").get_attribute("data-recengine-state") == "failed"
        said = warnings.ours()
        assert len(said) == 1, warnings.texts
        assert f"does not allow pages of {other}" in said[0] and "web.cors_origins" in said[0]
        assert console.page_errors == []
        page.close()


def test_widget_says_why_when_articles_have_no_url_and_no_link_is_given(
    browser: Browser, site: Site
) -> None:
    """Allowed by CORS, but the articles have no url and the README's embed gives no
    data-recengine-link: hidden, with one warning saying so."""
    console, warnings = Console(), Warnings()
    page = warnings.watch(console.watch(browser.new_page()))
    page.goto(f"{site.host}/bare/{site.ids[0]}?api={site.api}")
    settle(page)
    assert page.locator("#slot").get_attribute("data-recengine-state") == "done"
    assert page.locator("#slot").is_hidden()
    said = warnings.ours()
    assert len(said) == 1, warnings.texts
    assert "no url" in said[0] and "data-recengine-link" in said[0]
    assert console.errors == [] and console.page_errors == []
    page.close()


def test_no_warning_when_the_embed_works(browser: Browser, site: Site) -> None:
    warnings = Warnings()
    page = warnings.watch(browser.new_page())
    page.goto(f"{site.host}/post/{site.ids[0]}?api={site.api}")
    settle(page)
    assert widget_links(page) and warnings.ours() == []
    page.close()


def test_the_demos_example_site_embeds_the_widget_across_origins(
    browser: Browser, tmp_path: Path, tokenizer: Tokenizer, data_dir: Path
) -> None:
    """The demo's setup: one app on two listeners (the service, and the example site of
    another origin whose page has the README's two lines and nothing else); the related
    articles' url are site-relative, as the demo corpus stores them. The list renders on the
    example site, its links stay there, and nothing is said in the console."""
    settings = load_settings({"data_dir": str(tmp_path), "api_key": KEY})
    engine = make_engine(settings.resolved_database_url)
    upgrade(engine)
    records = javaguide_records(data_dir, 30)
    for r in records:
        r["url"] = f"/?article={r['id']}"
    client = create_app(settings, tokenizer=tokenizer).test_client()
    assert client.post("/api/v1/articles", json=records, headers=AUTH).status_code == 200
    reindex(factory=make_session_factory(engine), featurizer=Featurizer(settings, tokenizer))
    engine.dispose()
    demo_settings = settings.model_copy(
        update={"web": settings.web.model_copy(update={"demo_article": records[0]["id"]})}
    )
    service_app, site_app = Later(), Later()
    with live_server(service_app) as service, live_server(site_app) as example:
        app = create_demo_app(demo_settings, service, example)
        service_app.app = site_app.app = app
        console, warnings = Console(), Warnings()
        page = warnings.watch(console.watch(browser.new_page()))
        page.goto(f"{example}/")  # opens on web.demo_article
        assert page.locator("h1").inner_text() == records[0]["title"]
        settle(page)
        slot = page.locator("[data-recengine-article]")
        assert slot.get_attribute("data-recengine-link") is None  # the README's embed, as is
        assert slot.get_attribute("data-recengine-api") is None
        links = page.locator("a.recengine-link")
        assert links.count() >= 1
        href = links.first.get_attribute("href") or ""
        assert href.startswith(f"{example}/?article=")  # resolved against the embedding site
        links.first.click()
        page.wait_for_url(href)
        settle(page)
        assert page.locator("a.recengine-link").count() >= 1  # that page has its own list
        assert warnings.ours() == [] and console.errors == [] and console.page_errors == []
        # and the service's demo page links to this article on the example site
        page.goto(f"{service}/?article={records[0]['id']}")
        assert page.locator(f"a[href^='{example}/?article=']").count() == 1
        page.close()
