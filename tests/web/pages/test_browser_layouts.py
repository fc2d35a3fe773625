"""The widget's layouts (list, cards, grid) on a site of another origin, in a real Chromium.

The site is an article page as a blog has one (header, article, then the placeholder), on
real Chinese articles with categories, dates and images (the images of their Markdown; this
machine has no network, so those hosts are answered with pictures, ``test_browser.cover``).
For each layout: the parts it shows are there, images are lazy, nothing is said in the console,
and axe-core (the npm package, run in the page) finds no violation, in light and dark. Beside
them: the parts picked with ``data-recengine-show``, ``data-recengine-style="none"``, a strict
Content-Security-Policy, no request before the placeholder comes near, no layout shift when the
images arrive, dates in the page's language, and hostile text kept inert.
"""

from __future__ import annotations

import os
import re
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import quote

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
from tests.web.livesupport import Later, live_server
from tests.web.pages.test_browser import NO_ICON, TIMEOUT_MS, Console, browser, settle

__all__ = ["browser"]

LAYOUTS = ("list", "cards", "grid")
HOSTILE = {
    "title": '<img src=x onerror="window.__xss=1">"><script>window.__xss=2</script>',
    "summary": "<b>bold</b> &lt;script&gt;window.__xss=3&lt;/script&gt; javascript:alert(1)",
    "category": '"><svg onload="window.__xss=4">',
    "image": "javascript:window.__xss=5",
}
SITE_CSS = """
body { margin: 0 auto; max-width: 46rem; padding: 0 1rem 2rem; color: #1f2328; background: #fff;
       font: 16px/1.75 system-ui, "Noto Sans CJK SC", "PingFang SC", sans-serif; }
header { border-bottom: 1px solid #d8dee4; padding: .8rem 0; margin-bottom: 1rem; }
header a { color: #1f2328; font-weight: 700; text-decoration: none; }
h1 { font-size: 1.6rem; line-height: 1.35; }
.meta { color: #57606a; font-size: .9rem; }
.tall { height: 4000px; }
@media (prefers-color-scheme: dark) {
  body { color: #e6edf3; background: #0d1117; }
  header { border-color: #30363d; } header a { color: #e6edf3; } .meta { color: #9da7b3; }
}
"""


@dataclass
class CardsSite:
    api: str  # the recengine service
    site: str  # another origin: article pages with the widget
    ids: list[str]
    records: dict[str, dict[str, Any]]
    rich: str  # an article whose list of 8 has items with images and items without

    def page_url(self, article: str, **query: str) -> str:
        extra = "".join(f"&{k}={quote(v)}" for k, v in query.items())
        return (
            f"{self.site}/p/{article}?layout=cards{extra}"
            if "layout" not in query
            else (f"{self.site}/p/{article}?{extra[1:]}")
        )


def site_app(api: Later) -> Flask:
    """``/p/<id>?layout=&show=&style=&lang=&k=&tall=1&csp=1``: an article page embedding the
    widget (the article's text from the service's API); ``/site.css`` its stylesheet."""
    app = Flask("cards-site")

    @app.get("/site.css")
    def css() -> Any:
        return app.response_class(SITE_CSS, mimetype="text/css")

    @app.get("/p/<path:article_id>")
    def page(article_id: str) -> Any:
        service = api.app.service  # type: ignore[union-attr]
        lang = request.args.get("lang", "zh-CN")
        attributes = {"data-recengine-article": article_id}
        for name in ("layout", "show", "style", "k", "heading"):
            if name in request.args:
                attributes[f"data-recengine-{name}"] = request.args[name]
        slot = " ".join(f'{k}="{escape(v)}"' for k, v in attributes.items())
        title = escape(api.app.titles.get(article_id, article_id))  # type: ignore[union-attr]
        body = (
            f"<!doctype html><html lang='{escape(lang)}'><head><meta charset='utf-8'>"
            "<meta name='viewport' content='width=device-width, initial-scale=1'>"
            f"<meta name='color-scheme' content='light dark'>{NO_ICON}<title>{title}</title>"
            "<link rel='stylesheet' href='/site.css'></head><body>"
            "<header><a href='/'>示例技术博客</a></header><main><article>"
            f"<h1>{title}</h1><p class='meta'>2024 年 6 月 1 日 · 后端</p>"
            "<p>这是一篇示例文章的结尾段落。读者读到这里，下面就是相关文章。</p>"
            + ("<div class='tall'></div>" if request.args.get("tall") else "")
            + f"</article><div id='slot' {slot}></div></main>"
            f"<script src='{service}/widget.js' defer></script></body></html>"
        )
        response = app.response_class(body, mimetype="text/html")
        if request.args.get("csp"):  # strict: no inline script or style anywhere
            response.headers["Content-Security-Policy"] = (
                f"default-src 'none'; script-src {service}; connect-src {service}; "
                f"style-src 'self' {service}; img-src https: http: data:; base-uri 'none'"
            )
        return response

    return app


