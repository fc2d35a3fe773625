"""Property tests: arbitrary JSON values and strings into the record and event parsers.

Whatever comes in, the outcome is an accepted record (or event) that every later step can use
(store on either database, hash, print, convert to UTC) or a clean rejection: ``InvalidRecord``
/ ``InvalidRequest`` / a reader's ``error`` with a one-line reason. Any other exception is a bug.
The HTTP endpoints are driven with the same values: never a 500.
"""

from __future__ import annotations

import io
import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from urllib.parse import quote
from zoneinfo import ZoneInfo

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pydantic import ValidationError

from recengine.config import load_settings
from recengine.errors import InvalidRecord, InvalidRequest
from recengine.jsontext import loads
from recengine.pipeline.ingest.readers import read_jsonl
from recengine.pipeline.ingest.records import ArticleRecord, parse_record
from recengine.recommend.lists.params import check_time
from recengine.storage.db import make_engine
from recengine.storage.migrate import upgrade
from recengine.text.words.tokenize import Tokenizer
from recengine.web import create_app
from recengine.web.api.errors import describe
from recengine.web.schemas.core import build_models

ZONE = ZoneInfo("Pacific/Kiritimati")  # +14:00, the largest offset: the hardest for bounds

# Any character, lone surrogates included (hypothesis leaves them out by default).
ANY_CHAR = st.characters(codec=None, exclude_categories=())
TEXT = st.text(ANY_CHAR, max_size=40)
NUMBERS = st.integers() | st.floats(allow_nan=True, allow_infinity=True)
# Up to 4,000 digits: hypothesis must be able to print a failing example (Python refuses str()
# of more than 4,300); bigger integers are fed to the parsers as JSON text below.
BIG_INTS = st.integers(min_value=10**20, max_value=10**4000) | st.integers(
    min_value=-(10**4000), max_value=-(10**20)
)
TIMES = st.one_of(
    st.datetimes().map(lambda d: d.isoformat()),  # years 1..9999
    st.datetimes(timezones=st.timezones()).map(lambda d: d.isoformat()),
    st.dates().map(str),
    st.from_regex(r"\A\d{1,20}(\.\d{1,6})?\Z"),  # digit strings: Unix seconds, ms, yyyymmdd...
    st.integers(min_value=-(10**15), max_value=10**15),
    st.floats(allow_nan=True, allow_infinity=True),
    st.from_regex(r"\A\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}(:\d{2})?([+-]\d{2}:\d{2}|Z)?\Z"),
    TEXT,
)
JSON = st.recursive(
    st.none() | st.booleans() | NUMBERS | BIG_INTS | TEXT | TIMES,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(TEXT, inner, max_size=4),
    max_leaves=12,
)
FIELDS = ("id", "title", "content", "url", "tags", "category", "author", "published_at")
RECORDS = st.dictionaries(st.sampled_from(FIELDS) | TEXT, JSON | TIMES, max_size=10) | JSON
EVENTS = (
    st.fixed_dictionaries({"article": JSON}, optional={"at": TIMES | JSON, "kind": JSON, "x": JSON})
    | JSON
)
# derandomize: the same examples every run (a run on a loaded machine sees what any other did).
DEFAULTS = settings(
    max_examples=300,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
    database=None,
    derandomize=True,
)


def assert_usable(record: ArticleRecord) -> None:
    """An accepted record can be hashed, printed, stored (UTF-8, no NUL) and placed in UTC."""
    assert 1 <= len(record.id) <= 255 and record.id.strip()
    for text in (record.id, record.title, record.content, *record.tags):
        text.encode("utf-8")
        assert "\x00" not in text
    assert record.title or record.content
    assert all(0 < len(t) <= 255 for t in record.tags) and len(record.tags) <= 200
    if record.published_at is not None:
        assert record.published_at.tzinfo is not None
        utc = record.published_at.astimezone(UTC)
        assert datetime(1899, 12, 31, tzinfo=UTC) <= utc <= datetime(2102, 1, 1, tzinfo=UTC)
        utc.timestamp()
    assert len(record.record_hash()) == 64
    json.dumps(record.model_dump(mode="json"), ensure_ascii=False).encode("utf-8")


def assert_clean(message: str) -> None:
    assert message and "\n" not in message and len(message) < 2000
    message.encode("utf-8")


@DEFAULTS
@given(data=RECORDS)
def test_a_record_is_accepted_usable_or_cleanly_rejected(data: Any) -> None:
    try:
        record = parse_record(data, ZONE)
    except InvalidRecord as exc:
        assert_clean(str(exc))
        return
    assert_usable(record)


