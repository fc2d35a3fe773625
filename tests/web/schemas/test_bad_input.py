"""Hostile and broken input, through HTTP and the CLI, on SQLite and PostgreSQL.

Every case is a clean rejection: HTTP answers 4xx with the JSON error body (never a 500) and
writes nothing; ``recengine ingest`` lists the bad line, ingests every other line of the file and
exits 1 (never 70, never a traceback, the SQL or the batch's values). The cases are the ones
reported from outside (out-of-range dates, 14-digit timestamps, nesting 100,000 levels deep or
50,000 inside one field, integers of more than 4,300 digits, lone surrogates) and their siblings.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from flask import Flask
from flask.testing import FlaskClient
from sqlalchemy import Engine, func, select
from sqlalchemy.orm import Session, sessionmaker

from recengine.cli import main
from recengine.cli.context import CliContext
from recengine.config import Settings
from recengine.errors import InvalidRequest
from recengine.recommend.lists.params import check_id
from recengine.recommend.overrides import NewOverride
from recengine.storage.models import Override, ReaderEvent
from recengine.web.api.errors import error_body
from tests.factories import record
from tests.web.api.test_articles import snapshot
from tests.web.conftest import AUTH

DEEP = "[" * 100_000 + "]" * 100_000
DEEP_FIELD = "[" * 50_000 + "]" * 50_000
NESTED_33 = "[" * 33 + "]" * 33


def rec(**fields: str) -> str:
    """A record's JSON with raw JSON values: ``rec(published_at='"9999-..."')``."""
    base = {"id": '"bad"', "title": '"标题"', **fields}
    return "{" + ", ".join(f'"{k}": {v}' for k, v in base.items() if v != "") + "}"


# (case, raw JSON of one record, a fragment of the reason)
BAD_RECORDS = [
    ("year 9999 at -14:00", rec(published_at='"9999-12-31T23:59:59-14:00"'), "year 9999"),
    ("year 1 at +14:00", rec(published_at='"0001-01-01T00:00:00+14:00"'), "year 1 "),
    ("14-digit string", rec(published_at='"12345678901234"'), "outside the years"),
    ("14-digit number", rec(published_at="12345678901234"), "outside the years"),
    ("milliseconds", rec(published_at="1714550400000"), "milliseconds?"),
    ("400-digit number", rec(published_at="1" + "0" * 400), "outside the years"),
    ("8-digit string", rec(published_at='"20240501"'), "ambiguous"),
    ("date NaN", rec(published_at="NaN"), "NaN is not a JSON number"),
    ("date Infinity", rec(published_at="-Infinity"), "is not a JSON number"),
    ("date 1e400", rec(published_at="1e400"), "out of range"),
    ("date true", rec(published_at="true"), "published_at"),
    ("date object", rec(published_at='{"y": 2024}'), "published_at"),
    ("date words", rec(published_at='"next tuesday"'), "is not a time"),
    ("nested 100k levels", DEEP, "nested more than 32 levels"),
    ("nested 50k in a field", rec(tags=DEEP_FIELD), "nested more than 32 levels"),
    ("nested 33 in an unknown field", rec(extra=NESTED_33), "nested more than 32 levels"),
    ("id of 5000 digits", rec(id="9" * 5000), "more than 4300 digits"),
    ("id of 2**64", rec(id=str(2**64)), "64 bits"),
    ("id 1e300", rec(id="1e300"), "64 bits"),
    ("id lone surrogate", rec(id='"\\ud800"'), "surrogate"),
    ("id lone low surrogate", rec(id='"a\\udfffb"'), "surrogate"),
    ("title lone surrogate", rec(title='"\\udc80"'), "surrogate"),
    ("key lone surrogate", '{"id": "bad", "title": "t", "\\ud800": 1}', "surrogate"),
    ("id with a line break", rec(id='"a\\nb"'), "line breaks"),
    ("id of 256 characters", rec(id=json.dumps("x" * 256)), "id"),
    ("id blank", rec(id='"   "'), "id"),
    ("id missing", rec(id=""), "id"),
    ("id list", rec(id='["a"]'), "id"),
    ("id true", rec(id="true"), "id"),
    ("NUL in content", rec(content='"a\\u0000b"'), "NUL"),
    ("no text", rec(title='""'), "title or content"),
    ("category of 256", rec(category=json.dumps("c" * 256)), "category"),
    ("201 tags", rec(tags=json.dumps([f"t{i}" for i in range(201)])), "tags"),
    ("tag of 256", rec(tags=json.dumps(["t" * 256])), "tags"),
    ("tags object", rec(tags='{"a": 1}'), "tags"),
    ("a number", "5", "expected a JSON object, got number"),
    ("a string", '"text"', "expected a JSON object, got string"),
    ("null", "null", "expected a JSON object, got null"),
    ("broken JSON", '{"id": "bad", "title": ', "JSON"),
]
BAD_EVENTS = [
    ("at year 1 +14:00", '{"article": "a1", "at": "0001-01-01T00:00:00+14:00"}', "year 1 "),
    ("at year 9999", '{"article": "a1", "at": "9999-12-31T23:59:59-14:00"}', "year 9999"),
    ("at far future number", '{"article": "a1", "at": 253402300800}', "outside the years"),
    ("at 400 digits", '{"article": "a1", "at": 1' + "0" * 400 + "}", "outside the years"),
    ("at 14-digit string", '{"article": "a1", "at": "12345678901234"}', "outside the years"),
    ("at NaN", '{"article": "a1", "at": NaN}', "NaN"),
    ("at true", '{"article": "a1", "at": true}', "at"),
    ("nested 100k levels", DEEP, "nested"),
    ("nested 50k in at", '{"article": "a1", "at": ' + DEEP_FIELD + "}", "nested"),
    ("article lone surrogate", '{"article": "\\ud800"}', "surrogate"),
    ("article of 5000 digits", '{"article": ' + "9" * 5000 + "}", "4300 digits"),
    ("article number", '{"article": 12}', "article"),
    ("article empty", '{"article": ""}', "article"),
    ("unknown kind", '{"article": "a1", "kind": "like"}', "kind"),
    ("unknown field", '{"article": "a1", "extra": 1}', "extra"),
    ("list in a list", "[[]]", "expected a JSON object, got array"),
]


