"""What a related-articles card shows of an article's text: its first image and a summary.

A site's export rarely carries a thumbnail or an excerpt of its own; what it does carry is the
article's HTML (or Markdown). So, when a record gives none (``pipeline.cards``):

* :func:`first_image`: the ``src`` of the first ``<img>`` of the HTML (or the first Markdown
  image, ``![alt](src)``) that a reader's browser may load: ``http(s)://`` or protocol-relative
  ``//cdn.example/x.png``, or a path on the site (``/uploads/x.png``, or relative to the
  article's own absolute url). ``data:`` (inline placeholders of lazy-loading plugins),
  ``javascript:`` and any other scheme are never taken; a lazy-loaded image's real source is
  read from ``data-src`` / ``data-original`` / ``data-lazy-src``; images declared smaller than
  :data:`MIN_SIDE` pixels (spacers, tracking pixels, icons) are skipped. The rule of what a
  reader's page may load is :func:`usable_image`, which the renderers apply again to a given
  ``image`` (stored as the record gave it).
* :func:`summary_of`: the readable text (``text.cleaning.clean.readable``; Markdown's headings, code
  blocks, emphasis and link syntax dropped) cut at the last sentence end within ``limit``
  characters (``ingest.summary_chars``, ~120: two lines of a card), or, with no sentence end
  there, at the last word boundary with an ellipsis.

Regular expressions, as in ``text.cleaning.clean``: cheap next to tokenization, and only the first
image and the first few sentences are wanted.
"""

from __future__ import annotations

import html
import re
from urllib.parse import urljoin, urlsplit

from recengine.text.cleaning.clean import readable

RULE_VERSION = 1  # of cards (``pipeline.cards``): raise when the derivation changes, and a
# reindex derives every card again
MIN_SIDE = 50  # pixels: an image declared narrower or shorter is a spacer or an icon
ELLIPSIS = "…"
# The part of a text a summary is cut from, before cleaning (markup is most of many HTML
# texts' first characters; a text whose summary does not fit in it is cleaned whole).
_HEAD = 16_000

_IMG_TAG = re.compile(r"<img\b([^>]*)>", re.IGNORECASE)
_MARKDOWN_IMAGE = re.compile(r"!\[[^\]\n]*\]\(\s*<?([^\s)>]+)>?(?:\s+[\"'][^\"'\n]*[\"'])?\s*\)")
_ATTR = re.compile(r"""([^\s"'<>/=]+)(?:\s*=\s*(?:"([^"]*)"|'([^']*)'|([^\s"'<>=`]+)))?""")
_SOURCES = ("src", "data-src", "data-original", "data-lazy-src")
_SCHEME = re.compile(r"^[a-z][a-z0-9+.-]*:", re.IGNORECASE)

# Not prose: headings, captions and code of HTML (their text would open a summary).
_HTML_NOT_PROSE = re.compile(
    r"<(h[1-6]|figcaption|pre|table)\b[^>]*>.*?</\1\s*>", re.IGNORECASE | re.DOTALL
)
_FENCE = re.compile(r"^(`{3,}|~{3,}).*?^\1[ \t]*$", re.MULTILINE | re.DOTALL)
_HEADING_LINE = re.compile(r"^[ \t]*(?:#{1,6}[ \t].*|[=-]{3,}[ \t]*)$", re.MULTILINE)
_LINE_MARKS = re.compile(r"^[ \t]*(?:>[ \t]?)+|^[ \t]*(?:[-*+]|\d{1,3}[.)])[ \t]+", re.MULTILINE)
_MD_IMAGE_ANY = re.compile(r"!\[[^\]\n]*\]\([^)\n]*\)")
_MD_LINK = re.compile(r"\[([^\]\n]+)\]\([^)\n]*\)")
_EMPHASIS = re.compile(r"(\*\*|__|\*|`+|~~)(?=\S)(.+?)(?<=\S)\1")
# A sentence ends at 。！？… (with the closing quotes after it), or at . ! ? before a space.
_SENTENCE_END = re.compile(r"[。！？…]+[”’」』\"')）]*|[.!?]+[\"')”’]*(?=\s|$)")


