"""Feedback events that name their item: the engagement counters (``engagement_counts``),
position-weighed, bounded per list and day, expired past their window (SQLite and
PostgreSQL)."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, date, datetime, timedelta

import pytest
from sqlalchemy import func, select
from sqlalchemy.orm import Session, sessionmaker

from recengine.config import Settings
from recengine.errors import NotFound
from recengine.pipeline.featurize import Featurizer
from recengine.pipeline.feedback import CLICK, IMPRESSION, Event, FeedbackCounter, examination
from recengine.pipeline.ingest.ingester import Ingester
from recengine.storage.models import EngagementCount
from recengine.storage.rows.engagement import pair_totals
from recengine.storage.rows.feedback import article_ids, totals_by
from tests.factories import record

TODAY = datetime.now(UTC).date()


@pytest.fixture
def ids(factory: sessionmaker[Session], featurizer: Featurizer) -> dict[str, int]:
    Ingester(factory, featurizer).ingest_records([record(i) for i in range(6)])
    with factory() as session:
        return article_ids(session=session, external_ids=[f"a{i}" for i in range(6)])


def counter_of(
    settings: Settings, factory: sessionmaker[Session], **feedback: int
) -> FeedbackCounter:
    tested = settings.model_copy(update={"feedback": settings.feedback.model_copy(update=feedback)})
    return FeedbackCounter(tested, factory, ["default"])


@pytest.fixture
def counter(
    settings: Settings, factory: sessionmaker[Session], ids: dict[str, int]
) -> Iterator[FeedbackCounter]:
    found = counter_of(settings, factory)
    yield found
    found.close()


def pairs(
    factory: sessionmaker[Session], first: date = TODAY
) -> dict[tuple[int, int], tuple[float, float]]:
    with factory() as session:
        t = pair_totals(session=session, first=first, last=TODAY)
    return {
        (int(s), int(i)): (float(c), float(x))
        for s, i, c, x in zip(t.source, t.item, t.clicks, t.examined, strict=True)
    }


def test_events_naming_items_are_counted_per_list_and_item_weighed_by_their_slot(
    counter: FeedbackCounter, factory: sessionmaker[Session], ids: dict[str, int]
) -> None:
    shown = [Event(IMPRESSION, "a0", "default", s, f"a{s + 1}") for s in range(3)]
    clicked = [Event(CLICK, "a0", "default", 2, "a3"), Event(CLICK, "a0", "default", 2, "a3")]
    assert counter.submit(shown + clicked, "c").result(timeout=60) == 5
    assert counter.submit(shown, "c").result(timeout=60) == 3  # adds up
    decay = counter.decay
    found = pairs(factory)
    assert found == {
        (ids["a0"], ids["a1"]): (0.0, pytest.approx(2 * examination(0, decay))),
        (ids["a0"], ids["a2"]): (0.0, pytest.approx(2 * examination(1, decay))),
        (ids["a0"], ids["a3"]): (2.0, pytest.approx(2 * examination(2, decay))),
    }
    assert examination(0, decay) == 1.0 and examination(2, 1.0) == pytest.approx(1 / 3)
    # the slot counters count them as before
    with factory() as session:
        slots = totals_by(session=session, first=TODAY, last=TODAY)
    assert slots == [("default", 0, 2, 0), ("default", 1, 2, 0), ("default", 2, 2, 2)]


def test_an_unknown_item_refuses_its_request_and_counts_nothing_of_it(
    counter: FeedbackCounter, factory: sessionmaker[Session]
) -> None:
    bad = counter.submit(
        [Event(IMPRESSION, "a0", "default", 0, "a1"), Event(CLICK, "a0", "default", 1, "nope")],
        "c",
    )
    with pytest.raises(NotFound, match="nope"):
        bad.result(timeout=60)
    assert pairs(factory) == {}
    with factory() as session:
        assert totals_by(session=session, first=TODAY, last=TODAY) == []


def test_a_list_counts_at_most_its_cap_of_items_a_day_and_never_itself(
    settings: Settings, factory: sessionmaker[Session], ids: dict[str, int]
) -> None:
    """A beacon naming ever new items cannot grow the table past the cap per list and day
    (the slot counters still count every event)."""
    counter = counter_of(settings, factory, max_items_per_list=2)
    try:
        events = [Event(IMPRESSION, "a0", "default", 0, f"a{i}") for i in range(6)]
        assert counter.commit(events, TODAY) == 6
        assert counter.commit([Event(CLICK, "a0", "default", 0, "a5")], TODAY) == 1
        assert counter.commit([Event(CLICK, "a0", "default", 0, "a2")], TODAY) == 1
        # another day starts again
        assert counter.commit([Event(IMPRESSION, "a0", "default", 0, "a4")], TODAY - timedelta(1))
    finally:
        counter.close()
    found = pairs(factory, TODAY - timedelta(days=1))
    with factory() as session:
        today = session.scalar(
            select(func.count()).select_from(EngagementCount).where(EngagementCount.day == TODAY)
        )
    assert today == 2
    assert found[(ids["a0"], ids["a2"])] == (1.0, 1.0)  # a0 itself was skipped, a1 and a2 kept
    assert (ids["a0"], ids["a5"]) not in found and (ids["a0"], ids["a0"]) not in found
    assert found[(ids["a0"], ids["a4"])] == (0.0, 1.0)


def test_counters_past_the_window_are_deleted_at_a_days_first_commit(
    counter: FeedbackCounter, factory: sessionmaker[Session], ids: dict[str, int]
) -> None:
    days = counter.keep_days
    old, kept = TODAY - timedelta(days=days + 1), TODAY - timedelta(days=days)
    counter.commit([Event(IMPRESSION, "a0", "default", 0, "a1")], old)
    counter.commit([Event(IMPRESSION, "a0", "default", 0, "a1")], kept)
    counter.commit([Event(IMPRESSION, "a0", "default", 0, "a2")], TODAY)
    with factory() as session:
        left = set(session.scalars(select(EngagementCount.day)))
    assert left == {kept, TODAY}