def counts(factory: sessionmaker[Session]) -> tuple[int, ...]:
    """(articles, feature rows, change seq, reader events): what "nothing was written" compares."""
    with factory() as session:
        events = session.scalar(select(func.count()).select_from(ReaderEvent)) or 0
    return (*snapshot(factory), events)


def post_raw(client: FlaskClient, path: str, body: str) -> Any:
    headers = {**AUTH, "Content-Type": "application/json"}
    return client.post(path, data=body.encode("utf-8"), headers=headers)


def assert_rejected(response: Any, fragment: str) -> None:
    assert 400 <= response.status_code < 500, (response.status_code, response.get_data()[:300])
    body = response.get_json()
    assert set(body) == {"error"} and set(body["error"]) == {"code", "message"}
    assert fragment in body["error"]["message"], body["error"]["message"]


def test_http_refuses_every_bad_record_and_writes_nothing(
    client: FlaskClient, factory: sessionmaker[Session]
) -> None:
    good = json.dumps(record(1), ensure_ascii=False)
    assert post_raw(client, "/api/v1/articles", good).status_code == 200
    before = counts(factory)
    for case, bad, fragment in BAD_RECORDS:
        for body in (bad, f"[{good}, {bad}]"):  # alone, and in a batch: all or nothing
            response = post_raw(client, "/api/v1/articles", body)
            assert_rejected(response, fragment), case
            assert counts(factory) == before, case