def cards_records(data_dir: Path) -> list[dict[str, Any]]:
    """40 real articles: categories, dates, Markdown images (some none), site-relative urls;
    one with a given image and summary, and one whose every shown field is an attack."""
    records = javaguide_records(data_dir, 40)
    for i, r in enumerate(records):
        if i % 3 == 1:  # some articles have no image: the widget shows a placeholder
            r["content"] = re.sub(r"!\[[^\]]*\]\([^)]*\)", "", r["content"])
        r["url"] = f"/p/{r['id']}"
        r["published_at"] = f"2024-{1 + i % 12:02d}-{1 + i % 27:02d}T08:00:00+08:00"
    records[5]["image"] = "https://img.example/given-cover.jpg"
    records[5]["summary"] = "作者自己写的摘要：这篇文章讲了什么，一句话说清楚。"
    mixed = records[0]["content"][:1500] + "\n" + records[2]["content"][:1500]
    records.append({"id": "hostile", "url": "/p/hostile", "content": mixed, **HOSTILE})
    return records


@pytest.fixture(scope="module")
def cards_site(
    tmp_path_factory: pytest.TempPathFactory, tokenizer: Tokenizer, data_dir: Path
) -> Iterator[CardsSite]:
    folder = tmp_path_factory.mktemp("cards")
    holder = Later()
    with live_server(holder) as site:
        settings = load_settings(
            {"data_dir": str(folder), "api_key": KEY, "web": {"cors_origins": [site]}}
        )
        engine = make_engine(settings.resolved_database_url)
        upgrade(engine)
        records = cards_records(data_dir)
        app = create_app(settings, tokenizer=tokenizer)
        client = app.test_client()
        assert client.post("/api/v1/articles", json=records, headers=AUTH).status_code == 200
        reindex(factory=make_session_factory(engine), featurizer=Featurizer(settings, tokenizer))
        engine.dispose()
        lists = {r["id"]: client.get(f"/api/v1/articles/{r['id']}/related?k=8") for r in records}
        rich = next(i for i, answer in lists.items() if _rich(answer.get_json()))
        with live_server(app) as api:
            holder.app = site_app(holder)
            holder.app.service = api  # type: ignore[attr-defined]
            holder.app.titles = {r["id"]: r.get("title", "") for r in records}  # type: ignore[attr-defined]
            ids = [r["id"] for r in records]
            yield CardsSite(api, site, ids, {r["id"]: r for r in records}, rich)


def _rich(body: dict[str, Any]) -> bool:
    images = [i["image"] for i in body["items"] if i["id"] != "hostile"]
    return len(images) == 8 and 2 <= sum(i is None for i in images) <= 5


def axe_source() -> str:
    """axe-core's script (the npm package; ``scripts/test`` installs it and names it)."""
    path = os.environ.get("RECENGINE_AXE", "")
    assert path and Path(path).is_file(), (
        "axe-core is needed: scripts/test installs it from npm (scripts/services.sh, "
        "ensure_axe) and exports RECENGINE_AXE, the path of its axe.min.js"
    )
    return Path(path).read_text(encoding="utf-8")


