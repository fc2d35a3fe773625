"""Input files -> raw records with their line numbers: JSON Lines, CSV and TSV.

Every problem with one record (invalid JSON or UTF-8, JSON out of bounds such as deep nesting or
huge numbers, a record over the size limit, a row with the wrong number of fields) becomes a
:class:`RawRecord` carrying an ``error`` and its line number; reading goes on with the next
record. Only a problem with the whole file (missing,
unreadable, unknown format) raises.

CSV/TSV files name their columns in a header row (``id``, ``title``, ``content``, ``url``,
``tags``, ``category``, ``author``, ``published_at`` and common aliases such as ``_id``,
``body``, ``html``, ``timestamp``). A headerless file with the eight columns of the CSDN blog
export (``tests/data/csdn-blog-100``: id, title, tags, unix time, views, author, original
flag, HTML body) is recognised (its tags are separated by runs of two spaces, since a tag may
hold one: ``sql server``); any other headerless file needs ``columns``. A tag cell of any other
file lists tags separated by commas or semicolons (``Spring Boot;Spring Cloud``: see
``pipeline.records``).
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
from recengine.jsontext import json_type

Format = Literal["jsonl", "csv", "tsv"]

CSDN_COLUMNS = ("id", "title", "tags", "published_at", "views", "author", "original", "content")
_CSDN_TAG_SPLIT = re.compile(r"\s{2,}")
ALIASES = {
    "_id": "id",
    "article_id": "id",
    "body": "content",
    "html": "content",
    "text": "content",
    "timestamp": "published_at",
    "time": "published_at",
    "date": "published_at",
    "published": "published_at",
    "link": "url",
    "keywords": "tags",
}
KNOWN_FIELDS = {"id", "title", "content", "url", "tags", "category", "author", "published_at"}


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
) -> Iterator[RawRecord]:
    """Stream the records of ``path`` (see the module docstring)."""
    fmt = fmt or detect_format(path)
    with path.open("rb") as handle:
        if fmt == "jsonl":
            yield from read_jsonl(handle, max_record_bytes)
        else:
            yield from read_delimited(
                handle, "," if fmt == "csv" else "\t", max_record_bytes, columns
            )


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
) -> Iterator[RawRecord]:
    """CSV (``,``) or TSV (``\\t``) rows, quoted fields may span lines."""
    # surrogateescape keeps undecodable bytes as lone surrogates, so one bad row is reported
    # (below) instead of the decoder aborting the whole file.
    text = io.TextIOWrapper(handle, encoding="utf-8-sig", errors="surrogateescape", newline="")
    csv.field_size_limit(max(max_record_bytes, 131_072))
    reader = csv.reader(text, delimiter=delimiter)
    header: list[str] | None = list(columns) if columns else None
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
    data = {name: value for name, value in zip(header, row, strict=True) if name}
    return RawRecord(line, data=data)


def _header_of(row: list[str]) -> list[str] | None:
    """Canonical column names if ``row`` is a header naming an id and some text."""
    names = [ALIASES.get(c.strip().lower(), c.strip().lower()) for c in row]
    if "id" in names and ({"title", "content"} & set(names)):
        return names
    return None


def _headerless_layout(row: list[str]) -> list[str] | None:
    if len(row) == len(CSDN_COLUMNS) and row[3].strip().isdigit():
        return list(CSDN_COLUMNS)
    return None
