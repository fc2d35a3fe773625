"""Reader feeds: read articles and their duplicates out, shares respected, fresh when empty."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import func, select
from sqlalchemy.orm import Session, sessionmaker

from recengine.config import Settings
from recengine.errors import InvalidRequest, NotFound
from recengine.pipeline.featurize import Featurizer
from recengine.pipeline.ingest.ingester import Ingester
from recengine.recommend.feed import ReaderFeeds
from recengine.recommend.live import LiveIndex
from recengine.storage.models import ReaderEvent
from tests.factories import CARD, javaguide_records
from tests.recommend.test_related import delete_article, repost
from tests.recommend.test_related_properties import facts
from tests.templates import load


@pytest.fixture
def records(data_dir: Path) -> list[dict[str, Any]]:
    out = javaguide_records(data_dir, 120)
    for i, r in enumerate(out):
        r["published_at"] = (datetime(2024, 1, 1, tzinfo=UTC) + timedelta(hours=i)).isoformat()
    return out


@pytest.fixture
def feeds(
    settings: Settings,
    factory: sessionmaker[Session],
    featurizer: Featurizer,
    records: list[dict[str, Any]],
) -> ReaderFeeds:
    extra = [repost(records[i], 1) for i in (0, 1, 2)]
    load(factory, featurizer, records + extra)
    return ReaderFeeds(settings, LiveIndex(settings, factory, background=False))


def read(
    feeds: ReaderFeeds,
    factory: sessionmaker[Session],
    user: str,
    ids: list[str],
    at: datetime | None = None,
) -> None:
    with factory() as session, session.begin():
        feeds.record_reads(user, ids, session=session, at=at)


def feed(feeds: ReaderFeeds, factory: sessionmaker[Session], user: str, **kw: Any) -> Any:
    with factory() as session:
        return feeds.feed(user, session=session, **kw)


def shown(body: dict[str, Any]) -> list[str]:
    return [e["id"] for e in body["items"]]


def test_feed_leaves_out_read_articles_and_their_duplicates(
    settings: Settings,
    feeds: ReaderFeeds,
    factory: sessionmaker[Session],
    records: list[dict[str, Any]],
) -> None:
    history = [r["id"] for r in records[:3]]
    read(feeds, factory, "ann", history)
    body = feed(feeds, factory, "ann", k=20)
    assert set(body) == {"user", "items", "suppressed"} and len(body["items"]) == 20
    known = facts(factory, settings)
    assert not set(history) & set(shown(body))
    for entry in body["items"]:
        assert set(entry) == {"id", "title", "url", "score", "reasons", *CARD}
        assert not any(known.near_duplicates(entry["id"], h) for h in history)
    # the reposts that are near-duplicates by the criterion are reported, with their reason
    dups = {f"repost-1-{h}" for h in history if known.near_duplicates(f"repost-1-{h}", h)}
    assert dups
    for s in body["suppressed"]:
        assert s["duplicate_of"] in history
        assert s["distance"] == known.distance(s["id"], s["duplicate_of"])
    assert dups <= {s["id"] for s in body["suppressed"]}


def test_a_topic_read_once_does_not_dominate(
    feeds: ReaderFeeds, factory: sessionmaker[Session], records: list[dict[str, Any]]
) -> None:
    by_category: dict[str, list[str]] = {}
    for r in records:
        by_category.setdefault(r["category"], []).append(r["id"])
    big, small = sorted(by_category, key=lambda c: -len(by_category[c]))[:2]
    now = datetime.now(UTC)
    read(feeds, factory, "bo", by_category[big][:9], at=now - timedelta(days=1))
    read(feeds, factory, "bo", by_category[small][:1], at=now - timedelta(days=1))
    body = feed(feeds, factory, "bo", k=10)
    shares = [e["reasons"].get("interest_share", 0) for e in body["items"]]
    assert all(s <= 1 for s in shares)
    category = {r["id"]: r["category"] for r in records}
    from_small = [i for i in shown(body) if category.get(i) == small]
    assert len(from_small) <= 2 and len(body["items"]) == 10


def test_feed_items_are_diverse_and_explained(
    settings: Settings,
    feeds: ReaderFeeds,
    factory: sessionmaker[Session],
    records: list[dict[str, Any]],
) -> None:
    read(feeds, factory, "cy", [r["id"] for r in records[20:26]])
    body = feed(feeds, factory, "cy", k=15)
    assert len(set(shown(body))) == len(shown(body)) == 15
    for entry in body["items"]:
        reasons = entry["reasons"]
        if not reasons.get("fresh"):
            assert reasons["because_you_read"] and reasons["shared_terms"]
            assert set(reasons["because_you_read"]) <= {r["id"] for r in records[20:26]}


def test_an_empty_history_gives_fresh_deduplicated_articles(
    feeds: ReaderFeeds, factory: sessionmaker[Session], records: list[dict[str, Any]]
) -> None:
    body = feed(feeds, factory, "nobody", k=10)
    assert len(body["items"]) == 10 and all(e["reasons"] == {"fresh": True} for e in body["items"])
    # the newest articles are records[-1], [-2], ...; reposts share their original's date
    newest = [r["id"] for r in reversed(records)][:10]
    assert shown(body) == newest


def test_fresh_articles_skip_duplicates_of_each_other(
    feeds: ReaderFeeds,
    factory: sessionmaker[Session],
    featurizer: Featurizer,
    records: list[dict[str, Any]],
) -> None:
    late = {**records[50], "published_at": "2030-01-01T00:00:00+00:00"}
    Ingester(factory, featurizer).ingest_records(
        [{**repost(late, 5), "published_at": "2030-01-02T00:00:00+00:00"}, late]
    )
    body = feed(feeds, factory, "nobody", k=5)
    assert shown(body)[0] == f"repost-5-{late['id']}" and late["id"] not in shown(body)
    cut = body["suppressed"][0]
    assert cut == {
        "id": late["id"],
        "duplicate_of": f"repost-5-{late['id']}",
        "distance": cut["distance"],
        "rule": "resemblance",  # the repost joined `late`, its canonical, by resemblance
        "score": cut["score"],
        "via": None,
    }
    assert 0.45 <= cut["score"] <= 1


def test_deleted_articles_never_appear(
    feeds: ReaderFeeds, factory: sessionmaker[Session], records: list[dict[str, Any]]
) -> None:
    read(feeds, factory, "dee", [records[30]["id"]])
    before = shown(feed(feeds, factory, "dee", k=10))
    delete_article(factory, before[0])
    delete_article(factory, records[30]["id"])  # the history's only article goes too
    after = feed(feeds, factory, "dee", k=10)
    assert before[0] not in shown(after) and records[30]["id"] not in shown(after)
    assert len(after["items"]) == 10  # fresh articles fill in


def test_bad_reads_change_nothing(
    feeds: ReaderFeeds, factory: sessionmaker[Session], records: list[dict[str, Any]]
) -> None:
    with pytest.raises(NotFound):
        read(feeds, factory, "eve", [records[0]["id"], "no-such-article"])
    with pytest.raises(InvalidRequest):
        read(feeds, factory, "", [records[0]["id"]])
    with factory() as session:
        assert session.scalar(select(func.count()).select_from(ReaderEvent)) == 0
    with pytest.raises(InvalidRequest):
        feed(feeds, factory, "eve", k=1000)