def test_http_names_the_bad_item_of_a_batch_by_position_and_id(client: FlaskClient) -> None:
    stored = client.post("/api/v1/articles", json=[record(1), record(2)], headers=AUTH)
    assert stored.status_code == 200
    batch = [record(1), record(2, published_at="9999-12-31T23:59:59-14:00")]
    response = client.post("/api/v1/articles", json=batch, headers=AUTH)
    message = response.get_json()["error"]["message"]
    assert message == "item [1] (id 'a2'): published_at: year 9999 is outside 1900-2100"
    events = [{"article": "a1"}, {"article": "a2", "at": "0001-01-01"}]
    response = client.post("/api/v1/users/u/events", json=events, headers=AUTH)
    assert response.get_json()["error"]["message"] == (
        "item [1] (article 'a2'): at: year 1 is outside 1900-2100"
    )


def test_http_refuses_every_bad_event_and_writes_nothing(
    client: FlaskClient, factory: sessionmaker[Session]
) -> None:
    assert client.post("/api/v1/articles", json=record(1), headers=AUTH).status_code == 200
    before = counts(factory)
    good = '{"article": "a1"}'
    for case, bad, fragment in BAD_EVENTS:
        for body in (bad, f"[{good}, {bad}]"):
            response = post_raw(client, "/api/v1/users/reader/events", body)
            assert_rejected(response, fragment), case
            assert counts(factory) == before, case


def test_http_refuses_bad_filters_on_reads(client: FlaskClient) -> None:
    assert client.post("/api/v1/articles", json=record(1), headers=AUTH).status_code == 200
    for query in (
        "published_after=9999-12-31T23:59:59-14:00",
        "published_before=0001-01-01T00:00:00%2B14:00",
        "published_after=12345678901234",
        "published_after=" + "9" * 5000,
        "after=NaN",
    ):
        for path in ("/api/v1/articles/a1/related", "/api/v1/users/u/feed"):
            response = client.get(f"{path}?{query}", headers=AUTH)
            assert response.status_code == 422, (path, query, response.get_data()[:200])


# Bodies whose bytes are not UTF-8: CESU-8 (a UTF-16 surrogate, alone or paired, written as
# three bytes), a stray byte. Python's json reads bytes with "surrogatepass" and took the first two.
NOT_UTF8 = {
    "CESU-8 lone surrogate": b"\xed\xa0\x80",
    "CESU-8 surrogate pair": b"\xed\xa0\xbd\xed\xb8\x80",
    "stray byte": b"\xff",
}
# Each POST endpoint with a body template: {} is where the bytes go (inside a string value).
POSTS = {
    "/api/v1/articles": b'{"id": "a{}", "title": "t"}',
    "/api/v1/users/reader/events": b'{"article": "{}"}',
    "/api/v1/overrides": b'{"kind": "exclude", "article": "a1", "reason": "{}"}',
    "/api/v1/feedback": b'{"type": "click", "article": "{}", "variant": "default", "slot": 0}',
}


def test_http_refuses_bodies_that_are_not_utf8_on_every_post(
    client: FlaskClient, factory: sessionmaker[Session]
) -> None:
    assert client.post("/api/v1/articles", json=record(1), headers=AUTH).status_code == 200
    before = counts(factory)
    for path, template in POSTS.items():
        for case, raw in NOT_UTF8.items():
            body = template.replace(b"{}", raw)
            headers = {**AUTH, "Content-Type": "application/json"}
            response = client.post(path, data=body, headers=headers)
            assert response.status_code == 400, (path, case, response.get_data()[:300])
            assert_rejected(response, "not UTF-8 (byte 0x")
            assert response.get_json()["error"]["code"] == "invalid_json"
    assert counts(factory) == before
    with factory() as session:
        assert session.scalar(select(func.count()).select_from(Override)) == 0


