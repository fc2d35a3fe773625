"""Related lists read what they show from memory (``recommend.lists.facts``): the same lists as
from SQL through writes, no SQL statement per list for briefs, clusters or the query article,
and a card derived again shown at once. On SQLite and PostgreSQL, on real JavaGuide text."""

from __future__ import annotations

import random
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import Engine, event
from sqlalchemy.orm import Session, sessionmaker

from recengine.config import Settings
from recengine.pipeline.featurize import Featurizer
from recengine.pipeline.ingest.ingester import Ingester
from recengine.pipeline.reindex.cards import fill_cards
from recengine.recommend.live import LiveIndex, Snapshot
from recengine.recommend.related import RelatedArticles
from recengine.storage.rows.articles import get_article
from tests.recommend.test_related import ask, dated_records, repost
from tests.templates import load


class SqlOnly(LiveIndex):
    """A live index whose snapshots hold no briefs: every list reads what it shows from SQL
    (what a list made while the briefs open in the background does)."""

    def current(self, *, session: Session) -> Snapshot:
        snap = super().current(session=session)
        assert snap.briefs is not None  # the index held them: the comparison means something
        return replace(snap, briefs=None)


def services(settings: Settings, factory: sessionmaker[Session]) -> tuple[RelatedArticles, ...]:
    held = RelatedArticles(settings, LiveIndex(settings, factory, background=False))
    sql = RelatedArticles(settings, SqlOnly(settings, factory, background=False))
    return held, sql


@pytest.fixture
def records(data_dir: Path) -> list[dict[str, Any]]:
    return dated_records(data_dir, 80)


def test_lists_from_memory_equal_lists_from_sql_through_writes(
    settings: Settings,
    factory: sessionmaker[Session],
    featurizer: Featurizer,
    records: list[dict[str, Any]],
) -> None:
    """Reposts join clusters (and take them over when they are older), edits and deletions
    move them: after every write, both ways of reading give byte-equal lists, pages, filters,
    suppressed entries (rules, figures, ``via``) and cards included."""
    load(factory, featurizer, records[:50])
    held, sql = services(settings, factory)
    ingester = Ingester(factory, featurizer)
    rng = random.Random(5)
    live = [r["id"] for r in records[:50]]
    suppressed = 0
    for step in range(8):
        if step % 3 == 2:
            gone = rng.sample(live, 2)
            ingester.delete(gone)
            live = [a for a in live if a not in gone]
        else:
            base = rng.sample(records[:50], 3)
            older = [{**repost(r, step), "published_at": "2023-06-01T00:00:00+00:00"} for r in base]
            new = [records[50 + step * 2], records[51 + step * 2], *older]
            ingester.ingest_records(new)
            live += [r["id"] for r in new]
        for aid in rng.sample(live, 6):
            options: dict[str, Any] = rng.choice(
                [{}, {"k": 3, "offset": 2}, {"exclude": rng.sample(live, 3)}, {"k": 20}]
            )
            mine, theirs = ask(held, factory, aid, **options), ask(sql, factory, aid, **options)
            assert mine == theirs
            suppressed += len(mine["suppressed"])
    assert suppressed > 5  # the lists suppressed copies: clusters were compared, not only items


def test_a_list_reads_no_sql_for_its_items_clusters_or_query(
    settings: Settings,
    factory: sessionmaker[Session],
    featurizer: Featurizer,
    records: list[dict[str, Any]],
    engine: Engine,
) -> None:
    """Between two position checks a list reads nothing from SQL but, rarely, the texts of a
    pair the criterion decides on its texts (``recommend.lists.criterion``)."""
    load(factory, featurizer, [*records[:40], repost(records[0], 1), repost(records[3], 1)])
    quiet = settings.model_copy(
        update={"index": settings.index.model_copy(update={"sync_interval_s": 3600.0})}
    )
    held = RelatedArticles(quiet, LiveIndex(quiet, factory, background=False))
    ask(held, factory, records[0]["id"])  # the first answer opens the indexes
    statements: list[str] = []

    def seen(conn: Any, cursor: Any, statement: str, *args: Any) -> None:
        statements.append(" ".join(statement.split()))

    event.listen(engine, "before_cursor_execute", seen)
    try:
        bodies = [ask(held, factory, r["id"], k=8) for r in records[:40]]
    finally:
        event.remove(engine, "before_cursor_execute", seen)
    assert sum(len(b["items"]) for b in bodies) > 200 and any(b["suppressed"] for b in bodies)
    texts = "SELECT articles.id, articles.title, articles.content, articles.seq FROM articles"
    assert [s for s in statements if not s.startswith(texts)] == []
    assert len(statements) <= 4  # a few pairs of 40 lists, if any


def test_a_card_derived_again_is_shown_as_sql_has_it(
    settings: Settings,
    factory: sessionmaker[Session],
    featurizer: Featurizer,
    records: list[dict[str, Any]],
) -> None:
    """A server started with another ``ingest.summary_chars`` holds cards of the old rule; the
    reindex derives them again without a change sequence number (``pipeline.reindex.cards``):
    the list shows each card as SQL holds it, before and after."""
    load(factory, featurizer, records[:30])
    aid = records[0]["id"]
    before = ask(services(settings, factory)[0], factory, aid, k=3)["items"]
    shorter = settings.model_copy(
        update={"ingest": settings.ingest.model_copy(update={"summary_chars": 40})}
    )
    held = services(shorter, factory)[0]
    assert ask(held, factory, aid, k=3)["items"] == before  # the old cards, as SQL has them
    assert fill_cards(factory, shorter) >= 30
    after = ask(held, factory, aid, k=3)["items"]
    assert [i["id"] for i in after] == [i["id"] for i in before]
    with factory() as session:
        stored = {i["id"]: get_article(session=session, external_id=i["id"]) for i in after}
    for item in after:
        card = stored[item["id"]]
        assert card is not None and item["summary"] == card.card_summary
        assert len(item["summary"]) <= 41 and item["summary"] != before[0]["summary"]
