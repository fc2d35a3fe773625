"""The one rule for times (``recengine.times``), and that every way in applies it the same.

Ingest records, reader events and the filters of related lists and feeds, through the Python API,
the command line and HTTP: a value accepted in one place is accepted everywhere with the same
meaning, and a value refused in one is refused everywhere with the same reason.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from datetime import UTC, date, datetime, timedelta, timezone
from pathlib import Path
from typing import Any
from urllib.parse import quote
from zoneinfo import ZoneInfo

import pytest
from click.testing import CliRunner
from sqlalchemy.orm import Session, sessionmaker

from recengine.cli import main
from recengine.cli.context import CliContext
from recengine.config import Settings
from recengine.errors import InvalidRecord, InvalidRequest
from recengine.pipeline.featurize import Featurizer
from recengine.pipeline.ingest.ingester import Ingester
from recengine.pipeline.ingest.records import parse_record
from recengine.pipeline.reindex.full import reindex
from recengine.recommend.feed import ReaderFeeds
from recengine.recommend.live import LiveIndex
from recengine.recommend.related import RelatedArticles
from recengine.storage.rows.articles import get_article
from recengine.text.words.tokenize import Tokenizer
from recengine.times import MAX_TIMESTAMP, MIN_TIMESTAMP, parse_time
from recengine.web import create_app
from tests.conftest import make_settings
from tests.factories import javaguide_records
from tests.templates import load_cloned

SHANGHAI = ZoneInfo("Asia/Shanghai")


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("2024-05-01T08:00:00+08:00", datetime(2024, 5, 1, 0, 0, tzinfo=UTC)),
        ("2024-05-01T00:00:00Z", datetime(2024, 5, 1, tzinfo=UTC)),
        ("2024-05-01t00:00:00z", datetime(2024, 5, 1, tzinfo=UTC)),  # RFC 3339 lower case
        ("2024-05-01", datetime(2024, 4, 30, 16, 0, tzinfo=UTC)),  # midnight in the zone
        ("2024-05-01 08:00", datetime(2024, 5, 1, 0, 0, tzinfo=UTC)),
        ("2024-05-01T08:00:00 08:00", datetime(2024, 5, 1, 0, 0, tzinfo=UTC)),  # "+" unencoded
        ("2024-05-01 08:00 0800", datetime(2024, 5, 1, 0, 0, tzinfo=UTC)),
        (" 2024-05-01T08:00:00 ", datetime(2024, 5, 1, 0, 0, tzinfo=UTC)),
        (1714550400, datetime(2024, 5, 1, 8, 0, tzinfo=UTC)),  # Unix seconds are UTC
        (1714550400.5, datetime(2024, 5, 1, 8, 0, 0, 500000, tzinfo=UTC)),
        ("1714550400", datetime(2024, 5, 1, 8, 0, tzinfo=UTC)),
        (-1, datetime(1969, 12, 31, 23, 59, 59, tzinfo=UTC)),
        (date(2024, 5, 1), datetime(2024, 4, 30, 16, 0, tzinfo=UTC)),
        (datetime(2024, 5, 1, 8, 0), datetime(2024, 5, 1, 0, 0, tzinfo=UTC)),
        (datetime(2024, 5, 1, tzinfo=UTC), datetime(2024, 5, 1, tzinfo=UTC)),
        ("2100-12-31T23:59:59-14:00", datetime(2101, 1, 1, 13, 59, 59, tzinfo=UTC)),
        ("1900-01-01T00:00:00+14:00", datetime(1899, 12, 31, 10, 0, tzinfo=UTC)),
        (MIN_TIMESTAMP, datetime(1900, 1, 1, tzinfo=UTC)),
        (MAX_TIMESTAMP, datetime(2100, 12, 31, 23, 59, 59, tzinfo=UTC)),
        # the last instant of 2100: microseconds truncated, never rounded into 2101
        (MAX_TIMESTAMP + 0.9999995, datetime(2100, 12, 31, 23, 59, 59, 999999, tzinfo=UTC)),
        (-1.5, datetime(1969, 12, 31, 23, 59, 58, 500000, tzinfo=UTC)),
        (None, None),
        ("", None),
    ],
)
def test_accepted_times(value: Any, expected: datetime | None) -> None:
    parsed = parse_time(value, SHANGHAI)
    assert parsed == expected
    if parsed is not None:
        assert parsed.tzinfo is not None
        assert parsed.astimezone(UTC)  # every accepted time converts to UTC


@pytest.mark.parametrize(
    ("value", "reason"),
    [
        ("9999-12-31T23:59:59-14:00", "year 9999 is outside 1900-2100"),
        ("0001-01-01T00:00:00+14:00", "year 1 is outside 1900-2100"),
        ("0001-01-01", "year 1"),
        ("1899-12-31T23:59:59Z", "year 1899"),
        ("12345678901234", "outside the years 1900-2100 (milliseconds? give seconds)"),
        ("20240501080000", "outside the years"),  # yyyymmddHHMMSS is not Unix time
        (1714550400000, "milliseconds?"),
        (MAX_TIMESTAMP + 1, "outside the years"),
        (MIN_TIMESTAMP - 1, "outside the years"),
        ("20240501", "ambiguous"),
        ("yesterday", "is not a time"),
        ("2024-13-01", "is not a time"),
        ("2024-05-01T25:00", "is not a time"),
        ("2024-05-01T00:00+25:00", "is not a time"),
        ("9" * 5000, "characters long"),
        (10**400, "outside the years"),  # no float can hold it: compared as an integer
        (-(10**400), "outside the years"),
        ("1" + "0" * 40, "outside the years"),
        (float("nan"), "finite"),
        (float("inf"), "finite"),
        (True, "must be a time"),
        ([2024, 5, 1], "not list"),
        ({"year": 2024}, "not dict"),
        (datetime(9999, 12, 31, tzinfo=timezone(-timedelta(hours=14))), "year 9999"),
        (date(1, 1, 1), "year 1"),
    ],
)
def test_refused_times(value: Any, reason: str) -> None:
    with pytest.raises(ValueError, match=re.escape(reason)):
        parse_time(value, SHANGHAI)


def test_naive_times_can_stay_naive_for_the_caller_to_place() -> None:
    assert parse_time("2024-05-01 08:00", None) == datetime(2024, 5, 1, 8, 0)
    with pytest.raises(ValueError, match="year 9999"):
        parse_time("9999-12-31 23:59", None)


# -- every way in applies the same rule -------------------------------------------------------


@pytest.fixture
def shanghai(tmp_path: Path, database_url: str) -> Settings:
    return make_settings(
        tmp_path, database_url, ingest={"naive_timezone": "Asia/Shanghai"}, allow_open_writes=True
    )


@pytest.fixture
def indexed(
    shanghai: Settings, factory: sessionmaker[Session], tokenizer: Tokenizer, data_dir: Path
) -> list[dict[str, Any]]:
    """30 real articles, published one a day from 2024-04-20 (dates alone, Shanghai time)."""
    records = javaguide_records(data_dir, 30)
    for n, r in enumerate(records):
        r["published_at"] = (date(2024, 4, 20) + timedelta(days=n)).isoformat()
    load_cloned(factory, Featurizer(shanghai, tokenizer), records, _ingest_all_and_reindex)
    return records


def _ingest_all_and_reindex(
    factory: sessionmaker[Session], featurizer: Featurizer, records: Sequence[dict[str, Any]]
) -> None:
    summary = Ingester(factory, featurizer).ingest_records(list(records))
    assert summary.rejected == 0
    reindex(factory=factory, featurizer=featurizer)


def test_ingest_reads_a_date_alone_as_midnight_in_the_zone(
    indexed: list[dict[str, Any]], factory: sessionmaker[Session]
) -> None:
    with factory() as session:
        article = get_article(session=session, external_id=indexed[11]["id"])  # 2024-05-01
    assert article is not None and article.published_at is not None
    assert article.published_at == datetime(2024, 4, 30, 16, 0, tzinfo=UTC)


def test_python_cli_and_http_filter_by_the_same_rule(
    indexed: list[dict[str, Any]],
    shanghai: Settings,
    factory: sessionmaker[Session],
    tokenizer: Tokenizer,
) -> None:
    article = indexed[0]["id"]
    related = RelatedArticles(shanghai, LiveIndex(shanghai, factory, background=False))
    client = create_app(shanghai, tokenizer=tokenizer).test_client()
    runner = CliRunner()
    spellings = ["2024-05-01", "2024-05-01T00:00:00", "2024-05-01T00:00:00+08:00", "1714492800"]
    bodies = []
    for value in spellings:
        with factory() as session:
            python = related.related(
                article, session=session, k=30, min_score=0, published_after=value
            )
        args = ["related", article, "-k", "30", "--min-score", "0", "--format", "json"]
        cli = runner.invoke(main, [*args, "--after", value], obj=CliContext(shanghai))
        assert cli.exit_code == 0, cli.output
        # percent-encoded, and as typed in a browser (a bare "+" arrives as a space)
        for query in (f"published_after={quote(value)}", f"after={value}"):
            http = client.get(f"/api/v1/articles/{article}/related?k=30&min_score=0&{query}")
            assert http.status_code == 200, http.get_json()
            assert http.get_json() == python
        assert json.loads(cli.output) == python
        bodies.append(python)
    assert all(body == bodies[0] for body in bodies)  # four spellings of one instant
    # articles published on 2024-05-01 (Shanghai) and later: the 19 of days 11..29 (no floor)
    assert {i["id"] for i in bodies[0]["items"]} == {r["id"] for r in indexed[11:]}


@pytest.mark.parametrize("value", ["9999-12-31T23:59:59-14:00", "0001-01-01", "12345678901234"])
def test_every_way_in_refuses_the_same_times(
    value: str,
    indexed: list[dict[str, Any]],
    shanghai: Settings,
    factory: sessionmaker[Session],
    tokenizer: Tokenizer,
) -> None:
    article = indexed[0]["id"]
    reason = str(_refusal(value))
    index = LiveIndex(shanghai, factory, background=False)
    with factory() as session, pytest.raises(InvalidRequest) as python:
        RelatedArticles(shanghai, index).related(article, session=session, published_after=value)
    assert str(python.value) == f"published_after: {reason}"
    with factory() as session, pytest.raises(InvalidRequest) as event:
        ReaderFeeds(shanghai, index).record_reads("u", [article], session=session, at=value)
    assert str(event.value) == f"at: {reason}"
    with pytest.raises(InvalidRecord) as record:
        parse_record({"id": "x", "title": "t", "published_at": value}, SHANGHAI)
    assert str(record.value) == f"published_at: {reason}"

    cli = CliRunner().invoke(main, ["related", article, "--after", value], obj=CliContext(shanghai))
    assert cli.exit_code == 2 and f"Invalid value for '--after': {reason}" in cli.output

    client = create_app(shanghai, tokenizer=tokenizer).test_client()
    for path, body in (
        (f"/api/v1/articles/{article}/related?published_before={value}", None),
        ("/api/v1/users/u/events", {"article": article, "at": value}),
        ("/api/v1/articles", {"id": "new", "title": "t", "published_at": value}),
    ):
        response = client.post(path, json=body) if body else client.get(path)
        assert response.status_code == 422, response.get_json()
        assert reason in response.get_json()["error"]["message"]
    assert client.get("/api/v1/articles/new").status_code == 404


def _refusal(value: str) -> ValueError:
    try:
        parse_time(value, SHANGHAI)
    except ValueError as exc:
        return exc
    raise AssertionError(f"{value!r} was accepted")


def test_a_blank_filter_is_no_bound_and_the_schema_says_so(
    indexed: list[dict[str, Any]], shanghai: Settings, tokenizer: Tokenizer
) -> None:
    """``?published_before=`` (a form's empty field) is no bound, as a blank published_at is
    no time; /openapi.json publishes that, so clients and schema checkers agree."""
    client = create_app(shanghai, tokenizer=tokenizer).test_client()
    path = f"/api/v1/articles/{indexed[0]['id']}/related?k=30&min_score=0"
    unbounded = client.get(path).get_json()
    for blank in ("", "%20%20"):
        for name in ("published_before", "after"):
            answer = client.get(f"{path}&{name}={blank}")
            assert answer.status_code == 200 and answer.get_json() == unbounded
    spec = client.get("/openapi.json").get_json()
    params = spec["paths"]["/api/v1/articles/{article_id}/related"]["get"]["parameters"]
    schema = next(p["schema"] for p in params if p["name"] == "published_before")
    blank_ok = [s for s in schema["anyOf"] if s.get("pattern") == r"^\s*$"]
    assert len(blank_ok) == 1
