"""Freshness (``related.half_life_days``): the decay's arithmetic, by hand, on a tiny corpus, in
related lists (against the article's date) and feeds (against now)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import numpy as np
import pytest
from sqlalchemy.orm import Session, sessionmaker

from recengine.config import Settings
from recengine.index.related.segment import NO_DATE
from recengine.pipeline.featurize import Featurizer
from recengine.recommend.feed import ReaderFeeds
from recengine.recommend.live import LiveIndex
from recengine.recommend.signals.freshness import factors
from tests.recommend.signals.corpus import article, ask, service, with_related
from tests.templates import load

DAY = 86_400


def test_the_factor_halves_every_half_life_and_undated_articles_get_the_median() -> None:
    published = np.array([0, 7 * DAY, -14 * DAY, NO_DATE, 3 * DAY], np.int64)
    got = factors(published, 0, 7.0)
    # ages 0, 7, 14 (either side of the article), 3 days; the undated one: the median of
    # the dated factors (1, 0.5, 0.25, 2 ** (-3/7))
    dated = [1.0, 0.5, 0.25, 2 ** (-3 / 7)]
    assert got.tolist() == pytest.approx([1.0, 0.5, 0.25, float(np.median(dated)), dated[3]])
    # feeds: an article dated after now is new (factor 1), never more
    assert factors(np.array([7 * DAY, -7 * DAY]), 0, 7.0, before_only=True).tolist() == [1.0, 0.5]
    # no date to measure from: nothing decays; nothing dated: undated ones keep 1
    assert factors(published, NO_DATE, 7.0).tolist() == [1.0] * 5
    assert factors(np.array([NO_DATE, NO_DATE]), 0, 7.0).tolist() == [1.0, 1.0]
    with pytest.raises(ValueError, match="half_life_days"):
        factors(published, 0, 0.0)


AT = "2024-05-10T08:00:00+00:00"
CORPUS = [
    article("q", ("index", "plan", "tx", "ops"), AT),
    article("old", ("index", "plan", "a", "b"), "2024-04-12T08:00:00+00:00"),  # 28 days
    article("new", ("tx", "c", "d"), "2024-05-09T08:00:00+00:00"),  # 1 day
    article("week", ("plan", "split", "e"), "2024-05-17T08:00:00+00:00"),  # 7 days after
    article("nodate", ("index", "cache", "f"), None),
    article("undated-q", ("tx", "e", "g", "h"), None),
    article("front", ("front", "java", "h"), AT, category="前端"),
]
AGES = {"old": 28, "new": 1, "week": 7, "front": 0}  # days from q
UNDATED = ("nodate", "undated-q")


@pytest.fixture
def loaded(settings: Settings, factory: sessionmaker[Session], featurizer: Featurizer) -> Settings:
    load(factory, featurizer, CORPUS)
    return with_related(settings, explain_terms=100)


def test_a_list_multiplies_each_score_by_its_factor_and_reorders(
    loaded: Settings, factory: sessionmaker[Session]
) -> None:
    plain = ask(service(loaded, factory), factory, "q", min_score=0)
    base = {i["id"]: i["score"] for i in plain["items"]}
    assert plain["items"][0]["id"] == "old"  # the best match, four weeks older
    assert "freshness" not in plain["items"][0]["reasons"]  # off by default

    fresh = ask(service(with_related(loaded, half_life_days=7), factory), factory, "q", min_score=0)
    factor = {a: 2 ** (-days / 7) for a, days in AGES.items()}
    for a in UNDATED:  # neither boosted nor punished: the median of the dated candidates'
        factor[a] = float(np.median([factor[d] for d in AGES]))
    assert set(base) == set(factor)
    expected = sorted(base, key=lambda a: -base[a] * factor[a])
    assert [i["id"] for i in fresh["items"]] == expected
    assert expected[0] == "new"  # a day old: first now
    for entry in fresh["items"]:
        a, reasons = entry["id"], entry["reasons"]
        assert entry["score"] == pytest.approx(base[a] * factor[a], abs=2e-6)
        assert reasons["freshness"] == round(factor[a], 4)
        # the explanation's shares are scaled too: they still add up to the score
        shares = sum(t["weight"] for t in reasons["shared_terms"]) + reasons["dense"]
        assert shares == pytest.approx(entry["score"], abs=1e-4)


def test_the_floor_applies_to_the_decayed_score_and_pages_stay_consistent(
    loaded: Settings, factory: sessionmaker[Session]
) -> None:
    plain = ask(service(loaded, factory), factory, "q", k=10)  # the shipped floor, 0.04
    assert "old" in [i["id"] for i in plain["items"]]
    related = service(with_related(loaded, half_life_days=7), factory)
    body = ask(related, factory, "q", k=10)
    unfloored = ask(related, factory, "q", k=10, min_score=0)
    low = [i["id"] for i in unfloored["items"] if i["score"] < 0.04]
    assert "old" in low  # 0.49 x 2 ** -4 = 0.031: too old for so short a half-life
    assert [i["id"] for i in body["items"]] == [
        i["id"] for i in unfloored["items"] if i["id"] not in low
    ]
    assert body["floor"] == {"min_score": 0.04, "dropped": len(low)}
    whole = [i["id"] for i in unfloored["items"]]
    pages = [ask(related, factory, "q", k=2, offset=n, min_score=0)["items"] for n in (0, 2, 4)]
    assert [i["id"] for page in pages for i in page] == whole and len(whole) > 4


def test_an_undated_article_has_no_age_to_measure_so_nothing_decays(
    loaded: Settings, factory: sessionmaker[Session]
) -> None:
    plain = ask(service(loaded, factory), factory, "undated-q", min_score=0)
    decayed = service(with_related(loaded, half_life_days=7), factory)
    fresh = ask(decayed, factory, "undated-q", min_score=0)
    assert fresh["items"] == plain["items"] and plain["items"]
    assert not any("freshness" in i["reasons"] for i in fresh["items"])


def _feed(settings: Settings, factory: sessionmaker[Session]) -> list[dict[str, Any]]:
    feeds = ReaderFeeds(settings, LiveIndex(settings, factory, background=False))
    with factory() as session:
        items: list[dict[str, Any]] = feeds.feed("reader", session=session, k=10)["items"]
    return [i for i in items if not i["reasons"].get("fresh")]  # the interest's items


def test_a_feed_decays_its_candidates_by_their_age_against_now(
    settings: Settings, factory: sessionmaker[Session], featurizer: Featurizer
) -> None:
    now = datetime.now(UTC)
    ages = {**AGES, "q": 0, "front": 0}  # days before now

    def when(days: int | None) -> str | None:
        return None if days is None else (now - timedelta(days=days)).isoformat()

    records = [{**r, "published_at": when(ages.get(r["id"]))} for r in CORPUS]
    load(factory, featurizer, records)
    feeds = ReaderFeeds(settings, LiveIndex(settings, factory, background=False))
    with factory() as session, session.begin():
        feeds.record_reads("reader", ["q"], session=session)
    plain = {i["id"]: i["score"] for i in _feed(settings, factory)}
    assert {"old", "new", "week"} <= set(plain)
    fresh = _feed(with_related(settings, half_life_days=7), factory)
    factor = {a: 2 ** (-d / 7) for a, d in ages.items()}
    for a in UNDATED:
        factor[a] = float(np.median([factor[d] for d in plain if d in ages]))
    decayed = {a: plain[a] * factor[a] for a in plain}
    # the floor (feed.min_score) applies to the decayed score, as in lists: "old" leaves
    assert decayed["old"] < 0.04 <= plain["old"]
    kept = [a for a in sorted(plain, key=lambda a: -decayed[a]) if decayed[a] >= 0.04]
    assert [i["id"] for i in fresh] == kept
    for entry in fresh:  # a few seconds pass between the test's now and the feed's
        assert entry["score"] == pytest.approx(plain[entry["id"]] * factor[entry["id"]], rel=1e-4)
        assert entry["reasons"]["freshness"] == pytest.approx(factor[entry["id"]], abs=1e-4)
