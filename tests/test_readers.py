from __future__ import annotations

import io
from pathlib import Path

import pytest

from recengine.errors import InvalidRecord
from recengine.pipeline.readers import read_delimited, read_file, read_jsonl


def jsonl(*lines: bytes) -> io.BytesIO:
    return io.BytesIO(b"\n".join(lines) + b"\n")


def test_jsonl_errors_carry_line_numbers_and_reading_goes_on() -> None:
    records = list(
        read_jsonl(
            jsonl(
                b'\xef\xbb\xbf{"id": "1", "title": "a"}',
                b"",
                b'{"id": "2", "title": ',
                b'{"id": "3", "title": "\xff\xfe"}',
                b"[1, 2]",
                b'{"id": "big", "content": "' + b"x" * 2000 + b'"}',
                b'{"id": "6", "title": "f"}',
            ),
            max_record_bytes=1000,
        )
    )
    assert [(r.line, r.error is None) for r in records] == [
        (1, True),
        (3, False),
        (4, False),
        (5, False),
        (6, False),
        (7, True),
    ]
    errors = {r.line: r.error for r in records if r.error}
    assert "invalid JSON" in errors[3]
    assert "invalid UTF-8" in errors[4]
    assert "JSON object" in errors[5]
    assert "over the limit" in errors[6]


def test_csv_with_header_aliases_and_multiline_fields() -> None:
    data = 'id,title,body,tags\n1,"标题, 一","第一行\n第二行","a b"\n2,t2,c2,\n'.encode()
    records = list(read_delimited(io.BytesIO(data), ",", 10_000))
    assert [r.line for r in records] == [2, 4]
    assert records[0].data == {  # (the record maps body to content: pipeline.record_fields)
        "id": "1",
        "title": "标题, 一",
        "body": "第一行\n第二行",
        "tags": "a b",
    }


def test_a_header_naming_an_unknown_column_refuses_the_file_or_is_reported() -> None:
    data = b"ID,Title,Link,views,\n1,t,https://x.test/1,30,\n2,u,,,extra\n"
    with pytest.raises(InvalidRecord, match="unknown field 'views'"):
        list(read_delimited(io.BytesIO(data), ",", 10_000))
    records = list(read_delimited(io.BytesIO(data), ",", 10_000, extra_fields="report"))
    assert [r.data for r in records] == [
        {"id": "1", "title": "t", "link": "https://x.test/1", "views": "30"},
        {"id": "2", "title": "u", "link": "", "views": "", "": "extra"},  # an unnamed cell
    ]
    with pytest.raises(InvalidRecord, match="'title' twice"):
        list(read_delimited(io.BytesIO(b"id,title,Title\n1,a,b\n"), ",", 10_000))
    with pytest.raises(InvalidRecord, match="unknown field 'x'"):
        list(read_delimited(io.BytesIO(b"1,a,b\n"), ",", 10_000, columns=["id", "title", "x"]))


def test_csv_row_errors() -> None:
    data = b"id,title\n1,a\n2,b,extra\n3,\xff\n4,d\n"
    records = list(read_delimited(io.BytesIO(data), ",", 10_000))
    assert [(r.line, r.error) for r in records] == [
        (2, None),
        (3, "expected 2 fields, found 3"),
        (4, "invalid UTF-8"),
        (5, None),
    ]


def test_headerless_csdn_tsv_is_recognised(data_dir: Path) -> None:
    path = data_dir / "csdn-blog-100" / "csdn_blog_100.tsv"
    records = list(read_file(path, None, 2_000_000))
    assert len(records) == 100 and all(r.error is None for r in records)
    first = records[0].data
    assert first is not None and first["id"] == "321"
    assert first["published_at"] == "1081489020" and "<div" in first["content"]
    assert "views" not in first and "original" not in first  # not article fields: left out


def test_unknown_headerless_layout_and_extension(tmp_path: Path) -> None:
    path = tmp_path / "x.csv"
    path.write_text("1,2,3\n")
    with pytest.raises(InvalidRecord, match="header"):
        list(read_file(path, None, 1000))
    with pytest.raises(InvalidRecord, match="extension"):
        list(read_file(tmp_path / "x.xml", None, 1000))
    records = list(read_file(path, None, 1000, columns=["id", "title", "content"]))
    assert records[0].data == {"id": "1", "title": "2", "content": "3"}