def test_http_refuses_nul_in_every_stored_text_field(
    client: FlaskClient, factory: sessionmaker[Session]
) -> None:
    """PostgreSQL cannot store NUL in text (SQLite can): refused on both, naming the field."""
    assert client.post("/api/v1/articles", json=record(1), headers=AUTH).status_code == 200
    assert client.post("/api/v1/articles", json=record(2), headers=AUTH).status_code == 200
    before = counts(factory)
    nul = "a\x00b"
    cases: list[tuple[str, dict[str, Any], str]] = [
        *(
            ("/api/v1/articles", {**record(3), field: value}, field)
            for field, value in (
                ("id", nul),
                ("title", nul),
                ("content", nul),
                ("url", nul),
                ("category", nul),
                ("author", nul),
                ("tags", ["x", nul]),
            )
        ),
        ("/api/v1/users/reader/events", {"article": nul}, "article"),
        ("/api/v1/overrides", {"kind": "exclude", "article": nul}, "article"),
        ("/api/v1/overrides", {"kind": "block", "article": "a1", "other": nul}, "other"),
        ("/api/v1/overrides", {"kind": "exclude", "article": "a1", "reason": nul}, "reason"),
        ("/api/v1/overrides", {"kind": "exclude", "article": "a1", "by": nul}, "by"),
    ]
    for path, body, field in cases:
        response = client.post(path, json=body, headers=AUTH)
        assert 400 <= response.status_code < 500, (field, response.get_data()[:300])
        assert_rejected(response, field)
        assert counts(factory) == before, field
    reader = client.post("/api/v1/users/a%00b/events", json={"article": "a1"}, headers=AUTH)
    assert_rejected(reader, "user")
    with factory() as session:
        assert session.scalar(select(func.count()).select_from(Override)) == 0


def test_a_batch_over_the_limit_names_its_setting(
    make_app: Callable[..., Flask], factory: sessionmaker[Session]
) -> None:
    client = make_app(web={"max_batch": 3, "max_events": 2}, feedback={"max_events": 2})
    client = client.test_client()
    event = {"type": "click", "article": "a1", "variant": "default", "slot": 0}
    for path, body, said in (
        ("/api/v1/articles", [record(i) for i in range(4)], "3 articles (web.max_batch), got 4"),
        ("/api/v1/users/u/events", [{"article": "a1"}] * 3, "2 events (web.max_events), got 3"),
        ("/api/v1/feedback", [event] * 3, "2 events (feedback.max_events), got 3"),
    ):
        response = client.post(path, json=body, headers=AUTH)
        assert response.status_code == 422, response.get_data()[:300]
        assert response.get_json()["error"]["message"] == (
            f"a batch holds at most {said}: send it in several requests"
        )
    assert counts(factory) == (0, 0, 0, 0)


def test_every_error_body_is_written_by_the_one_formatter(client: FlaskClient) -> None:
    """Flask's handlers write what ``errors.error_body`` writes (the worker's loop calls it
    too), byte for byte: compact, UTF-8 as is, one final newline."""
    responses = [
        client.get("/api/v1/nowhere"),
        client.get("/api/v1/articles/缺/related?k=0"),
        client.get("/api/v1/articles/缺"),
        client.post(
            "/api/v1/articles", data=b"{", headers={**AUTH, "Content-Type": "application/json"}
        ),
        client.post("/api/v1/articles", json=record(1)),
        client.put("/api/v1/articles"),
    ]
    for response in responses:
        assert response.status_code >= 400
        error = response.get_json()["error"]
        assert response.get_data() == error_body(error["code"], error["message"]), error
    assert error_body("x", "a\ud800b").decode("utf-8") == '{"error":{"code":"x","message":"a?b"}}\n'


def test_the_command_line_and_python_callers_get_the_same_nul_rule() -> None:
    """``override add`` and the Python API go through NewOverride.parse and check_id."""
    for kwargs in ({"reason": "a\x00b", "by": "ed"}, {"by": "e\x00d"}):
        with pytest.raises(InvalidRequest, match="NUL"):
            NewOverride.parse("exclude", "a1", **kwargs)
    with pytest.raises(InvalidRequest, match="NUL"):
        check_id("a\x00b", "user id")


@pytest.fixture
def cli(settings: Settings, engine: Engine) -> Any:
    """The command line on the migrated test database."""
    runner = CliRunner()

    def invoke(*args: str) -> Any:
        return runner.invoke(main, list(args), obj=CliContext(settings))

    return invoke