def axe_violations(page: Page) -> list[dict[str, Any]]:
    """axe-core's violations on the page (every rule it runs by default), run in the page."""
    page.evaluate(axe_source())  # not a script tag: a strict CSP page would refuse one
    result: dict[str, Any] = page.evaluate("() => axe.run(document, {resultTypes: ['violations']})")
    return [
        {"id": v["id"], "nodes": [n["html"][:120] for n in v["nodes"]]}
        for v in result["violations"]
    ]


def open_page(browser: Browser, url: str, **options: Any) -> tuple[Page, Console]:
    console = Console()
    page = console.watch(browser.new_page(**options))
    page.goto(url)
    settle(page)
    return page, console


def item_parts(page: Page) -> list[dict[str, Any]]:
    """Per item: which parts it shows, its image's attributes, its date's datetime."""
    return page.evaluate(
        """() => [...document.querySelectorAll('#slot .recengine-item')].map(li => {
          const img = li.querySelector('img');
          const time = li.querySelector('time');
          return {
            thumb: !!li.querySelector('.recengine-thumb'),
            placeholder: !!li.querySelector('.recengine-thumb-none'),
            title: li.querySelector('a.recengine-link .recengine-title')?.textContent ?? null,
            date: time ? time.getAttribute('datetime') : null,
            category: li.querySelector('.recengine-category')?.textContent ?? null,
            summary: li.querySelector('.recengine-summary')?.textContent ?? null,
            img: img && {loading: img.loading, decoding: img.decoding, alt: img.alt,
                         width: Number(img.getAttribute('width')),
                         height: Number(img.getAttribute('height')), src: img.getAttribute('src')},
          };
        })"""
    )


@pytest.mark.parametrize("layout", LAYOUTS)
def test_each_layout_shows_its_parts_with_lazy_images_and_no_console_error(
    browser: Browser, cards_site: CardsSite, layout: str
) -> None:
    article = cards_site.rich
    page, console = open_page(browser, cards_site.page_url(article, layout=layout, k="8"))
    section = page.locator("#slot section.recengine-related")
    thumbs = "" if layout == "list" else " recengine-thumbs"
    assert section.get_attribute("class") == f"recengine-related recengine-layout-{layout}{thumbs}"
    assert page.locator("#slot .recengine-heading").inner_text() == "相关文章"  # lang zh-CN
    by_title = {r.get("title"): r for r in cards_site.records.values()}
    parts = item_parts(page)
    assert len(parts) == 8
    for part in parts:
        record = by_title[part["title"]]
        assert part["date"] and part["date"].endswith("Z")
        assert part["thumb"] is (layout != "list")
        shows_category = layout != "list" and bool(record["category"])
        assert (
            (part["category"] == record["category"])
            if shows_category
            else (part["category"] is None)
        )
        assert (part["summary"] is not None) is (layout == "grid")
        if part["img"]:
            assert (part["img"]["loading"], part["img"]["decoding"]) == ("lazy", "async")
            assert part["img"]["alt"] == "" and part["img"]["width"] == 480
            assert part["img"]["height"] == 270  # a 16:9 box before the image arrives
    if layout != "list":
        assert any(p["img"] for p in parts) and any(p["placeholder"] for p in parts)
    assert console.errors == [] and console.page_errors == []
    page.close()


# Each item's elements: tag, classes, text and attributes (links and images resolved against
# the page; ids left out: the widget numbers its headings, the fragment names them).
SHAPE_OF = """root => {
  const section = root.querySelector('section.recengine-related');
  const heading = section.querySelector('.recengine-heading');
  const attrs = e => Object.fromEntries([...e.attributes]
    .filter(a => a.name !== 'id' && a.name !== 'aria-labelledby')
    .map(a => [a.name, a.name === 'href' || a.name === 'src' ?
      new URL(a.value, document.baseURI).href : a.value]));
  const tree = e => ({tag: e.tagName, attrs: attrs(e), text: e.children.length ? null :
    e.textContent, children: [...e.children].map(tree)});
  return {section: attrs(section), heading: [heading.tagName, heading.textContent],
          items: [...section.querySelectorAll('li')].map(tree)};
}"""


