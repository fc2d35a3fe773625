"""``POST /api/v1/feedback`` over HTTP: beacons as browsers send them, errors, limits; through
the Flask app and through recengine's worker (where the event loop answers it)."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

import pytest
from flask import Flask
from flask.testing import FlaskClient
from sqlalchemy import Engine
from sqlalchemy.orm import Session, sessionmaker

from recengine.config import Settings
from recengine.storage.db import make_session_factory
from recengine.storage.rows.feedback import totals_by
from recengine.web.server.connections import (
    ACCEPT_DELAY_MAX,
    ACCEPT_DELAY_PER_CONNECTION,
    accept_delay,
)
from recengine.web.server.worker import Worker
from tests.factories import record
from tests.web.api.test_articles import assert_error
from tests.web.conftest import AUTH
from tests.web.server.test_serve import server_env
from tests.web.serving import call, served

FEEDBACK = "/api/v1/feedback"


def beacon(client: FlaskClient, events: Any, content_type: str = "text/plain") -> Any:
    """As ``navigator.sendBeacon(url, JSON.stringify(events))`` sends it."""
    return client.post(FEEDBACK, data=json.dumps(events), content_type=content_type)


def counters(factory: sessionmaker[Session]) -> dict[tuple[str, int], tuple[int, int]]:
    today = datetime.now(UTC).date()
    with factory() as session:
        rows = totals_by(session=session, first=today, last=today)
    return {(v, s): (i, c) for v, s, i, c in rows}


@pytest.fixture
def stored(client: FlaskClient) -> list[str]:
    assert (
        client.post(
            "/api/v1/articles", json=[record(i) for i in range(3)], headers=AUTH
        ).status_code
        == 200
    )
    return ["a0", "a1", "a2"]


def test_beacons_are_counted_per_variant_and_slot(
    client: FlaskClient, stored: list[str], factory: sessionmaker[Session]
) -> None:
    seen = [
        {"type": "impression", "article": "a0", "variant": "default", "slot": s} for s in range(3)
    ]
    answer = beacon(client, seen)
    assert answer.status_code == 200 and answer.get_json() == {"counted": 3}
    one = {"type": "click", "article": "a0", "variant": "default", "slot": 1}
    assert beacon(client, one, "application/json").get_json() == {"counted": 1}
    assert counters(factory) == {
        ("default", 0): (1, 0),
        ("default", 1): (1, 1),
        ("default", 2): (1, 0),
    }
    # no cookie is set, and nothing else is kept than the counters
    assert "Set-Cookie" not in answer.headers


def test_bad_beacons_are_refused_and_count_nothing(
    client: FlaskClient, stored: list[str], factory: sessionmaker[Session]
) -> None:
    good = {"type": "click", "article": "a0", "variant": "default", "slot": 0}
    assert_error(
        client.post(FEEDBACK, data="{not json", content_type="text/plain"), 400, "invalid_json"
    )
    for bad in (
        {**good, "variant": "treatment"},  # not a configured variant
        {**good, "slot": 100},  # related.max_k
        {**good, "type": "hover"},
        {**good, "reader": "r1"},  # nothing personal is taken
        [good] * 101,  # feedback.max_events
        [],
    ):
        assert_error(beacon(client, bad), 422, "invalid_request")
    assert_error(beacon(client, [good, {**good, "article": "nope"}]), 404, "not_found")
    assert counters(factory) == {}


def test_a_client_over_its_rate_is_told_to_slow_down(
    make_app: Callable[..., Flask], stored: list[str]
) -> None:
    client = make_app(feedback={"client_burst": 2, "client_rate": 0.001}).test_client()
    event = {"type": "click", "article": "a0", "variant": "default", "slot": 0}
    assert beacon(client, [event, event]).status_code == 200
    assert_error(beacon(client, event), 429, "rate_limited")


def test_variants_of_the_experiment_are_the_ones_accepted(
    make_app: Callable[..., Flask], stored: list[str], factory: sessionmaker[Session]
) -> None:
    experiment = {"name": "t", "variants": {"control": {}, "strict": {"min_score": 0.1}}}
    client = make_app(experiment=experiment).test_client()
    event = {"type": "impression", "article": "a1", "variant": "strict", "slot": 0}
    assert beacon(client, event).status_code == 200
    assert_error(beacon(client, {**event, "variant": "default"}), 422, "invalid_request")
    enum = client.get("/openapi.json").get_json()["components"]["schemas"]["FeedbackEvent"]
    assert enum["properties"]["variant"]["enum"] == ["control", "strict"]


def test_feedback_can_be_turned_off(make_app: Callable[..., Flask], stored: list[str]) -> None:
    client = make_app(feedback={"enabled": False}).test_client()
    event = {"type": "click", "article": "a0", "variant": "default", "slot": 0}
    assert_error(beacon(client, event), 404, "not_found")


def test_recengine_worker_answers_beacons_on_its_event_loop(
    settings: Settings, engine: Engine, client: FlaskClient, stored: list[str]
) -> None:
    factory = make_session_factory(engine)
    with served(
        ["serve", "--port", "0", "--workers", "2", "--threads", "1"], server_env(settings)
    ) as server:
        headers = {"Content-Type": "text/plain;charset=UTF-8"}
        events = [
            {"type": "impression", "article": "a2", "variant": "default", "slot": s}
            for s in range(4)
        ]
        for _ in range(10):
            reply = call(server.url, "POST", FEEDBACK, events, headers)
            assert reply.status == 200 and reply.json() == {"counted": 4}
        bad = call(server.url, "POST", FEEDBACK, [{**events[0], "slot": -1}], headers)
        assert bad.status == 422 and bad.json()["error"]["code"] == "invalid_request"
        junk = call(server.url, "POST", FEEDBACK, None, headers)
        assert junk.status == 400 and junk.json()["error"]["code"] == "invalid_json"
        missing = call(server.url, "POST", FEEDBACK, [{**events[0], "article": "zz"}], headers)
        assert missing.status == 404
    assert counters(factory) == {("default", s): (10, 0) for s in range(4)}


def test_connections_parked_on_a_group_commit_do_not_delay_accepting() -> None:
    """At 100 beacons/s each worker holds ~20 connections waiting for their commit; counted,
    they delayed every accept by the 5 ms cap (related p50 2.5 -> 5.2 ms beside them)."""
    assert accept_delay(20, parked=20) == 0.0
    assert accept_delay(23, parked=20) == pytest.approx(3 * ACCEPT_DELAY_PER_CONNECTION)
    assert accept_delay(40, parked=0) == ACCEPT_DELAY_MAX
    seen: list[int] = []
    worker = Worker.__new__(Worker)  # no gunicorn arbiter: only the parking is exercised
    worker.parked = 0

    async def answerer(*_: Any) -> None:
        seen.append(worker.parked)
        if len(seen) == 2:
            raise ConnectionResetError

    worker.answerers = [answerer]
    assert asyncio.run(worker._on_loop(None, b"", None, True)) is None
    with pytest.raises(ConnectionResetError):
        asyncio.run(worker._on_loop(None, b"", None, True))
    assert seen == [1, 1] and worker.parked == 0