def mixed_file(path: Path) -> tuple[Path, int]:
    """Good records between every bad one: ``good_0, bad_0, good_1, bad_1, ..., good_n``."""
    lines = []
    for n, (_, bad, _) in enumerate(BAD_RECORDS):
        lines.append(json.dumps(record(n), ensure_ascii=False))
        lines.append(bad)
    lines.append(json.dumps(record(len(BAD_RECORDS)), ensure_ascii=False))
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path, len(BAD_RECORDS) + 1


@pytest.mark.parametrize("as_json", [False, True])
def test_ingest_rejects_each_bad_line_and_ingests_the_rest(
    cli: Any, factory: sessionmaker[Session], tmp_path: Path, as_json: bool
) -> None:
    path, good = mixed_file(tmp_path / "mixed.jsonl")
    result = cli("ingest", str(path), *(["--json"] if as_json else []))
    output = result.output
    assert result.exit_code == 1, output[-2000:]
    assert counts(factory)[0] == good  # every good record went in, before and after the bad
    for leak in ("Traceback", "INSERT", "SELECT", "[parameters", "sqlalchemy", "internal error"):
        assert leak not in output, leak
    if as_json:
        summary = json.loads(result.stdout.splitlines()[0])  # progress: on stderr
        assert summary["rejected"] == len(BAD_RECORDS) and summary["inserted"] == good
        reasons = {r["line"]: r["reason"] for r in summary["rejections"]}
        for n, (case, _, fragment) in enumerate(BAD_RECORDS):
            assert fragment in reasons[2 * n + 2], (case, reasons[2 * n + 2])
    else:
        assert f"inserted {good}," in output and f"rejected {len(BAD_RECORDS)}" in output
    again = cli("ingest", str(path))  # nothing half-written: the rerun changes nothing
    assert again.exit_code == 1 and f"unchanged {good}," in again.output


def test_cli_refuses_bad_filters_with_a_message(cli: Any, tmp_path: Path) -> None:
    path = tmp_path / "one.jsonl"
    path.write_text(json.dumps(record(1), ensure_ascii=False) + "\n", encoding="utf-8")
    assert cli("ingest", str(path)).exit_code == 0
    for value in ("9999-12-31T23:59:59-14:00", "12345678901234", "soon"):
        result = cli("related", "a1", "--after", value)
        assert result.exit_code == 2 and "Invalid value for '--after': " in result.output


def test_one_record_limit_and_one_message_over_http_and_the_cli(
    client: FlaskClient, cli: Any, factory: sessionmaker[Session], tmp_path: Path
) -> None:
    """ingest.max_record_bytes holds a record of an HTTP body as it holds a line of a file
    (HTTP took 10 MB articles while the CLI refused 2 MB); web.max_body_bytes bounds a body."""
    compact = {"ensure_ascii": False, "separators": (",", ":")}
    big = record("big", content="<p>" + "长文" * 1_700_000 + "</p>")  # 10 MB of UTF-8
    near = record("near", content="正文" * 330_000)  # 1.98 MB: within the limit
    size = len(json.dumps(big, **compact).encode())
    message = f"record is {size} bytes, over the limit of 2000000 (ingest.max_record_bytes)"
    before = counts(factory)
    alone = post_raw(client, "/api/v1/articles", json.dumps(big, ensure_ascii=False))
    assert_rejected(alone, message)
    assert alone.get_json()["error"]["message"] == message
    batch = post_raw(client, "/api/v1/articles", json.dumps([near, big], ensure_ascii=False))
    assert batch.get_json()["error"]["message"] == f"item [1] (id 'abig'): {message}"
    assert counts(factory) == before
    both = post_raw(client, "/api/v1/articles", json.dumps([near, record(2)], ensure_ascii=False))
    assert both.status_code == 200, both.get_data()[:300]  # a body over 2 MB, records within

    path = tmp_path / "big.jsonl"
    path.write_text(json.dumps(big, **compact) + "\n", encoding="utf-8")
    result = cli("ingest", str(path), "--json", "--no-reindex")
    assert result.exit_code == 1
    assert json.loads(result.stdout.splitlines()[0])["rejections"][0]["reason"] == message