@pytest.mark.parametrize("layout", LAYOUTS)
def test_the_fragment_holds_what_the_widget_shows(
    browser: Browser, cards_site: CardsSite, layout: str
) -> None:
    """related.html, parsed in the same page, is the widget's list element for element (in
    the server's time zone, UTC, as the reader's here)."""
    article = cards_site.rich
    page, console = open_page(
        browser, cards_site.page_url(article, layout=layout, k="8"), timezone_id="UTC"
    )
    widget = page.evaluate(SHAPE_OF, page.locator("#slot").element_handle())
    url = f"{cards_site.api}/api/v1/articles/{quote(article, safe='')}/related.html"
    with urllib.request.urlopen(f"{url}?k=8&layout={layout}&lang=zh-CN") as reply:
        html = reply.read().decode("utf-8")
    served = page.evaluate(
        f"html => ({SHAPE_OF})(new DOMParser().parseFromString(html, 'text/html'))", html
    )
    assert len(widget["items"]) == 8
    assert served == widget
    assert console.errors == [] and console.page_errors == []
    page.close()


@pytest.mark.parametrize("scheme", ["light", "dark"])
@pytest.mark.parametrize("layout", LAYOUTS)
def test_axe_finds_no_violation_in_any_layout_light_or_dark(
    browser: Browser, cards_site: CardsSite, layout: str, scheme: str
) -> None:
    page, _ = open_page(
        browser,
        cards_site.page_url(cards_site.rich, layout=layout, k="6"),
        color_scheme=scheme,
    )
    background = page.evaluate("() => getComputedStyle(document.body).backgroundColor")
    assert background == ("rgb(13, 17, 23)" if scheme == "dark" else "rgb(255, 255, 255)")
    page.wait_for_load_state("networkidle")  # the images are in: contrast over the final page
    assert axe_violations(page) == []
    page.close()


def test_the_parts_are_picked_with_data_recengine_show(
    browser: Browser, cards_site: CardsSite
) -> None:
    url = cards_site.page_url(cards_site.rich, layout="list", show="image summary", k="4")
    page, console = open_page(browser, url)
    parts = item_parts(page)
    assert len(parts) == 4 and all(p["thumb"] and p["summary"] for p in parts)
    assert all(p["date"] is None and p["category"] is None for p in parts)
    assert page.locator("#slot section").get_attribute("class") == (
        "recengine-related recengine-layout-list recengine-thumbs"
    )
    assert console.errors == [] and console.page_errors == []
    page.close()


def test_style_none_links_no_stylesheet(browser: Browser, cards_site: CardsSite) -> None:
    asked: list[str] = []
    console = Console()
    page = console.watch(browser.new_page())
    page.on("request", lambda r: asked.append(r.url))
    page.goto(cards_site.page_url(cards_site.rich, style="none", layout="cards"))
    settle(page)
    assert page.locator("#slot .recengine-item").count() >= 1
    assert not any(u.endswith("/widget.css") for u in asked)
    assert page.locator("link[href$='/widget.css']").count() == 0
    list_style = page.evaluate(
        "() => getComputedStyle(document.querySelector('#slot ul')).listStyleType"
    )
    assert list_style == "disc"  # the browser's own: the site styles it
    page.close()


