from __future__ import annotations

import io
import json
import os
import subprocess
import sys
import tracemalloc
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from recengine.errors import InvalidRecord
from recengine.pipeline.ingest.readers import (
    Format,
    detect_format,
    read_delimited,
    read_file,
    read_json,
    read_jsonl,
    read_stream,
)
from tests.factories import record
from tests.ingest.reader_probe import opened


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
    assert records[0].data == {  # (the record maps body to content: pipeline.ingest.record_fields)
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


# -- bounded reads: no record is held beyond the limit ------------------------------------------

LIMIT = 100_000
BIG = 32 << 20  # bytes of the record over the limit
OVER = [  # (format, columns, before the big record, its piece, after it, (line, outcome) read)
    (
        "jsonl",
        None,
        b'{"id": "a", "title": "t"}\n{"id": "b", "title": "',
        b"x",
        b'"}\n{"id": "c", "title": "t"}\n',
        [(1, "a"), (2, "over"), (3, "c")],
    ),
    (
        "json",
        None,
        b'[{"id": "a", "title": "t"},\n {"id": "b", "title": "',
        b'\\"',
        b'"},\n {"id": "c", "title": "t"}]\n',
        [(1, "a"), (2, "over"), (3, "c")],
    ),
    ("csv", None, b"id,title\na,t\nb,", b"x", b"\nc,t\n", [(2, "a"), (3, "over"), (4, "c")]),
    (  # a quoted field over many lines: the rest of its lines are skipped, not read as rows
        "tsv",
        ["id", "title"],
        b'a\tt\nb\t"',
        b"y" * 999 + b"\n",
        b'end"\nc\tt\n',
        [(1, "a"), (2, "over"), (3 + BIG // 1000, "c")],
    ),
]


@pytest.mark.parametrize(("fmt", "columns", "before", "piece", "after", "expected"), OVER)
def test_each_reader_rejects_a_record_over_the_limit_without_holding_it(
    fmt: Format,
    columns: list[str] | None,
    before: bytes,
    piece: bytes,
    after: bytes,
    expected: list[tuple[int, str]],
) -> None:
    parts = [(before, 1), (piece, BIG // len(piece)), (after, 1)]
    tracemalloc.start()
    try:
        records = list(read_stream(opened(parts), fmt, LIMIT, columns))
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 8 << 20  # the limit, a few read chunks: not the 32 MB record
    outcome = [(r.line, r.data["id"] if r.data else "over") for r in records]
    assert outcome == expected
    reason = next(r.error for r in records if r.error)
    assert reason is not None and reason.endswith(
        f"bytes, over the limit of {LIMIT} (ingest.max_record_bytes)"
    )


def test_a_line_at_the_limit_is_read_one_byte_more_is_not() -> None:
    record = b'{"id": "a", "title": "' + b"x" * 100 + b'"}'
    size = len(record)
    for ending in (b"\n", b"\r\n", b""):
        assert next(read_jsonl(io.BytesIO(record + ending), size)).data is not None
        error = next(read_jsonl(io.BytesIO(record + ending), size - 1)).error
        assert error == f"record is {size} bytes, over the limit of {size - 1} " + (
            "(ingest.max_record_bytes)"
        )


# -- JSON files: an array streamed, indented objects ----------------------------------------------


def test_a_json_array_is_read_element_by_element_with_its_lines() -> None:
    text = json.dumps([record(1), record(2), 5, record(3)], ensure_ascii=False, indent=2)
    starts = [n for n, line in enumerate(text.splitlines(), 1) if line in ("  {", "  5,")]
    records = list(read_json(io.BytesIO(text.encode()), 10_000))
    assert [(r.line, r.data and r.data["id"]) for r in records] == list(
        zip(starts, ["a1", "a2", None, "a3"], strict=True)
    )
    assert records[2].error == "expected a JSON object, got number"


def test_indented_objects_one_after_another_and_json_lines_read_as_json() -> None:
    one = json.dumps(record(1), ensure_ascii=False, indent=4)
    data = f"\ufeff{one}\n{json.dumps(record(2))}\n{json.dumps(record(3))}\n".encode()
    records = list(read_json(io.BytesIO(data), 10_000))
    after = len(one.splitlines())
    assert [(r.line, r.data and r.data["id"]) for r in records] == [
        (1, "a1"),
        (after + 1, "a2"),
        (after + 2, "a3"),
    ]


def test_broken_json_is_rejected_where_it_starts_and_the_rest_read() -> None:
    data = b'[{"id": "a", "title": "t"},\n {"id": "b", "title": },\n {"id": "c", "title": "t"}\n'
    records = list(read_json(io.BytesIO(data + b'{"id": "d", "title": "t"}\n'), 10_000))
    assert [(r.line, r.data and r.data["id"], r.error) for r in records] == [
        (1, "a", None),
        (2, None, "invalid JSON: Expecting value at column 22"),
        (3, "c", None),
        (4, None, "expected ',' or ']' after an element of the array"),
        (4, "d", None),
        (5, None, "the array is not closed: ']' missing at the end"),
    ]
    garbage = list(read_json(io.BytesIO(b'id,title\n{"id": "e", "title": "t"}\n{"id": '), 10_000))
    assert [(r.line, r.error) for r in garbage] == [
        (1, "expected a JSON object or an array of objects"),
        (2, None),
        (3, "unterminated JSON value: the file ends inside it"),
    ]


def test_json_lines_names_the_format_when_a_line_is_not_json_on_its_own() -> None:
    data = json.dumps(record(1), indent=2).encode()
    errors = [r.error for r in read_jsonl(io.BytesIO(data), 10_000)]
    assert len(errors) == len(data.splitlines()) and all(errors)
    assert errors[0] == (
        "invalid JSON: Expecting property name enclosed in double quotes at column 2 (JSON "
        "Lines: one object per line; a .json file may hold an array or indented objects)"
    )
    assert detect_format(Path("posts.json")) == "json"
    assert detect_format(Path("posts.JSONL")) == "jsonl"


# -- arbitrary bytes into every reader, in a process that cannot map the big record -------------

HEADROOM = 48 << 20  # what the probe may map beyond its imports
HUGE = 64 << 20  # bytes of the big part of an input, when it has one
CONFIGS = [("jsonl", None), ("json", None), ("csv", None), ("tsv", ["id", "title", "content"])]
SNIPPETS = [
    b'{"id": "1", "title": "t"}',
    b'{"id": 2, "body": "b", "keywords": "a;b", "x": 1}',
    *(bytes([c]) for c in b'[]{},":\\\n\t "'),
    b"\r\n",
    b"id,title,content\n",
    b"id\ttitle\tcontent\n",
    b"\xef\xbb\xbf",
    b"\x00",
    b"\xff",
    b'"a""b"',
]
PIECES = st.binary(min_size=1, max_size=30) | st.sampled_from(SNIPPETS)
SMALL = st.lists(st.tuples(PIECES, st.integers(1, 3)), max_size=8)
# repeated to HUGE bytes: patterns a reader passes at memory speed (a line, a value, a string)
BIG_PIECES = st.sampled_from([b"0", b"x", b" ", b"\x00", b"\xff", b"{", b"[", b"ab,", b"\t"])
INPUTS = st.tuples(SMALL, st.none() | BIG_PIECES, SMALL, st.sampled_from(CONFIGS))


@pytest.fixture(scope="module")
def probe() -> Iterator[subprocess.Popen[str]]:
    root = Path(__file__).resolve().parents[2]
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(root), os.environ.get("PYTHONPATH", "")]),
    }
    proc = subprocess.Popen(
        [sys.executable, "-m", "tests.ingest.reader_probe", str(HEADROOM)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        cwd=root,
        env=env,
    )
    assert proc.stdout is not None and "ready" in json.loads(proc.stdout.readline())
    yield proc
    proc.kill()
    proc.wait()


@settings(max_examples=60, deadline=None, database=None, derandomize=True)
@given(case=INPUTS)
def test_any_bytes_into_any_reader_end_cleanly_in_bounded_memory(
    probe: subprocess.Popen[str], case: Any
) -> None:
    """A clean outcome (records, rejections with a reason, or a whole-file refusal) in a process
    whose address space could not hold the big part (``tests/ingest/reader_probe.py``)."""
    before, big, after, (fmt, columns) = case
    parts = [*before, *([(big, HUGE // len(big))] if big else []), *after]
    request = {
        "format": fmt,
        "limit": LIMIT,
        "columns": columns,
        "parts": [(piece.hex(), times) for piece, times in parts],
    }
    assert probe.stdin is not None and probe.stdout is not None
    probe.stdin.write(json.dumps(request) + "\n")
    probe.stdin.flush()
    answer = probe.stdout.readline()
    assert answer, f"the probe died (exit {probe.wait()})"
    assert json.loads(answer)["problem"] is None, json.loads(answer)["problem"]
