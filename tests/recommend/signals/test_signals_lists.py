"""Readers' signals in real related lists (javaguide articles, SQLite and PostgreSQL): the
engagement boost, co-reads as a candidate source and a score part, exploration, each a
weight an A/B variant can set; duplicates suppressed and pins kept as always."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from sqlalchemy.orm import Session, sessionmaker

from recengine.config import Settings
from recengine.pipeline.featurize import Featurizer
from recengine.pipeline.feedback import CLICK, IMPRESSION, Event, FeedbackCounter
from recengine.pipeline.ingest.ingester import Ingester
from recengine.recommend.feed import ReaderFeeds
from recengine.recommend.live import LiveIndex
from recengine.recommend.ranking import split_key
from recengine.recommend.related import RelatedArticles
from recengine.recommend.signals.scoring import Signals, Weights
from recengine.storage.rows.index_source import internal_ids
from tests.factories import javaguide_records
from tests.overrides_helpers import add
from tests.templates import load

N = 60
FOOTER = "\n\n本文转载自 JavaGuide，转载请注明出处。欢迎关注公众号获取更多面试资料。"  # a repost's
TODAY = datetime.now(UTC).date()


@pytest.fixture
def records(factory: sessionmaker[Session], featurizer: Featurizer, data_dir: Path) -> list[Any]:
    found = javaguide_records(data_dir, N)
    load(factory, featurizer, found)
    return found


def service(
    settings: Settings, factory: sessionmaker[Session], **related: float
) -> RelatedArticles:
    weights = {"engagement_weight": 0.0, "coread_weight": 0.0, "explore_share": 0.0, **related}
    tested = settings.model_copy(
        update={
            "related": settings.related.model_copy(update=weights),
            "signals": settings.signals.model_copy(update={"refresh_s": 0.0}),
        }
    )
    return RelatedArticles(tested, LiveIndex(tested, factory, background=False))


def ask(svc: RelatedArticles, factory: sessionmaker[Session], article: str, **kw: Any) -> Any:
    with factory() as session:
        return svc.related(article, session=session, **kw)


def click(factory: sessionmaker[Session], settings: Settings, events: list[Event]) -> None:
    counter = FeedbackCounter(settings, factory, ["default"])
    for start in range(0, len(events), 100):
        counter.commit(events[start : start + 100], TODAY)


def test_clicks_lift_an_item_within_its_bound_and_the_default_list_is_unchanged(
    settings: Settings, factory: sessionmaker[Session], records: list[Any]
) -> None:
    query = records[0]["id"]
    plain = ask(service(settings, factory), factory, query, k=10)
    assert all("engagement" not in i["reasons"] for i in plain["items"])
    deeper = ask(service(settings, factory), factory, query, k=40, min_score=0)["items"]
    content = {i["id"]: i["score"] for i in deeper}
    low, high = plain["items"][7]["id"], plain["items"][0]["id"]
    # the 8th item is clicked every 4th time it is seen, the first almost never
    shown = [Event(IMPRESSION, query, "default", s, i["id"]) for s, i in enumerate(plain["items"])]
    click(factory, settings, shown * 300 + [Event(CLICK, query, "default", 7, low)] * 40)
    boosted = ask(service(settings, factory, engagement_weight=0.5), factory, query, k=10)
    by_id = {i["id"]: i for i in boosted["items"]}
    order = [i["id"] for i in boosted["items"]]
    assert order.index(low) < 7 and order.index(high) > 0
    for found in boosted["items"]:
        base, share = content[found["id"]], found["reasons"].get("engagement", 0.0)
        assert found["score"] == pytest.approx(base + share, abs=2e-6)
        assert 0.5 * base - 1e-6 <= found["score"] <= 1.5 * base + 1e-6  # the bound
    assert by_id[low]["reasons"]["engagement"] > 0 > by_id[high]["reasons"]["engagement"]
    # the same data, the weight at 0: the content list exactly
    assert ask(service(settings, factory), factory, query, k=10) == plain


def read(factory: sessionmaker[Session], settings: Settings, pairs: list[list[str]]) -> None:
    feeds = ReaderFeeds(settings, LiveIndex(settings, factory, background=False))
    with factory.begin() as session:
        for n, articles in enumerate(pairs):
            feeds.record_reads(f"reader-{n}", articles, session=session)


def test_coread_articles_join_the_list_with_their_reason_though_their_text_would_not(
    settings: Settings, factory: sessionmaker[Session], records: list[Any]
) -> None:
    query = records[0]["id"]
    svc = service(settings, factory, coread_weight=0.3)
    ranked = ask(svc, factory, query, k=N, min_score=0)["items"]
    # the article the text ranks last: below the floor, or sharing no term at all
    content = {i["id"]: i["score"] for i in ranked}
    unlisted = [r["id"] for r in records[1:] if r["id"] not in content]
    far = unlisted[0] if unlisted else ranked[-1]["id"]
    assert content.get(far, 0.0) < 0.04
    read(factory, settings, [[query, far]] * 4 + [[query]] * 2)
    body = ask(svc, factory, query, k=10)
    item = next(i for i in body["items"] if i["id"] == far)
    # 4 reader-days of 6 read both: 4 / (sqrt(6 * 4) + 5) x 0.3, added to its content score
    share = 0.3 * 4 / (np.sqrt(6 * 4) + 5)
    assert item["reasons"]["coread"] == pytest.approx(share, abs=1e-6)
    # its text alone (scored exactly now that the co-reads made it a candidate) is under
    # the floor: the list shows it for its readers
    assert 0.0 <= item["score"] - share < 0.04
    # a filter still applies to it, and another list does not get it
    assert far not in {i["id"] for i in ask(svc, factory, query, k=10, exclude=[far])["items"]}
    other = ask(svc, factory, records[1]["id"], k=10)
    assert all("coread" not in i["reasons"] for i in other["items"] if i["id"] == far)
    # weight 0: the list as the content ranks it
    assert far not in {i["id"] for i in ask(service(settings, factory), factory, query)["items"]}


def test_a_coread_near_duplicate_of_the_article_is_suppressed(
    settings: Settings, factory: sessionmaker[Session], featurizer: Featurizer, records: list[Any]
) -> None:
    query = records[0]
    copy = {**query, "id": "repost-of-0", "content": query["content"] + FOOTER}
    Ingester(factory, featurizer).ingest_records([copy])
    read(factory, settings, [[query["id"], "repost-of-0"]] * 5)
    body = ask(service(settings, factory, coread_weight=1.0), factory, query["id"], k=10)
    assert "repost-of-0" not in {i["id"] for i in body["items"]}
    assert "repost-of-0" in {s["id"] for s in body["suppressed"]}


def test_coreads_kept_up_to_date_equal_a_rebuild_from_sql(
    settings: Settings, factory: sessionmaker[Session], records: list[Any]
) -> None:
    """Reads of past days and of today, the summaries refreshed as they arrive, give the
    same neighbours as summaries built afresh from the events (what a restart does)."""
    tested = settings.model_copy(
        update={"signals": settings.signals.model_copy(update={"refresh_s": 0.0})}
    )
    now = datetime.now(UTC)
    follows = Signals(tested, clock=lambda: now)
    feeds = ReaderFeeds(tested, LiveIndex(tested, factory, background=False))
    ids = [r["id"] for r in records]
    rng = np.random.default_rng(3)
    weights = Weights(coread=1.0)
    with factory() as session:
        internal = internal_ids(session=session, external_ids=ids)
    for day in (3, 2, 1, 0):  # days ago
        for reader in range(12):
            chosen = [ids[int(i)] for i in rng.choice(8, 3, replace=False)]
            with factory.begin() as session:
                feeds.record_reads(
                    f"r{reader}", chosen, session=session, at=now - timedelta(days=day)
                )
            with factory() as session:  # refreshed as reads arrive
                follows.of_list(session, internal[ids[0]], weights)
    fresh = Signals(tested, clock=lambda: now)
    for article in ids[:8]:
        with factory() as session:
            a = follows.of_list(session, internal[article], weights).neighbours
            b = fresh.of_list(session, internal[article], weights).neighbours
        assert a[0].tolist() == b[0].tolist() and len(a[0]) > 0
        np.testing.assert_allclose(a[1], b[1])


def test_exploration_is_deterministic_under_its_seed_and_leaves_pins_and_top_slots(
    settings: Settings, factory: sessionmaker[Session], records: list[Any]
) -> None:
    query = records[0]["id"]
    plain = [i["id"] for i in ask(service(settings, factory), factory, query, k=30)["items"]]
    svc = service(settings, factory, explore_share=0.3)
    lists = {}
    for n in range(12):
        key = split_key(f"reader-{n}", None)
        body = ask(svc, factory, query, k=10, split_by=key)
        again = ask(
            service(settings, factory, explore_share=0.3), factory, query, k=10, split_by=key
        )
        assert body == again  # another process, the same seed (key, period, article)
        ids = [i["id"] for i in body["items"]]
        assert ids[:7] == plain[:7]  # at most ceil(0.3 x 10) slots explore, the last ones
        explored = [i["id"] for i in body["items"] if i["reasons"].get("explore")]
        assert set(explored) == set(ids) - set(plain[:10]) and len(explored) <= 3
        lists[n] = ids
    assert len({tuple(v) for v in lists.values()}) > 3  # readers see different draws
    # a pin keeps its place (first) and is never explored
    add(factory, "pin", query, plain[9])
    for n in range(6):
        body = ask(svc, factory, query, k=10, split_by=split_key(f"reader-{n}", None))
        assert body["items"][0]["id"] == plain[9] and body["items"][0]["reasons"]["pinned"]
        assert "explore" not in body["items"][0]["reasons"]
    # pages of 10 are slices of one list: what the first page explored is not on the
    # second, and what it displaced opens the second
    key = split_key("reader-1", None)
    first = [i["id"] for i in ask(svc, factory, query, k=10, split_by=key)["items"]]
    second = ask(svc, factory, query, k=10, offset=10, split_by=key)["items"]
    assert not any(i["reasons"].get("explore") for i in second)
    both = first + [i["id"] for i in second]
    assert len(set(both)) == len(both) == 20 and set(plain[:16]) <= set(both)


def test_explored_items_are_never_duplicates(
    settings: Settings, factory: sessionmaker[Session], featurizer: Featurizer, records: list[Any]
) -> None:
    """Reposts of the articles ranked below the page are in the pool exploration draws from:
    a repost and its original are never both listed, and no list holds the article's copy."""
    query = records[0]["id"]
    plain = [i["id"] for i in ask(service(settings, factory), factory, query, k=30)["items"]]
    copies = [
        {**r, "id": f"copy-{r['id']}", "content": r["content"] + FOOTER}
        for r in records
        if r["id"] in plain[10:20]
    ]
    Ingester(factory, featurizer).ingest_records(copies)
    svc = service(settings, factory, explore_share=0.5)
    for n in range(30):
        body = ask(svc, factory, query, k=10, split_by=split_key(f"reader-{n}", None))
        ids = {i["id"] for i in body["items"]}
        assert not any(f"copy-{i}" in ids for i in ids)