def test_a_strict_csp_page_renders_the_cards_styled(
    browser: Browser, cards_site: CardsSite
) -> None:
    """No 'unsafe-inline' anywhere: the stylesheet is linked, nothing is set inline."""
    console = Console()
    page = console.watch(browser.new_page(viewport={"width": 1100, "height": 900}))
    page.add_init_script(
        "window.__csp = []; document.addEventListener('securitypolicyviolation',"
        " e => window.__csp.push(e.violatedDirective + ' ' + e.blockedURI));"
    )
    page.goto(cards_site.page_url(cards_site.rich, layout="cards", csp="1"))
    settle(page)
    assert page.evaluate("() => window.__csp") == []
    styles = page.evaluate(
        """() => {
          const ul = document.querySelector('#slot ul');
          const thumb = document.querySelector('#slot .recengine-thumb');
          return [getComputedStyle(ul).display, getComputedStyle(ul).listStyleType,
                  getComputedStyle(ul).gridTemplateColumns.split(' ').length,
                  getComputedStyle(thumb).aspectRatio];
        }"""
    )
    assert styles == ["grid", "none", 3, "16 / 9"]
    assert page.locator("#slot [style]").count() == 0
    assert console.errors == [] and console.page_errors == []
    page.close()


def test_nothing_is_asked_for_until_the_placeholder_comes_near(
    browser: Browser, cards_site: CardsSite
) -> None:
    asked: list[str] = []
    page = browser.new_page(viewport={"width": 1000, "height": 700})
    page.on("request", lambda r: asked.append(r.url))
    page.goto(cards_site.page_url(cards_site.rich, layout="cards", tall="1"))
    page.wait_for_load_state("networkidle")
    slot = page.locator("#slot")
    assert slot.get_attribute("data-recengine-state") == "waiting"
    assert not [u for u in asked if "/related" in u or u.endswith("/widget.css")]
    page.mouse.wheel(0, 3000)  # 4000 px of article: the placeholder is now under a screen away
    page.wait_for_function(
        "() => document.querySelector('#slot').dataset.recengineState === 'done'",
        timeout=TIMEOUT_MS,
    )
    assert len([u for u in asked if "/related" in u]) == 1
    assert len([u for u in asked if u.endswith("/widget.css")]) == 1
    page.close()


def test_without_intersection_observer_the_list_is_asked_for_at_once(
    browser: Browser, cards_site: CardsSite
) -> None:
    page = browser.new_page()
    page.add_init_script("delete window.IntersectionObserver")
    page.goto(cards_site.page_url(cards_site.rich, layout="cards", tall="1"))
    page.wait_for_function(
        "() => document.querySelector('#slot').dataset.recengineState === 'done'",
        timeout=TIMEOUT_MS,
    )
    assert page.locator("#slot .recengine-item").count() >= 1
    page.close()


def test_images_arriving_shift_nothing(browser: Browser, cards_site: CardsSite) -> None:
    """The images are held until the list is shown, then let through: every item keeps its
    box, and the browser records no layout shift."""
    held: list[Any] = []
    page = browser.new_page(viewport={"width": 1100, "height": 1000})
    page.route("https://oss.javaguide.cn/**", lambda route: held.append(route))
    page.add_init_script(
        "window.__shifts = []; new PerformanceObserver(l => l.getEntries().forEach("
        "e => window.__shifts.push([e.startTime, e.value]))).observe({type: 'layout-shift'})"
    )
    page.goto(cards_site.page_url(cards_site.rich, layout="grid", k="8"))
    settle(page)
    boxes = (
        "() => [...document.querySelectorAll('#slot li')]"
        ".map(li => JSON.stringify(li.getBoundingClientRect()))"
    )
    before, shown_at = page.evaluate(boxes), page.evaluate("() => performance.now()")
    page.wait_for_function("n => document.querySelectorAll('#slot img').length >= n", arg=1)
    assert held  # the images were asked for, and wait
    for route in held:
        route.fallback()  # to the offline pictures
    page.wait_for_function(
        "() => [...document.querySelectorAll('#slot img')]"
        ".every(i => i.complete && i.naturalWidth)",
        timeout=TIMEOUT_MS,
    )
    assert page.evaluate(boxes) == before
    shifts = page.evaluate("t => window.__shifts.filter(s => s[0] > t)", shown_at)
    assert shifts == []
    page.close()


