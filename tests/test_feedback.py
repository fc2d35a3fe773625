"""Reader feedback counters: group commit, bounded rows, rate limits, errors (SQLite and
PostgreSQL)."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from datetime import UTC, datetime

import pytest
from sqlalchemy import func, select
from sqlalchemy.orm import Session, sessionmaker

from recengine.config import Settings
from recengine.errors import InvalidRequest, NotFound, Overloaded, RateLimited
from recengine.pipeline.featurize import Featurizer
from recengine.pipeline.feedback import CLICK, IMPRESSION, Event, FeedbackCounter, TokenBuckets
from recengine.pipeline.ingest.ingester import Ingester
from recengine.storage.db import make_engine, make_session_factory
from recengine.storage.models import FeedbackCount
from recengine.storage.rows.feedback import counts_between, totals_by
from tests.factories import record


@pytest.fixture
def articles(factory: sessionmaker[Session], featurizer: Featurizer) -> list[str]:
    Ingester(factory, featurizer).ingest_records([record(i) for i in range(3)])
    return ["a0", "a1", "a2"]


@pytest.fixture
def counter(
    settings: Settings, factory: sessionmaker[Session], articles: list[str]
) -> Iterator[FeedbackCounter]:
    found = FeedbackCounter(settings, factory, ["control", "strict"])
    yield found
    found.close()


def totals(factory: sessionmaker[Session]) -> dict[tuple[str, int], tuple[int, int]]:
    today = datetime.now(UTC).date()
    with factory() as session:
        return {
            (v, s): (i, c) for v, s, i, c in totals_by(session=session, first=today, last=today)
        }


def test_events_from_many_threads_are_added_up_and_acknowledged_once_committed(
    counter: FeedbackCounter, factory: sessionmaker[Session]
) -> None:
    results: list[int] = []

    def reader(n: int) -> None:
        events = [Event(IMPRESSION, "a0", "control", s) for s in range(5)]
        events.append(Event(CLICK, "a0", "control", n % 5))
        results.append(counter.submit(events, f"10.0.0.{n}").result(timeout=60))

    threads = [threading.Thread(target=reader, args=(n,)) for n in range(40)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert results == [6] * 40
    found = totals(factory)
    assert {k: v for k, v in found.items()} == {("control", s): (40, 8) for s in range(5)}
    # one row per (day, article, variant, slot), whatever the number of events
    with factory() as session:
        assert session.scalar(select(func.count()).select_from(FeedbackCount)) == 5
        rows = counts_between(
            session=session, first=datetime.now(UTC).date(), last=datetime.now(UTC).date()
        )
    assert {r.article for r in rows} == {"a0"} and counter.committed == 240


def test_a_request_naming_an_unknown_article_is_refused_alone(
    counter: FeedbackCounter, factory: sessionmaker[Session]
) -> None:
    good = counter.submit([Event(CLICK, "a1", "strict", 2)], "c1")
    bad = counter.submit([Event(CLICK, "a1", "strict", 2), Event(CLICK, "nope", "strict", 0)], "c2")
    assert good.result(timeout=60) == 1
    with pytest.raises(NotFound):
        bad.result(timeout=60)
    assert totals(factory) == {("strict", 2): (0, 1)}


def test_bad_events_are_refused_before_anything_is_queued(counter: FeedbackCounter) -> None:
    for events in (
        [],
        [Event("view", "a0", "control", 0)],
        [Event(CLICK, "a0", "treatment", 0)],  # not a configured variant
        [Event(CLICK, "a0", "control", 100)],  # related.max_k = 100 slots
        [Event(CLICK, "a0", "control", -1)],
        [Event(CLICK, "a0", "control", 0)] * 101,  # feedback.max_events
    ):
        with pytest.raises(InvalidRequest):
            counter.submit(events, "c")
    assert counter.committed == 0


def test_a_client_past_its_bucket_is_rate_limited(
    settings: Settings, factory: sessionmaker[Session], articles: list[str]
) -> None:
    tight = settings.model_copy(
        update={"feedback": settings.feedback.model_copy(update={"client_burst": 3})}
    )
    now = [0.0]
    counter = FeedbackCounter(tight, factory, ["default"], clock=lambda: now[0])
    try:
        counter.check([Event(CLICK, "a0", "default", 0)])
        counter.submit([Event(CLICK, "a0", "default", 0)] * 3, "one")
        with pytest.raises(RateLimited):
            counter.submit([Event(CLICK, "a0", "default", 0)], "one")
        counter.submit([Event(CLICK, "a0", "default", 0)], "another")  # buckets are per client
        now[0] += 1 / tight.feedback.client_rate  # one token back
        counter.submit([Event(CLICK, "a0", "default", 0)], "one")
    finally:
        counter.close()


def test_too_many_pending_events_are_refused(
    settings: Settings, factory: sessionmaker[Session], articles: list[str]
) -> None:
    small = settings.model_copy(
        update={
            "feedback": settings.feedback.model_copy(
                update={"max_pending": 4, "flush_interval_s": 30.0}
            )
        }
    )
    counter = FeedbackCounter(small, factory, ["default"])
    pending = counter.submit([Event(CLICK, "a0", "default", 0)] * 4, "one")
    with pytest.raises(Overloaded):
        counter.submit([Event(CLICK, "a0", "default", 0)], "two")
    assert not pending.done()
    counter.close()  # commits what is queued at once
    assert pending.result(timeout=0) == 4


def test_token_buckets_refill_and_forget_old_clients() -> None:
    buckets = TokenBuckets(rate=2.0, burst=4, max_clients=10)
    assert buckets.take("a", 4, 0.0) and not buckets.take("a", 1, 0.0)
    assert buckets.take("a", 1, 0.5) and not buckets.take("a", 1, 0.5)
    for n in range(20):
        buckets.take(f"c{n}", 1, 1.0)
    assert len(buckets._buckets) <= 10


def test_counters_of_several_processes_commit_side_by_side(
    settings: Settings, factory: sessionmaker[Session], articles: list[str]
) -> None:
    """Two workers' counters on their own connections (on SQLite: two writers of one file)
    commit at the same time without "database is locked": every request is acknowledged and
    counted."""
    engines = [make_engine(settings.resolved_database_url) for _ in range(2)]
    counters = [FeedbackCounter(settings, make_session_factory(e), ["control"]) for e in engines]
    futures = []
    for n in range(200):
        event = Event(IMPRESSION, articles[n % 3], "control", n % 5)
        futures.append(counters[n % 2].submit([event, event], f"client-{n}"))
    done = [f.result(timeout=60) for f in futures]
    for c in counters:
        c.close()
    for e in engines:
        e.dispose()
    assert done == [2] * 200
    assert sum(i for i, _ in totals(factory).values()) == 400
