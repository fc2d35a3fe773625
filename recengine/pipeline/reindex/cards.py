"""Every reindex derives the cards of the articles whose card is missing or stale.

A card (``pipeline.cards``) is derived when an article is stored. Articles stored before
cards existed (migration 0010) have none, and those derived with another ``ingest.summary_chars``
(or an older rule) name another ``card_rule``: every reindex, local, incremental or Spark, starts
by deriving theirs (:func:`fill_cards` here, ``spark.cards`` on the executors), page by page in
short transactions, before anything else (a reindex's later steps never read cards).

A card is written only if its article has not changed since it was read (its ``seq``): an
article written meanwhile keeps the card its writer derived. Cards take no change sequence
number: they change no text, feature or cluster; a cached list shows them from the next change
or the reindex's switch (``web.api.answers``).
"""

from __future__ import annotations

from sqlalchemy.orm import Session, sessionmaker

from recengine.config import Settings
from recengine.pipeline.cards import card_of
from recengine.pipeline.reindex.versions import Progress, QuietProgress
from recengine.storage.db import transaction
from recengine.storage.rows.articles import CardSource, stale_cards, write_cards
from recengine.text.cleaning.excerpt import card_rule

PAGE = 500  # articles read, derived and written per transaction


def fill_cards(
    factory: sessionmaker[Session], settings: Settings, progress: Progress | None = None
) -> int:
    """Derive and store the card of every live article whose card is missing or stale.

    Returns:
        How many articles were looked at (written unless changed meanwhile).
    """
    progress = progress or QuietProgress()
    progress.start("cards", None)
    done, after = 0, 0
    while True:
        n, after = derive_page(factory, settings, after, None)
        if n == 0:
            return done
        done += n
        progress.update(n)


def derive_page(
    factory: sessionmaker[Session], settings: Settings, after: int, before: int | None
) -> tuple[int, int]:
    """Derive the cards of the next :data:`PAGE` stale articles with ``after < id < before``.

    Returns:
        ``(articles read, the last one's id)``: ``(0, after)`` when none is left.
    """
    chars = settings.ingest.summary_chars
    rule = card_rule(chars)
    with transaction(factory) as session:
        rows = stale_cards(session=session, rule=rule, after_id=after, before_id=before, limit=PAGE)
    if not rows:
        return 0, after
    cards = [_card(row, chars) for row in rows]
    with transaction(factory) as session:
        write_cards(session=session, rows=cards)
    return len(rows), int(rows[-1].id)


def _card(row: CardSource, chars: int) -> dict[str, object]:
    card = card_of(
        content=row.content,
        url=row.url,
        image=row.image,
        summary=row.summary,
        summary_chars=chars,
    )
    return {"id": row.id, "seq": row.seq, **card.columns()}
