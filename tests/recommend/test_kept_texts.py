"""What lists compare of stored texts is kept across answers (``recommend.lists.listing.Texts``
with ``text.neardup.kept.KeptTexts``): taken again without SQL while the article's last change is
the one it was kept at, read and computed again once the text changes. On SQLite and PostgreSQL,
on real JavaGuide text."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
from sqlalchemy import Engine, event
from sqlalchemy.orm import Session, sessionmaker

from recengine.config import Settings
from recengine.pipeline.featurize import Featurizer
from recengine.pipeline.ingest.ingester import Ingester
from recengine.recommend.lists.facts import facts_of
from recengine.recommend.lists.listing import Texts
from recengine.recommend.live import LiveIndex
from recengine.storage.rows.articles import get_article
from recengine.text.cleaning.excerpt import card_rule
from recengine.text.neardup.compare import Compared, article_compared
from recengine.text.neardup.kept import KeptTexts
from tests.recommend.test_related import dated_records
from tests.templates import load


def compared_now(
    settings: Settings, index: LiveIndex, factory: sessionmaker[Session], kept: KeptTexts, aid: int
) -> Compared:
    """What one answer's :class:`Texts` gives for the article, as a related list builds them."""
    with factory() as session:
        snap = index.current(session=session)
        facts = facts_of(snap, session, card_rule(settings.ingest.summary_chars))
        return Texts(session, settings.features.strip_boilerplate, kept, facts.seq_of)(aid)


def same(a: Compared, b: Compared) -> bool:
    return bool(
        np.array_equal(a.shingles, b.shingles)
        and np.array_equal(a.title, b.title)
        and a.body_chars == b.body_chars
    )


def test_a_kept_text_is_taken_without_sql_until_the_article_changes(
    settings: Settings,
    factory: sessionmaker[Session],
    featurizer: Featurizer,
    data_dir: Path,
    engine: Engine,
) -> None:
    records = dated_records(data_dir, 6)
    load(factory, featurizer, records)
    index = LiveIndex(settings, factory, background=False)
    kept = KeptTexts(1 << 24)
    with factory() as session:
        stored = get_article(session=session, external_id=records[0]["id"])
        assert stored is not None
        aid = stored.id
    first = compared_now(settings, index, factory, kept, aid)
    expected = article_compared(stored.title, stored.content, settings.features.strip_boilerplate)
    assert same(first, expected) and len(kept) == 1
    texts_read: list[str] = []

    def seen(conn: Any, cursor: Any, statement: str, *args: Any) -> None:
        if "articles.content" in statement:
            texts_read.append(statement)

    event.listen(engine, "before_cursor_execute", seen)
    try:
        again = compared_now(settings, index, factory, kept, aid)
    finally:
        event.remove(engine, "before_cursor_execute", seen)
    assert texts_read == [] and same(again, first)
    edited = {**records[0], "content": records[0]["content"][: len(records[0]["content"]) // 2]}
    Ingester(factory, featurizer).ingest_records([edited])
    after = compared_now(settings, index, factory, kept, aid)
    with factory() as session:
        now = get_article(session=session, external_id=records[0]["id"])
        assert now is not None and now.seq > stored.seq
    want = article_compared(now.title, now.content, settings.features.strip_boilerplate)
    assert same(after, want) and not same(after, first)
