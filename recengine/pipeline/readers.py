"""Input files -> raw records with their line numbers: JSON Lines, CSV and TSV.

Every problem with one record (invalid JSON or UTF-8, JSON out of bounds such as deep nesting or
huge numbers, a record over the size limit, a row with the wrong number of fields) becomes a
:class:`RawRecord` carrying an ``error`` and its line number; reading goes on with the next
record. Only a problem with the whole file (missing,
unreadable, unknown format) raises.

CSV/TSV files name their columns in a header row, case-insensitively, by the record's field
names and their other names (``pipeline.record_fields``: ``_id``, ``body``, ``html``,
``timestamp``, ...). Under ``ingest.extra_fields = "refuse"`` (the default) a header naming any
other column refuses the whole file before a row is read; under ``"report"`` such columns are
read and each record lists them as left out. A headerless file with the eight columns of the
CSDN blog export (``tests/data/csdn-blog-100``: id, title, tags, unix time, views, author,
original flag, HTML body) is recognised: its views and original flag are not article fields and
are left out, and its tags are separated by runs of two spaces, since a tag may hold one
(``sql server``). Any other headerless file needs ``columns``. A tag cell of any other file
lists tags separated by commas or semicolons (``Spring Boot;Spring Cloud``: see
``pipeline.record_fields``).
"""

from __future__ import annotations

import codecs
import csv
import io
import json
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO, Literal

from recengine import jsontext
from recengine.errors import InvalidRecord
from recengine.jsontext import json_type, printable
from recengine.pipeline.record_fields import ExtraFields, field_name, unknown_message

Format = Literal["jsonl", "csv", "tsv"]

CSDN_COLUMNS = ("id", "title", "tags", "published_at", "views", "author", "original", "content")
_CSDN_TAG_SPLIT = re.compile(r"\s{2,}")
_CSDN_LEFT_OUT = ("views", "original")


@dataclass(frozen=True)
class RawRecord:
    """One record as read: ``data`` to validate, or ``error`` saying why it cannot be read."""

    line: int
    data: dict[str, Any] | None = None
    error: str | None = None


def detect_format(path: Path) -> Format:
    suffix = path.suffix.lower()
    if suffix in {".jsonl", ".ndjson", ".json"}:
        return "jsonl"
    if suffix == ".csv":
        return "csv"
    if suffix in {".tsv", ".tab"}:
        return "tsv"
    raise InvalidRecord(
        f"cannot tell the format of {path.name!r} from its extension: "
        "use .jsonl, .csv or .tsv, or give --format"
    )


def read_file(
    path: Path,
    fmt: Format | None,
    max_record_bytes: int,
    columns: Sequence[str] | None = None,
    extra_fields: ExtraFields = "refuse",
) -> Iterator[RawRecord]:
    """Stream the records of ``path`` (see the module docstring)."""
    fmt = fmt or detect_format(path)
    with path.open("rb") as handle:
        if fmt == "jsonl":
            yield from read_jsonl(handle, max_record_bytes)
        else:
            delimiter = "," if fmt == "csv" else "\t"
            yield from read_delimited(handle, delimiter, max_record_bytes, columns, extra_fields)


def read_jsonl(handle: BinaryIO, max_record_bytes: int) -> Iterator[RawRecord]:
    """One JSON object per line; blank lines are skipped."""
    for number, raw in enumerate(handle, 1):
        if number == 1:
            raw = raw.removeprefix(codecs.BOM_UTF8)
        if len(raw) > max_record_bytes:
            yield RawRecord(
                number, error=f"record is {len(raw)} bytes, over the limit of {max_record_bytes}"
            )
            continue
        if not raw.strip():
            continue
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            yield RawRecord(number, error=f"invalid UTF-8 at byte {exc.start}")
            continue
        try:
            data = jsontext.loads(text)
        except json.JSONDecodeError as exc:
            yield RawRecord(number, error=f"invalid JSON: {exc.msg} at column {exc.colno}")
            continue
        except ValueError as exc:  # out of bounds (recengine.jsontext): nesting, digits, ...
            yield RawRecord(number, error=f"invalid JSON: {exc}")
            continue
        if not isinstance(data, dict):
            yield RawRecord(number, error=f"expected a JSON object, got {json_type(data)}")
            continue
        yield RawRecord(number, data=data)