@pytest.mark.parametrize(
    ("lang", "expected"),
    [("zh-CN", "2024年2月2日"), ("en", "Feb 2, 2024"), ("en-GB", "2 Feb 2024")],
)
def test_dates_are_written_in_the_pages_language_in_a_time_element(
    browser: Browser, cards_site: CardsSite, lang: str, expected: str
) -> None:
    page, _ = open_page(
        browser,
        cards_site.page_url(cards_site.ids[0], layout="list", lang=lang, k="40"),
        timezone_id="Asia/Shanghai",
    )
    heading = page.locator("#slot .recengine-heading").inner_text()
    assert heading == ("相关文章" if lang.startswith("zh") else "Related articles")
    dates = page.locator("#slot time").evaluate_all(
        "ts => ts.map(t => [t.getAttribute('datetime'), t.textContent])"
    )
    assert ["2024-02-02T00:00:00Z", expected] in dates  # record 1: 2 Feb, 08:00 in Shanghai
    page.close()


def test_hostile_titles_summaries_categories_and_images_stay_inert(
    browser: Browser, cards_site: CardsSite
) -> None:
    seen = False
    for article in (cards_site.ids[0], cards_site.ids[2]):
        page, console = open_page(
            browser,
            cards_site.page_url(
                article, layout="grid", k="40", show="image title date category summary"
            ),
        )
        items = item_parts(page)
        hostile = [i for i in items if i["title"] == HOSTILE["title"]]
        if hostile:
            seen = True
            assert hostile[0]["category"] == HOSTILE["category"]
            assert hostile[0]["summary"].startswith("bold <script>window.__xss=3</script>")
            assert hostile[0]["placeholder"] and not hostile[0]["img"]  # javascript: not loaded
            assert page.locator("#slot script, #slot svg, #slot img[src='x']").count() == 0
            page.locator("#slot .recengine-item").last.hover()
            assert page.evaluate("() => window.__xss === undefined")
            assert console.page_errors == []
        page.close()
    assert seen, "the hostile article should be related to articles 0 or 2"


SCREENSHOTS = os.environ.get("RECENGINE_WIDGET_SCREENSHOTS")  # e.g. docs/screenshots
WIDTHS = {"desktop": 1200, "phone": 390}


@pytest.mark.parametrize("width", WIDTHS)
@pytest.mark.parametrize("layout", LAYOUTS)
def test_screenshots_of_each_layout_at_desktop_and_phone_width(
    browser: Browser, cards_site: CardsSite, layout: str, width: str, tmp_path: Path
) -> None:
    """What README shows: the end of an article and its widget, as a reader sees them (the
    images of their Markdown stand in by pictures here). Written to the folder
    ``RECENGINE_WIDGET_SCREENSHOTS`` names (``docs/screenshots``), else to a temporary one;
    each is a real picture of the rendered box."""
    folder = Path(SCREENSHOTS) if SCREENSHOTS else tmp_path
    folder.mkdir(parents=True, exist_ok=True)
    k = {"list": "6", "cards": "6", "grid": "8"}[layout]
    page, console = open_page(
        browser,
        cards_site.page_url(cards_site.rich, layout=layout, k=k),
        viewport={"width": WIDTHS[width], "height": 900},
        device_scale_factor=1 if width == "desktop" else 2,
    )
    page.wait_for_load_state("networkidle")
    page.locator("#slot").scroll_into_view_if_needed()
    page.wait_for_function(
        "() => [...document.querySelectorAll('#slot img')].every(i => i.complete)",
        timeout=TIMEOUT_MS,
    )
    box = page.locator("main").bounding_box()
    slot = page.locator("#slot").bounding_box()
    assert box is not None and slot is not None and slot["height"] > 100
    top = max(0.0, slot["y"] - 90)  # the article's last lines above the box
    clip = {
        "x": 0,
        "y": top,
        "width": WIDTHS[width],
        "height": slot["y"] + slot["height"] + 24 - top,
    }
    path = folder / f"widget-{layout}-{width}.png"
    page.screenshot(path=str(path), clip=clip, full_page=True)
    assert path.stat().st_size > 10_000  # a picture, not an empty box
    assert console.errors == [] and console.page_errors == []
    page.close()
