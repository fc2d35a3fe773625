"""HTML or plain text to clean, normalised text.

Steps, in order, and why:

1. drop ``<script>``, ``<style>``, ``<noscript>``, ``<template>`` elements and comments: code for
   browsers, not words for readers;
2. block-level tags (``p``, ``div``, ``br``, ``li``, ``h1``-``h6``, ``pre``, ``tr`` ...) become line
   breaks, every other tag is removed: line structure matters to readers and to the sentence-based
   near-duplicate methods, inline tags must not split words;
3. entities decoded (``&amp;`` -> ``&``, ``&#x4e2d;`` -> ``中``) once, after tags are gone, so a
   decoded ``&lt;`` can never become a tag;
4. Unicode NFKC: folds full-width ASCII (``Ｐｙｔｈｏｎ３`` -> ``Python3``), full-width punctuation
   (``，`` -> ``,``), the ideographic space and compatibility forms, so a repost typed with an
   IME in full-width mode is the same text;
5. whitespace collapsed: runs of spaces and tabs become one space, lines are stripped, empty lines
   dropped; zero-width characters removed.

Regular expressions, not a DOM parser: cleaning has to cost little next to tokenization (about
10x cheaper than ``html.parser`` here), and only text is wanted, not a tree.
"""

from __future__ import annotations

import html
import re
import unicodedata

_DROP_ELEMENTS = re.compile(
    r"<(script|style|noscript|template|svg|math)\b[^>]*>.*?</\1\s*>|<!--.*?(?:-->|$)",
    re.IGNORECASE | re.DOTALL,
)
_BLOCK_TAGS = (
    "address|article|aside|blockquote|br|caption|dd|details|dialog|div|dl|dt|fieldset|figcaption|"
    "figure|footer|form|h[1-6]|header|hr|li|main|nav|ol|p|pre|section|summary|table|tbody|td|"
    "tfoot|th|thead|tr|ul"
)
_BLOCK_TAG = re.compile(rf"</?(?:{_BLOCK_TAGS})\b[^>]*>", re.IGNORECASE)
# Every other element of HTML (current and legacy), plus custom elements (a hyphen in the name)
# and namespaced ones (``o:p`` from Word): only these are markup. ``a<b and c>d`` or a quote in
# ``<<...>>`` is text, and stays.
_INLINE_TAGS = (
    "a|abbr|acronym|area|audio|b|base|basefont|bdi|bdo|big|blink|body|button|canvas|center|cite|"
    "code|col|colgroup|data|datalist|del|dfn|dir|em|embed|font|frame|frameset|head|html|i|iframe|"
    "img|input|ins|kbd|label|legend|link|map|mark|marquee|menu|meta|meter|nobr|object|optgroup|"
    "option|output|param|picture|progress|q|rb|rp|rt|rtc|ruby|s|samp|script|select|slot|small|"
    "source|style|noscript|template|svg|math|"
    "span|strike|strong|sub|sup|textarea|time|title|track|tt|u|var|video|wbr"
)
_NAME = rf"(?:{_BLOCK_TAGS}|{_INLINE_TAGS}|[a-z][a-z0-9]*-[a-z0-9-]*|[a-z][a-z0-9]*:[a-z][a-z0-9]*)"
_ATTRS = r"""(?:\s+[^\s"'<>/=]+(?:\s*=\s*(?:"[^"]*"|'[^']*'|[^\s"'<>=`]+))?)*\s*/?"""
_ANY_TAG = re.compile(
    rf"</{_NAME}\s*>|<{_NAME}(?![a-z0-9:-]){_ATTRS}>|<![^<>]*>|<\?[^<>]*>", re.IGNORECASE
)
# What says a text is HTML: a closing tag, an element that needs none (void or block-level:
# ``<br>``, ``<img src=...>``, ``<p>``), a doctype or comment, or an entity. An inline start tag
# alone (``<b and c>``) is not enough: plain text writes ``a<b`` and ``c>d`` too.
_VOID_TAGS = "area|base|br|col|embed|hr|img|input|link|meta|param|source|track|wbr"
_LOOKS_LIKE_HTML = re.compile(
    rf"</{_NAME}\s*>|<(?:{_VOID_TAGS}|{_BLOCK_TAGS})(?![a-z0-9:-]){_ATTRS}>|<!doctype\b|<!--"
    r"|&(?:#\d+|#x[0-9a-f]+|[a-z][a-z0-9]*);",
    re.IGNORECASE,
)
_ZERO_WIDTH = "\u200b\u200c\u200d\u2060\ufeff\u00ad"
# The characters that most often keep Chinese text from being NFKC-normal (counted on the real
# corpora), with their NFKC forms.
_COMMON_FOLDS = tuple(
    (c, unicodedata.normalize("NFKC", c)) for c in "，：（）？！；\u3000…\xa0～％．－／｜＜＞"
)