def usable_image(src: str | None, base: str | None = None) -> str | None:
    """``src`` as a reader's page may load it, or None.

    Args:
        src: an image source as written (entities already decoded).
        base: the article's url; a relative ``src`` (``img/a.png``) is resolved against it
            when it is an absolute http(s) url, and dropped otherwise.

    Example:
        >>> usable_image("/up/a.png"), usable_image("data:image/gif;base64,R0l"), usable_image(
        ...     "javascript:alert(1)")
        ('/up/a.png', None, None)
    """
    src = (src or "").strip()
    if not src or any(c in src for c in "\n\r\t<>\"'`\\") or len(src) > 2_000:
        return None
    if src.startswith("//"):
        return src if urlsplit("https:" + src).hostname else None
    if _SCHEME.match(src):
        return src if urlsplit(src).scheme.lower() in ("http", "https") else None
    if src.startswith("/"):
        return src
    if base and re.match(r"^https?://", base, re.IGNORECASE):
        return urljoin(base, src)
    return None


def first_image(markup: str, base: str | None = None) -> str | None:
    """The first image of ``markup`` a reader's page may load (module docstring), or None."""
    found: list[tuple[int, str]] = []
    for tag in _IMG_TAG.finditer(markup):
        attributes = _attributes(tag.group(1))
        if _too_small(attributes):
            continue
        for name in _SOURCES:
            src = usable_image(attributes.get(name), base)
            if src is not None:
                found.append((tag.start(), src))
                break
        if found:
            break
    markdown = next(
        (
            (m.start(), s)
            for m in _MARKDOWN_IMAGE.finditer(markup)
            if (s := usable_image(html.unescape(m.group(1)), base)) is not None
        ),
        None,
    )
    if markdown is not None:
        found.append(markdown)
    return min(found)[1] if found else None


def _attributes(text: str) -> dict[str, str]:
    out: dict[str, str] = {}
    for m in _ATTR.finditer(text):
        value = next((v for v in m.group(2, 3, 4) if v is not None), "")
        out.setdefault(m.group(1).lower(), html.unescape(value))
    return out


def _too_small(attributes: dict[str, str]) -> bool:
    for side in ("width", "height"):
        digits = re.match(r"\s*(\d+)\s*(?:px)?\s*$", attributes.get(side, ""))
        if digits and int(digits.group(1)) < MIN_SIDE:
            return True
    return False


def prose(text: str) -> str:
    """The readable text of HTML or Markdown, one line per paragraph: HTML's headings,
    captions, code and tables dropped, markup removed (``text.cleaning.clean.readable``), Markdown's
    code blocks, headings, images, link targets, list and quote marks and emphasis dropped;
    whitespace collapsed."""
    text = readable(_HTML_NOT_PROSE.sub("\n", text))
    text = _FENCE.sub("\n", text)
    text = _HEADING_LINE.sub("", text)
    text = _LINE_MARKS.sub("", text)
    text = _MD_IMAGE_ANY.sub("", text)
    text = _MD_LINK.sub(r"\1", text)
    text = _EMPHASIS.sub(r"\2", text)
    lines = (" ".join(line.split()) for line in text.split("\n"))
    return "\n".join(line for line in lines if line)


def summary_of(text: str, limit: int) -> str:
    """A summary of ``text`` (HTML, Markdown or plain) of at most about ``limit`` characters.

    Whole sentences when the first ones fit (the last sentence end at or before ``limit``);
    else the text cut at the last space (or, in Chinese, anywhere) before ``limit - 1`` with
    an ellipsis. Paragraphs are joined with a space. Empty when the text has no words.

    Example:
        >>> summary_of("<p>第一句。第二句很长很长。</p>", 8)
        '第一句。'
    """
    head = prose(text[:_HEAD])
    if len(text) > _HEAD and len(head) < limit:
        head = prose(text)
    flat = " ".join(head.split("\n"))
    if len(flat) <= limit:
        return flat
    window = flat[: limit + 1]
    ends = [m.end() for m in _SENTENCE_END.finditer(window) if m.end() <= limit]
    if ends and ends[-1] >= limit // 3:
        return flat[: ends[-1]].strip()
    cut = flat[: limit - 1]
    space = cut.rfind(" ")
    if space >= limit // 2:
        cut = cut[:space]
    return cut.rstrip(" ,;:，、；：") + ELLIPSIS


def card_rule(summary_chars: int) -> str:
    """What a card derived with ``summary_chars`` is stored with (``articles.card_rule``): a
    list reading a card held in memory with another rule reads it again (``recommend.lists``)."""
    return f"{RULE_VERSION}:{summary_chars}"
