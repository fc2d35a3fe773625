from __future__ import annotations

from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo

import pytest

from recengine.errors import InvalidRecord
from recengine.pipeline.ingest.record_fields import ALIASES
from recengine.pipeline.ingest.records import parse_record

ZONE_SH = ZoneInfo("Asia/Shanghai")


def test_full_record() -> None:
    r = parse_record(
        {
            "id": "a-1",
            "title": " 标题 ",
            "content": "<p>正文</p>",
            "url": "https://example.com/a-1",
            "tags": ["python", "python", "数据库"],
            "category": "tech",
            "author": "张三",
            "published_at": "2024-05-01T08:00:00+08:00",
        }
    )
    assert r.title == "标题" and r.tags == ["python", "数据库"]
    assert r.published_at == datetime(2024, 5, 1, 0, 0, tzinfo=UTC)


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("2024-05-01", datetime(2024, 5, 1, tzinfo=UTC)),
        ("2024-05-01 08:00:00", datetime(2024, 5, 1, 8, tzinfo=UTC)),
        (1714521600, datetime(2024, 5, 1, tzinfo=UTC)),
        ("1714521600", datetime(2024, 5, 1, tzinfo=UTC)),
        ("2024-05-01T08:00:00Z", datetime(2024, 5, 1, 8, tzinfo=UTC)),
        (None, None),
        ("", None),
    ],
)
def test_dates(value: object, expected: datetime | None) -> None:
    assert parse_record({"id": "x", "title": "t", "published_at": value}).published_at == expected


def test_naive_time_read_in_configured_zone() -> None:
    r = parse_record(
        {"id": "x", "title": "t", "published_at": "2024-05-01 08:00"}, ZoneInfo("Asia/Shanghai")
    )
    assert r.published_at is not None
    assert r.published_at.utcoffset() == timedelta(hours=8)
    assert r.published_at.astimezone(UTC).hour == 0


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ({"title": "t"}, "id"),
        ({"id": "", "title": "t"}, "id"),
        ({"id": "x\ny", "title": "t"}, "id"),
        ({"id": True, "title": "t"}, "id"),
        ({"id": "x", "title": " ", "content": ""}, "title or content"),
        ({"id": "x"}, "title or content"),
        ({"id": "x", "title": "t", "published_at": "yesterday"}, "published_at"),
        ({"id": "x", "title": "t", "published_at": "2024-13-45"}, "published_at"),
        ({"id": "x", "title": "t", "published_at": 99999999999}, "published_at"),
        ({"id": "x", "title": "t", "tags": "a" * 300}, "tags"),
        ({"id": "x" * 300, "title": "t"}, "id"),
        ({"id": "x", "title": 5}, "title"),
        ({"id": "x", "title": "t", "content": "a\x00b"}, "content: must not contain NUL"),
        ({"id": "x", "title": "t\udc80"}, "title: .*unicode"),
        ({"id": "x", "title": "t", "tags": ["ok", "b\x00"]}, "tags"),
    ],
)
def test_rejections_name_the_field(data: dict[str, object], message: str) -> None:
    with pytest.raises(InvalidRecord, match=message):
        parse_record(data)


def test_numeric_id_and_string_tags() -> None:
    r = parse_record({"id": 42, "title": "t", "tags": "python, 数据库；redis，go;"})
    assert r.id == "42" and r.tags == ["python", "数据库", "redis", "go"]


@pytest.mark.parametrize(
    ("cell", "tags"),
    [
        ("Spring Boot;Spring Cloud", ["Spring Boot", "Spring Cloud"]),
        ("Spring Boot, Spring Cloud ,", ["Spring Boot", "Spring Cloud"]),
        ("机器 学习；深度 学习，sql server", ["机器 学习", "深度 学习", "sql server"]),
        ("  ", []),
    ],
)
def test_a_tag_cell_splits_on_commas_and_semicolons_only(cell: str, tags: list[str]) -> None:
    assert parse_record({"id": "x", "title": "t", "tags": cell}).tags == tags


