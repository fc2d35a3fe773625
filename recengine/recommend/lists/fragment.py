"""A list as HTML, without JavaScript: the markup the widget builds, escaped, for pages that run
no script (server-side includes, AMP, RSS/Atom items, e-mail) and static sites.

``GET /api/v1/articles/<id>/related.html`` and ``recengine export related --format html`` send
:func:`render`'s fragment: the ``<section class="recengine-related recengine-layout-...">`` of
``widget.js``, item for item the same elements, classes and attributes, so ``/widget.css`` (or
the site's own rules for the ``recengine-*`` classes) styles both alike. What a page cannot do
without a script is done here: every text is escaped (``html.escape``, quotes included), a link
is an item's url when it is absolute http(s) or a path on the including site (``/2024/x.html``;
not ``//other.example`` nor ``/\\other.example``), else the ``link`` template's, else the item is
left out; an image is used only over http(s) (absolute, protocol-relative or a path); dates
are written for the language (``zh*``: 2024年5月1日, otherwise May 1, 2024, as the browser's
``Intl.DateTimeFormat`` writes them) in the site's time zone (``ingest.naive_timezone``).
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime, tzinfo
from html import escape
from typing import Any, Literal
from urllib.parse import quote

Layout = Literal["list", "cards", "grid"]
LAYOUTS: Mapping[str, tuple[str, ...]] = {  # the parts each layout shows by default
    "list": ("title", "date"),
    "cards": ("image", "title", "date", "category"),
    "grid": ("image", "title", "date", "category", "summary"),
}
PARTS = ("image", "title", "date", "category", "summary")
MONTHS = ("Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec")
_HTTP = re.compile(r"^https?://[^/\\\s]", re.IGNORECASE)
_UNSAFE = re.compile(r"[\s\"'<>`\\]")


@dataclass(frozen=True)
class Shape:
    """How a list is shown: the widget's attributes, by the same names.

    Args:
        layout: ``data-recengine-layout``.
        show: ``data-recengine-show`` (None: the layout's parts; the title is always shown).
        lang: the page's language (the heading's and the dates').
        heading: ``data-recengine-heading`` (None: 相关文章 or "Related articles").
        heading_level: ``data-recengine-heading-level``, 1-6.
        link: ``data-recengine-link``, ``{id}`` replaced by the item's id, percent-encoded.
        zone: the time zone dates are written in.
    """

    layout: Layout = "cards"
    show: tuple[str, ...] | None = None
    lang: str = "en"
    heading: str | None = None
    heading_level: int = 2
    link: str | None = None
    zone: tzinfo | None = None

    def parts(self) -> frozenset[str]:
        return frozenset({"title", *(self.show or LAYOUTS[self.layout])}) & frozenset(PARTS)


def render(article: str, items: Iterable[Mapping[str, Any]], shape: Shape) -> str:
    """The fragment of a list's ``items`` (the body's), or "" when none can be linked (the
    widget then shows nothing either)."""
    parts = shape.parts()
    entries: list[str] = []
    for item in items:
        href = link_of(item, shape.link)
        if href is not None:
            entries.append(_entry(item, href, len(entries), parts, shape))
    if not entries:
        return ""
    chinese = shape.lang.lower().startswith("zh")
    title = shape.heading or ("相关文章" if chinese else "Related articles")
    level = shape.heading_level if 1 <= shape.heading_level <= 6 else 2
    anchor = "recengine-heading-" + hashlib.sha1(article.encode()).hexdigest()[:10]
    thumbs = " recengine-thumbs" if "image" in parts else ""
    return (
        f'<section class="recengine-related recengine-layout-{shape.layout}{thumbs}" '
        f'aria-labelledby="{anchor}"><h{level} class="recengine-heading" id="{anchor}">'
        f'{escape(title)}</h{level}><ul class="recengine-list">{"".join(entries)}</ul></section>'
    )


def link_of(item: Mapping[str, Any], template: str | None) -> str | None:
    """Where an item links to (see the module docstring), or None."""
    for raw in (item.get("url"), _filled(template, item)):
        if isinstance(raw, str) and not _UNSAFE.search(raw) and _linkable(raw):
            return raw
    return None


def _linkable(raw: str) -> bool:
    return bool(_HTTP.match(raw)) or (raw.startswith("/") and raw[1:2] not in ("/", "\\"))


def image_of(raw: Any) -> str | None:
    """An image a page may load: http(s), protocol-relative or a path; None otherwise."""
    if not isinstance(raw, str) or not raw or _UNSAFE.search(raw):
        return None
    if _HTTP.match(raw) or (raw.startswith("//") and len(raw) > 2) or raw.startswith("/"):
        return raw
    return None


def date_text(value: str, lang: str, zone: tzinfo | None) -> str | None:
    """``value`` (ISO 8601) as ``Intl.DateTimeFormat(lang, {year, month: "short", day})``
    writes it for Chinese and English, in ``zone``."""
    try:
        when = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None
    if zone is not None and when.tzinfo is not None:
        when = when.astimezone(zone)
    if lang.lower().startswith("zh"):
        return f"{when.year}年{when.month}月{when.day}日"
    return f"{MONTHS[when.month - 1]} {when.day}, {when.year}"


def _filled(template: str | None, item: Mapping[str, Any]) -> str | None:
    if not template or not isinstance(item.get("id"), str):
        return None
    return template.replace("{id}", quote(item["id"], safe="-_.!~*'()"))


def _entry(
    item: Mapping[str, Any], href: str, slot: int, parts: frozenset[str], shape: Shape
) -> str:
    title = str(item.get("title") or item.get("id") or "")
    out = ['<li class="recengine-item">']
    if "image" in parts:
        out.append(_thumbnail(image_of(item.get("image")), title))
    out.append(
        f'<a class="recengine-link" href="{escape(href)}" data-recengine-slot="{slot}">'
        f'<span class="recengine-title">{escape(title)}</span></a>'
    )
    meta = []
    published = item.get("published_at")
    when = date_text(published, shape.lang, shape.zone) if isinstance(published, str) else None
    if "date" in parts and when and isinstance(published, str):
        meta.append(
            f'<time class="recengine-date" datetime="{escape(published)}">{escape(when)}</time>'
        )
    category = item.get("category")
    if "category" in parts and isinstance(category, str) and category:
        meta.append(f'<span class="recengine-category">{escape(category)}</span>')
    if meta:
        out.append(f'<p class="recengine-meta">{"".join(meta)}</p>')
    summary = item.get("summary")
    if "summary" in parts and isinstance(summary, str) and summary:
        out.append(f'<p class="recengine-summary">{escape(summary)}</p>')
    out.append("</li>")
    return "".join(out)


def _thumbnail(src: str | None, title: str) -> str:
    if src is None:  # the title's first letter or digit, one of six tints (as the widget)
        initial = next((c for c in title if c.isalnum()), "")
        tone = ord(initial) % 6 if initial else 0
        return (
            '<span class="recengine-thumb recengine-thumb-none" aria-hidden="true" '
            f'data-initial="{escape(initial)}" data-tone="{tone}"></span>'
        )
    return (
        '<span class="recengine-thumb"><img class="recengine-image" alt="" loading="lazy" '
        f'decoding="async" width="480" height="270" src="{escape(src)}"></span>'
    )
