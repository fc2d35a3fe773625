"""A list as an HTML fragment: the widget's markup, every text escaped, links and images only
over http(s), dates as the browser writes them."""

from __future__ import annotations

from html.parser import HTMLParser
from typing import Any
from zoneinfo import ZoneInfo

import pytest

from recengine.recommend.lists.fragment import Shape, date_text, image_of, link_of, render

ITEM = {
    "id": "a/1",
    "title": "索引的原理",
    "url": "/posts/a-1",
    "image": "https://cdn.example/a.jpg",
    "summary": "B+ 树。",
    "published_at": "2024-05-01T00:00:00Z",
    "category": "数据库",
}
HOSTILE = {
    "id": "x",
    "title": '<img src=x onerror="alert(1)">"><script>alert(2)</script>',
    "url": "/x",
    "image": "javascript:alert(3)",
    "summary": "</p><script>alert(4)</script>",
    "published_at": None,
    "category": '"><svg onload=alert(5)>',
}


class Elements(HTMLParser):
    """Start tags and attributes of a fragment, to see what a browser would build."""

    def __init__(self) -> None:
        super().__init__()
        self.tags: list[tuple[str, dict[str, str | None]]] = []
        self.text: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, dict(attrs)))

    def handle_data(self, data: str) -> None:
        self.text.append(data)


def parsed(html: str) -> Elements:
    elements = Elements()
    elements.feed(html)
    return elements


def test_cards_markup_is_the_widgets() -> None:
    html = render("q", [ITEM, {**ITEM, "id": "b", "image": None, "title": "无图"}], Shape())
    assert html.startswith(
        '<section class="recengine-related recengine-layout-cards recengine-thumbs"'
    )
    assert (
        '<h2 class="recengine-heading" id="recengine-heading-' in html
        and "Related articles" in html
    )
    assert (
        '<li class="recengine-item"><span class="recengine-thumb"><img class="recengine-image" '
        'alt="" loading="lazy" decoding="async" width="480" height="270" '
        'src="https://cdn.example/a.jpg"></span><a class="recengine-link" href="/posts/a-1" '
        'data-recengine-slot="0"><span class="recengine-title">索引的原理</span></a>'
        '<p class="recengine-meta"><time class="recengine-date" datetime="2024-05-01T00:00:00Z">'
        'May 1, 2024</time><span class="recengine-category">数据库</span></p></li>'
    ) in html
    assert (
        '<span class="recengine-thumb recengine-thumb-none" aria-hidden="true" '
        f'data-initial="无" data-tone="{ord("无") % 6}"></span>'
    ) in html
    assert "recengine-summary" not in html  # not a part of cards


@pytest.mark.parametrize(
    ("layout", "show", "present", "absent"),
    [
        ("list", None, ["recengine-date"], ["recengine-thumb", "recengine-category"]),
        ("grid", None, ["recengine-thumb", "recengine-summary", "recengine-category"], []),
        ("list", ("image", "summary"), ["recengine-thumb", "recengine-summary"], ["<time"]),
    ],
)
def test_layouts_and_parts(
    layout: str, show: tuple[str, ...] | None, present: list[str], absent: list[str]
) -> None:
    html = render("q", [ITEM], Shape(layout=layout, show=show))  # type: ignore[arg-type]
    assert f"recengine-layout-{layout}" in html
    assert all(p in html for p in present) and not any(a in html for a in absent)


def test_hostile_text_and_urls_stay_inert() -> None:
    html = render(
        "q", [HOSTILE, {**HOSTILE, "id": "y", "url": "javascript:alert(6)"}], Shape(layout="grid")
    )
    elements = parsed(html)
    tags = [t for t, _ in elements.tags]
    assert "script" not in tags and "svg" not in tags and tags.count("img") == 0
    assert all(not name.startswith("on") for _, a in elements.tags for name in a)
    assert "alert(2)" in "".join(elements.text)  # shown as text
    assert html.count('class="recengine-item"') == 1  # the javascript: link is left out
    assert "javascript:" not in html


@pytest.mark.parametrize(
    ("url", "template", "expected"),
    [
        ("https://other.example/x", None, "https://other.example/x"),
        ("/2024/x.html", None, "/2024/x.html"),
        ("//evil.example/x", None, None),
        ("/\\evil.example", None, None),
        ("javascript:alert(1)", "/post/{id}", "/post/a%2F1"),
        (None, "/post/{id}", "/post/a%2F1"),
        (None, None, None),
        ('/x" onmouseover="a', None, None),
    ],
)
def test_links(url: str | None, template: str | None, expected: str | None) -> None:
    assert link_of({"id": "a/1", "url": url}, template) == expected


def test_images() -> None:
    assert image_of("https://cdn.example/a.png") == "https://cdn.example/a.png"
    assert image_of("//cdn.example/a.png") == "//cdn.example/a.png"
    assert image_of("/up/a.png") == "/up/a.png"
    for bad in ("javascript:alert(1)", "data:image/png;base64,AA", "a.png", "", None, "/a b.png"):
        assert image_of(bad) is None


@pytest.mark.parametrize(
    ("value", "lang", "zone", "expected"),
    [
        ("2024-05-01T00:00:00Z", "zh-CN", None, "2024年5月1日"),
        ("2024-05-01T00:00:00Z", "en", None, "May 1, 2024"),
        ("2024-04-30T20:00:00Z", "zh", ZoneInfo("Asia/Shanghai"), "2024年5月1日"),
        ("2024-09-09T00:00:00Z", "en-US", None, "Sep 9, 2024"),
        ("not a date", "en", None, None),
    ],
)
def test_dates_as_the_browser_writes_them(
    value: str, lang: str, zone: Any, expected: str | None
) -> None:
    assert date_text(value, lang, zone) == expected


def test_nothing_linkable_is_an_empty_fragment() -> None:
    assert render("q", [{**ITEM, "url": None}], Shape()) == ""
    heading = render("q", [ITEM], Shape(lang="zh-Hans", heading_level=4))
    assert '<h4 class="recengine-heading"' in heading and ">相关文章</h4>" in heading
    named = render("q", [ITEM], Shape(heading="<b>More</b>"))
    assert "&lt;b&gt;More&lt;/b&gt;" in named