@DEFAULTS
@given(value=TIMES | JSON)
def test_a_filter_time_is_a_time_or_a_clean_rejection(value: Any) -> None:
    try:
        when = check_time(value, "published_after", ZONE)
    except InvalidRequest as exc:
        assert_clean(str(exc))
        assert str(exc).startswith("published_after: ")
        return
    if when is not None:
        assert when.tzinfo is not None
        when.astimezone(UTC).timestamp()


def json_lines(value: Any) -> bytes:
    """``value`` as a JSON line as Python writes it: NaN as is, lone surrogates as escapes."""
    try:
        return json.dumps(value).encode("ascii")
    except ValueError:  # an integer over 4300 digits cannot even be written by Python
        return b'{"id": ' + b"9" * 5000 + b"}"


RAW_TEXT = TEXT.map(lambda t: t.encode("utf-8", "surrogatepass"))  # raw surrogates: bad UTF-8


@DEFAULTS
@given(lines=st.lists(RECORDS.map(json_lines) | st.binary(max_size=60) | RAW_TEXT, max_size=6))
def test_a_file_of_anything_gives_records_or_rejected_lines(lines: list[bytes]) -> None:
    raw = b"\n".join(line.replace(b"\n", b" ") for line in lines)
    for item in read_jsonl(io.BytesIO(raw), 100_000):
        if item.error is not None:
            assert_clean(item.error)
            continue
        assert isinstance(item.data, dict)
        try:
            assert_usable(parse_record(item.data, ZONE))
        except InvalidRecord as exc:
            assert_clean(str(exc))


@DEFAULTS
@given(text=TEXT | RECORDS.map(lambda v: json_lines(v).decode("ascii")))
def test_bounded_json_parses_or_raises_value_error(text: str) -> None:
    try:
        loads(text)
    except ValueError as exc:
        assert_clean(str(exc))


@DEFAULTS
@given(body=EVENTS)
def test_an_event_body_is_accepted_usable_or_cleanly_rejected(body: Any) -> None:
    model = build_models(load_settings({})).events_in
    try:
        events = model.model_validate(body).events()
    except ValidationError as exc:
        assert_clean(describe(exc, body))
        return
    for event in events:
        assert isinstance(event.article, str) and 1 <= len(event.article) <= 255
        event.article.encode("utf-8")
        when = check_time(event.at, "at", ZONE)  # what the use case does with it
        if when is not None:
            when.astimezone(UTC).timestamp()


# -- the same values over HTTP ---------------------------------------------------------------


@pytest.fixture(scope="module")
def client(tmp_path_factory: pytest.TempPathFactory, tokenizer: Tokenizer) -> Any:
    folder: Path = tmp_path_factory.mktemp("properties")
    config = load_settings(
        {"data_dir": str(folder), "allow_open_writes": True, "ingest": {"naive_timezone": ZONE.key}}
    )
    upgrade(make_engine(config.resolved_database_url))
    app = create_app(config, tokenizer=tokenizer)
    client = app.test_client()
    assert client.post("/api/v1/articles", json={"id": "a1", "title": "t"}).status_code == 200
    return client


# A test client is shared by the examples of one test (a fixture), and the examples are fixed.
HTTP_EXAMPLES = settings(
    max_examples=150,
    deadline=None,
    suppress_health_check=list(HealthCheck),
    database=None,
    derandomize=True,
)


def post_json(client: Any, path: str, value: Any) -> Any:
    body = json_lines(value)
    return client.post(path, data=body, headers={"Content-Type": "application/json"})


@HTTP_EXAMPLES
@given(body=RECORDS | st.lists(RECORDS, max_size=3))
def test_http_articles_never_answer_500(client: Any, body: Any) -> None:
    response = post_json(client, "/api/v1/articles", body)
    assert response.status_code in (200, 400, 413, 422), response.get_data()[:300]
    if response.status_code == 200:
        for article_id in response.get_json()["ids"]:
            stored = client.get(f"/api/v1/articles/{quote(article_id, safe='')}")
            assert stored.status_code < 500
    else:
        assert_clean(response.get_json()["error"]["message"])


@HTTP_EXAMPLES
@given(body=EVENTS | st.lists(EVENTS, max_size=3))
def test_http_events_never_answer_500(client: Any, body: Any) -> None:
    response = post_json(client, "/api/v1/users/reader/events", body)
    assert response.status_code in (200, 400, 404, 413, 422), response.get_data()[:300]
    if response.status_code != 200:
        assert_clean(response.get_json()["error"]["message"])