def test_record_hash_is_canonical() -> None:
    a = parse_record({"id": "x", "title": "t", "tags": ["a", "b"]})
    b = parse_record({"tags": ["a", "b"], "title": " t ", "id": "x"})
    c = parse_record({"id": "x", "title": "t", "tags": ["b", "a"]})
    assert a.record_hash() == b.record_hash() != c.record_hash()


@pytest.mark.parametrize(("alias", "field"), sorted(ALIASES.items()))
def test_every_other_name_of_a_field_sets_it(alias: str, field: str) -> None:
    values = {"id": "x9", "tags": ["t"], "published_at": "2024-05-01T00:00:00Z"}
    value = values.get(field, "值")
    base = {"title": "t"} if field == "id" else {"id": "x", "title": "t"}
    record = parse_record({**base, alias: value})
    expected = datetime(2024, 5, 1, tzinfo=UTC) if field == "published_at" else value
    assert getattr(record, field) == expected


def test_an_unknown_field_is_refused_by_name() -> None:
    with pytest.raises(InvalidRecord, match=r"unknown field 'section'.*extra_fields"):
        parse_record({"id": "x", "title": "t", "section": "README.md"})
    with pytest.raises(InvalidRecord, match="unknown fields 'contnet', 'views' \\("):
        parse_record({"id": "x", "title": "t", "contnet": "正文", "views": 3})


def test_a_field_under_two_names_must_agree() -> None:
    with pytest.raises(InvalidRecord, match="give content or body, not both"):
        parse_record({"id": "x", "body": "一", "content": "二"})
    assert parse_record({"id": "x", "body": "一", "content": "一"}).content == "一"
    assert parse_record({"id": "x", "content": " ", "text": "三"}).content == "三"  # blank
    assert parse_record({"_id": "y", "id": None, "title": "t"}).id == "y"  # null gives way
    merged = parse_record({"id": "x", "title": "t", "tags": ["a"], "keywords": "b；a"})
    assert merged.tags == ["a", "b"]


def test_report_mode_leaves_unknown_fields_out_and_lists_them() -> None:
    data = {"id": "x", "title": "t", "body": "正文", "section": "s", "views": 3}
    record = parse_record(data, ZONE_SH, extra_fields="report")
    assert record.content == "正文" and record.ignored_fields == ("section", "views")
    plain = parse_record({"id": "x", "title": "t", "content": "正文"})
    assert record.record_hash() == plain.record_hash() and plain.ignored_fields == ()
    dated = parse_record({**data, "date": "2024-05-01 08:00"}, ZONE_SH, extra_fields="report")
    assert dated.ignored_fields == ("section", "views")  # kept through with_timezone


def test_image_and_summary_are_optional_fields_stored_as_given() -> None:
    record = parse_record(
        {"id": "a", "title": "t", "thumbnail": "/up/a.png", "excerpt": " An excerpt. "}
    )
    assert (record.image, record.summary) == ("/up/a.png", "An excerpt.")
    blank = parse_record({"id": "a", "title": "t", "image": "", "summary": "  "})
    assert blank.image is None and blank.summary is None
    with pytest.raises(InvalidRecord, match="summary"):
        parse_record({"id": "a", "title": "t", "summary": "x" * 2_001})
    with pytest.raises(InvalidRecord, match="image"):
        parse_record({"id": "a", "title": "t", "image": ["/a.png"]})


def test_a_record_without_image_or_summary_hashes_as_before_they_existed() -> None:
    """Re-ingesting an unchanged export after the upgrade finds every record "unchanged"
    (the hash is the one the previous release stored)."""
    data = {
        "id": "a1",
        "title": "标题",
        "content": "<p>正文</p>",
        "url": "/a1",
        "tags": ["x"],
        "category": "c",
        "published_at": "2024-05-01T08:00:00+08:00",
    }
    before = "d904256e4803364cb4d5e3564651f7ded1a431685c1d519e8a3c7e1353c3be47"
    assert parse_record(data).record_hash() == before
    assert parse_record({**data, "image": "/a.png"}).record_hash() != before
