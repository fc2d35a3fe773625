"""Readers' signals over HTTP: beacons that name their item feed the engagement counters, and
lists ranked with signals are cached for one refresh of them at most (SQLite and PostgreSQL)."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from types import SimpleNamespace
from typing import Any

import pytest
from flask import Flask
from sqlalchemy.orm import Session, sessionmaker

from recengine.recommend.signals.scoring import Signals
from recengine.storage.rows.engagement import pair_totals
from tests.web.api.test_articles import assert_error
from tests.web.api.test_feedback import beacon

TODAY = datetime.now(UTC).date()


def engagement(factory: sessionmaker[Session]) -> tuple[float, float, int]:
    with factory() as session:
        t = pair_totals(session=session, first=TODAY, last=TODAY)
    return float(t.clicks.sum()), float(t.examined.sum()), len(t)


def test_beacons_naming_their_item_count_it_and_a_bad_item_is_refused(
    make_app: Callable[..., Flask], corpus: list[dict[str, Any]], factory: sessionmaker[Session]
) -> None:
    client = make_app().test_client()
    a, b = corpus[0]["id"], corpus[1]["id"]
    seen = [{"type": "impression", "article": a, "variant": "default", "slot": 1, "item": b}]
    clicked = {"type": "click", "article": a, "variant": "default", "slot": 1, "item": b}
    assert beacon(client, [*seen, clicked]).get_json() == {"counted": 2}
    assert engagement(factory) == (1.0, 0.5, 1)  # slot 1 looked at half as often as slot 0
    assert_error(beacon(client, {**clicked, "item": "nope"}), 404, "not_found")
    assert_error(beacon(client, {**clicked, "item": ""}), 422, "invalid_request")
    assert engagement(factory) == (1.0, 0.5, 1)
    spec = client.get("/openapi.json").get_json()["components"]["schemas"]["FeedbackEvent"]
    assert "item" in spec["properties"] and "item" not in spec.get("required", [])


class Clock:
    def __init__(self) -> None:
        self.now = datetime.now(UTC)

    def __call__(self) -> datetime:
        return self.now


def test_lists_ranked_with_signals_are_cached_one_refresh_at_most(
    make_app: Callable[..., Flask],
    corpus: list[dict[str, Any]],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A list weighing readers' clicks is answered from the cache until the signals' summaries
    are due again (``signals.refresh_s``), then computed with the clicks that came meanwhile."""
    only = {"engagement_weight": 0.5, "coread_weight": 0.0, "explore_share": 0.0}
    app = make_app(related=only, signals={"refresh_s": 60})
    clock = Clock()
    services = app.extensions["recengine"]
    services.related.signals = Signals(services.settings, clock)
    monkeypatch.setattr(
        "recengine.web.api.answers.time",
        SimpleNamespace(time=lambda: clock.now.timestamp(), perf_counter=lambda: 0.0),
    )
    client = app.test_client()
    a = corpus[0]["id"]
    path = f"/api/v1/articles/{a}/related?k=5"
    first = client.get(path).get_json()
    item = first["items"][4]["id"]
    assert "engagement" not in first["items"][4]["reasons"]  # no click yet
    events = [{"type": "impression", "article": a, "variant": "default", "slot": 4, "item": item}]
    events += [{**events[0], "type": "click"}] * 3
    assert beacon(client, events).status_code == 200
    assert client.get(path).get_json() == first  # within the refresh: the cached answer
    clock.now += timedelta(seconds=61)
    later = client.get(path).get_json()
    mine = next(i for i in later["items"] if i["id"] == item)
    assert mine["reasons"]["engagement"] > 0
