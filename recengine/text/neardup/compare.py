"""What the near-duplicate decision compares of one article: a pure function of its clean text.

``compared(title, body)`` takes the clean title and the clean body (boilerplate already
stripped: ``pipeline.featurize.text_of`` does both) and returns

* ``shingles``: the 5-character shingles (:mod:`recengine.text.neardup.shingles`) of the title and
  the body *without quoted reply text* (:mod:`recengine.text.cleaning.quotes`): what resemblance and
  containment are computed on;
* ``title``: the title's shingles alone, and ``body_chars``: how many word characters the body
  has left, not counting those of web addresses: the junk rule of
  :mod:`recengine.features.neardup` needs them (a page whose body is near-empty or site chrome
  is only the same article as a page with the same title). A link's address is chrome too: the
  paywall stubs of a Markdown site ("**Netty** 相关的面试题为我的[知识星球](https://javaguide.cn/...)
  专属内容") have 150-160 word characters, 90-100 of them in addresses, and stubs of different
  articles were judged the same article on their shared template and addresses (JavaGuide's
  stubs of paid articles: 3 false pairs in its related lists, ``bench.related_quality``).

The candidate hashes of the same text (:mod:`recengine.text.neardup.passages`) are not part of it:
no decision reads them, and they cost a third of ``compared`` (computed for every article a
verification loads); :func:`article_passages` computes them for the passage index.

Everything here depends on the text only (no corpus statistics), so every process, the
ingest, the reindex workers and the Spark executors compute the same values.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np

from recengine.text.cleaning.boilerplate import strip_boilerplate
from recengine.text.cleaning.clean import clean
from recengine.text.cleaning.quotes import unquoted
from recengine.text.neardup.passages import Passages, passages_of
from recengine.text.neardup.shingles import EMPTY, Points, Shingles, shingles_of, word_points


@dataclass(frozen=True)
class Compared:
    """An article as the near-duplicate decision sees it (see the module docstring).

    Attributes:
        shingles: ``uint64 (n,)`` sorted distinct shingle hashes of title + unquoted body.
        title: ``uint64 (t,)`` shingle hashes of the title.
        body_chars: word characters of the unquoted body.
    """

    shingles: Shingles
    title: Shingles
    body_chars: int

    @classmethod
    def of_text(cls, text: str) -> Compared:
        """From a text without a separate title (the whole text is body)."""
        return compared("", text)


NOTHING = Compared(EMPTY, EMPTY, 0)


# What :func:`address_chars` counts, in the lowered text: a run of a URL's characters (RFC 3986's,
# ASCII; not brackets or parentheses, so Markdown's ``[text](url)`` ends it) after "://" or
# "www.", and the target of a Markdown link. Each pattern starts with a literal, which the
# regular expression engine scans for at C speed (one alternation behind a look-behind was tried
# at every position: 70 % of the cost of the word points it is counted in).
_URL = "[a-z0-9\\-._~:/?#@!$&'*+,;=%]"
_SCHEMED = re.compile("://" + _URL + "+")
_WWW = re.compile("www\\." + _URL + "*")
_TARGET = re.compile(r"\]\(([^()\s]+)\)")
_SCHEMES = frozenset(("http", "https", "ftp"))


@dataclass(frozen=True)
class WordPoints:
    """The word characters (``uint32``, :func:`recengine.text.neardup.shingles.word_points`) of a
    clean title and of the body without quoted reply text: what both an article's :class:`Compared`
    and its passage hashes are computed from (those of the compared text ``title + "\\n" +
    body`` are the two concatenated), so a caller that has them computes neither again.
    ``address_chars``: how many of the body's word characters are in web addresses."""

    heading: Points
    words: Points
    address_chars: int

    def compared(self) -> Compared:
        """:func:`compared` of the text these points are of."""
        both = np.concatenate([self.heading, self.words])
        return Compared(
            shingles=shingles_of(both),
            title=shingles_of(self.heading),
            body_chars=len(self.words) - self.address_chars,
        )

    def passages(self) -> Passages:
        """:func:`clean_passages` of the text these points are of."""
        return passages_of(np.concatenate([self.heading, self.words]))


def points_of(title: str, body: str) -> WordPoints:
    """:class:`WordPoints` of a clean title and a clean (boilerplate-stripped) body."""
    said = unquoted(body)
    return WordPoints(word_points(title), word_points(said), address_chars(said))


def address_chars(text: str) -> int:
    """Word characters of ``text`` that are in web addresses: ``http``, ``https`` or ``ftp``
    URLs and ``www.`` host names (not inside an ASCII word: Chinese text runs into an address
    without a space, "见https://..."), and Markdown link targets, relative ones and those with
    non-ASCII characters too (``](../a/b.md)``, ``](https://zh.wikipedia.org/wiki/分治法)``).
    An address ends at whitespace, so the count is additive over pieces of text joined by it.

    Example:
        >>> address_chars("见[知识星球](https://javaguide.cn/about.html)及www.a.cn。[图](../a.md)")
        34
    """
    low = text.lower()
    if "://" not in low and "](" not in low and "www." not in low:  # C-speed scans: most texts
        return 0
    spans = [m.span(1) for m in _TARGET.finditer(low)] if "](" in low else []
    for m in _SCHEMED.finditer(low) if "://" in low else ():
        start = m.start()
        while start and _in_word(low[start - 1]):
            start -= 1
        if low[start : m.start()] in _SCHEMES:
            spans.append((start, m.end()))
    for m in _WWW.finditer(low) if "www." in low else ():
        if not (m.start() and _in_word(low[m.start() - 1])):
            spans.append(m.span())
    covered, end = [], 0
    for start, stop in sorted(spans):  # their union: a URL inside a link target counts once
        if stop > max(start, end):
            covered.append(low[max(start, end) : stop])
            end = stop
    return len(word_points("".join(covered)))


def _in_word(char: str) -> bool:
    return char.isascii() and char.isalnum()


def compared(title: str, body: str) -> Compared:
    """:class:`Compared` of a clean title and a clean (boilerplate-stripped) body.

    Example:
        >>> a = compared("标题", "正文第一句。\\n> 被引用的别人的话")
        >>> b = compared("标题", "正文第一句。")
        >>> bool((a.shingles == b.shingles).all()), a.body_chars
        (True, 5)
    """
    return points_of(title, body).compared()


def clean_parts(title: str, content: str, strip: bool = True) -> tuple[str, str]:
    """The clean title and the clean body of a stored article (repost boilerplate removed when
    ``strip``: ``features.strip_boilerplate``), as the decision and the passage index see them."""
    body = clean(content)
    return clean(title), strip_boilerplate(body) if strip else body


def article_compared(title: str, content: str, strip: bool = True) -> Compared:
    """:func:`compared` of a stored article's title and content (cleaned by
    :func:`clean_parts`): what the near-duplicate decision compares of it."""
    return compared(*clean_parts(title, content, strip))


def article_passages(title: str, content: str, strip: bool = True) -> Passages:
    """The passage hashes (``uint64 (<= 8,)``) of the text :func:`compared` sees (title +
    unquoted body of :func:`clean_parts`): what the passage index stores of an article."""
    return clean_passages(*clean_parts(title, content, strip))


def clean_passages(title: str, body: str) -> Passages:
    """:func:`article_passages` of an article already cleaned by :func:`clean_parts`: the one
    computation of passages, for a text a caller has cleaned anyway (the reindex's workers,
    beside the tokens) as for one read from SQL."""
    return points_of(title, body).passages()