def read_delimited(
    handle: BinaryIO,
    delimiter: str,
    max_record_bytes: int,
    columns: Sequence[str] | None = None,
    extra_fields: ExtraFields = "refuse",
) -> Iterator[RawRecord]:
    """CSV (``,``) or TSV (``\\t``) rows, quoted fields may span lines.

    Raises:
        InvalidRecord: no header naming the columns (see the module docstring), or one naming a
            column twice or (``extra_fields="refuse"``) a column that is no record field.
    """
    # surrogateescape keeps undecodable bytes as lone surrogates, so one bad row is reported
    # (below) instead of the decoder aborting the whole file.
    text = io.TextIOWrapper(handle, encoding="utf-8-sig", errors="surrogateescape", newline="")
    csv.field_size_limit(max(max_record_bytes, 131_072))
    reader = csv.reader(text, delimiter=delimiter)
    header = _checked(list(columns), extra_fields) if columns else None
    csdn = False  # the headerless CSDN layout, whose tags are separated by two spaces
    start = 1
    while True:
        try:
            row = next(reader)
        except StopIteration:
            return
        except csv.Error as exc:
            yield RawRecord(start, error=f"unreadable row: {exc}")
            start = reader.line_num + 1
            continue
        line, start = start, reader.line_num + 1
        if not row or all(not f.strip() for f in row):
            continue
        if header is None:
            header = _header_of(row)
            if header is not None:
                _checked(header, extra_fields)
                continue
            header = _headerless_layout(row)
            csdn = header is not None
            if header is None:
                raise InvalidRecord(
                    "the file has no header row naming its columns (id, title, content, ...) "
                    "and is not the CSDN blog layout: add a header or give --columns"
                )
        record = _row_record(line, row, header, max_record_bytes)
        if csdn and record.data is not None:
            record.data["tags"] = [t for t in _CSDN_TAG_SPLIT.split(record.data["tags"]) if t]
            for name in _CSDN_LEFT_OUT:
                del record.data[name]
        yield record


def _row_record(line: int, row: list[str], header: list[str], limit: int) -> RawRecord:
    try:
        size = sum(len(f.encode("utf-8")) for f in row)
    except UnicodeEncodeError:  # a lone surrogate: an undecodable byte (see read_delimited)
        return RawRecord(line, error="invalid UTF-8")
    if size > limit:
        return RawRecord(line, error=f"record is {size} bytes, over the limit of {limit}")
    if len(row) != len(header):
        return RawRecord(line, error=f"expected {len(header)} fields, found {len(row)}")
    # a column without a name is left out where it is empty (a trailing delimiter), else kept
    # under "" so that its cell is refused or reported as an unknown field, not dropped
    data = {name: value for name, value in zip(header, row, strict=True) if name or value.strip()}
    return RawRecord(line, data=data)


def _header_of(row: list[str]) -> list[str] | None:
    """The column names (lower-case) if ``row`` is a header naming an id and some text."""
    names = [c.strip().lower() for c in row]
    fields = {field_name(n) for n in names}
    if "id" in fields and ({"title", "content"} & fields):
        return names
    return None


def _checked(names: list[str], extra_fields: ExtraFields) -> list[str]:
    """``names`` as the columns of every row; see :func:`read_delimited` for what raises."""
    twice = sorted({n for n in names if n and names.count(n) > 1})
    if twice:
        raise InvalidRecord(f"the file's columns name '{printable(twice[0], 40)}' twice")
    unknown = [n for n in names if n and field_name(n) is None]
    if unknown and extra_fields == "refuse":
        raise InvalidRecord(f"the file's columns: {unknown_message(unknown)}")
    return names


def _headerless_layout(row: list[str]) -> list[str] | None:
    if len(row) == len(CSDN_COLUMNS) and row[3].strip().isdigit():
        return list(CSDN_COLUMNS)
    return None
