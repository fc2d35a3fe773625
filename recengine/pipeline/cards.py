"""What a related-articles card shows of an article, derived once when it is stored.

Lists carry, for each item, an ``image`` and a ``summary`` (``recommend.lists.listing.item``).
They are derived here, at ingest (outside the write lock) and by every reindex (local and Spark:
``pipeline.reindex.cards``, for rows stored before they existed or derived by another rule), and
stored with the article (``card_image``, ``card_summary``, ``card_rule``), so a list never
parses HTML per request:

* image: the record's ``image`` when a reader's page may load it
  (``text.cleaning.excerpt.usable_image``: http(s), protocol-relative, or a path on the site), else
  the first such image of the content (``text.cleaning.excerpt.first_image``), else none (the widget
  shows a neutral placeholder);
* summary: the record's ``summary`` (its markup removed, whitespace collapsed), else the text
  cut at a sentence end within ``ingest.summary_chars`` characters
  (``text.cleaning.excerpt.summary_of``).

``card_rule`` names the rule and the summary length a card was derived by (:func:`card_rule`):
a reindex derives again the cards of every other rule, so a new ``ingest.summary_chars`` (or a
new version of this rule) reaches every stored article at the next reindex.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from recengine.text.cleaning.excerpt import card_rule, first_image, prose, summary_of, usable_image


@dataclass(frozen=True)
class Card:
    image: str | None
    summary: str
    rule: str

    def columns(self) -> dict[str, Any]:
        """The article row's card columns."""
        return {"card_image": self.image, "card_summary": self.summary, "card_rule": self.rule}


def card_of(
    *,
    content: str,
    url: str | None,
    image: str | None,
    summary: str | None,
    summary_chars: int,
) -> Card:
    """The card of one article (see the module docstring)."""
    shown = usable_image(image, url) if image else None
    if shown is None:
        shown = first_image(content, url)
    text = " ".join(prose(summary).split("\n")) if summary else ""
    return Card(shown, text or summary_of(content, summary_chars), card_rule(summary_chars))