def strip_html(markup: str) -> str:
    """Remove tags, keep text; block tags become line breaks. Entities are decoded."""
    text = _DROP_ELEMENTS.sub(" ", markup)
    text = _BLOCK_TAG.sub("\n", text)
    text = _ANY_TAG.sub("", text)
    return html.unescape(text)


def nfkc(text: str) -> str:
    """``unicodedata.normalize("NFKC", text)``, about 6x faster on Chinese text.

    CPython normalises the whole string on its slow path as soon as one character needs it,
    and Chinese text nearly always has full-width punctuation (，：（）？！；). Those few
    characters are replaced first by their NFKC forms with ``str.replace`` (a C-speed scan);
    then the quick check usually passes and the rest costs nothing. A replaced character's NFKC
    form is its full compatibility decomposition, so normalising afterwards gives exactly what
    normalising the original gives (tests/text/test_clean.py compares on the real corpora).
    """
    for char, folded in _COMMON_FOLDS:
        if char in text:
            text = text.replace(char, folded)
    if unicodedata.is_normalized("NFKC", text):
        return text
    # Normalise only the lines that need it: NFKC never composes across a line break (a line
    # break is a starter), and the slow path costs in proportion to what it is given.
    return "\n".join(
        line if unicodedata.is_normalized("NFKC", line) else unicodedata.normalize("NFKC", line)
        for line in text.split("\n")
    )


def collapse_whitespace(text: str) -> str:
    """Runs of whitespace become one space; lines stripped; empty lines dropped."""
    lines = (" ".join(line.split()) for line in text.split("\n"))
    return "\n".join(line for line in lines if line)


def normalize(text: str) -> str:
    """NFKC, zero-width characters removed, whitespace collapsed (one line break per line)."""
    text = nfkc(text)
    for char in _ZERO_WIDTH:  # a C-speed scan each; a character class cost ~10x more
        if char in text:
            text = text.replace(char, "")
    return collapse_whitespace(text.replace("\r\n", "\n").replace("\r", "\n"))


def readable(text: str) -> str:
    """The stored text as a reader sees it: markup removed as :func:`clean` removes it (the same
    test for what is markup), entities decoded, zero-width characters dropped, line breaks
    unified; nothing folded or collapsed. NFKC is for comparing texts (``，`` -> ``,``), not for
    showing them; runs of spaces stay (``text.cleaning.paragraphs`` reads them as paragraph breaks).

    Example:
        >>> readable("<p>数据库，索引（Ｂ树）</p><p>二</p>")
        '\\n数据库，索引（Ｂ树）\\n\\n二\\n'
    """
    if _LOOKS_LIKE_HTML.search(text):
        text = strip_html(text)
    for char in _ZERO_WIDTH:
        if char in text:
            text = text.replace(char, "")
    return text.replace("\r\n", "\n").replace("\r", "\n")


def clean(text: str) -> str:
    """Clean HTML or plain text for tokenization.

    Plain text is left as it is apart from normalisation: a ``<`` in a math formula, a code
    sample or a ``<<quote>>`` is only treated as markup when the text has real markup (a closing
    tag, a void or block-level tag, a doctype, comment or entity), and then only the tags of
    HTML elements are removed: ``a<b and c>d`` keeps its text.

    Example:
        >>> clean("<p>Ｈｅｌｌｏ&nbsp;<b>世界</b></p><script>x()</script><p>二</p>")
        'Hello 世界\\n二'
    """
    if _LOOKS_LIKE_HTML.search(text):
        text = strip_html(text)
    return normalize(text)
