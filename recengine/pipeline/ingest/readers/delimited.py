"""CSV and TSV: a header row naming the columns, then one record per row (quoted fields may span
lines). Rows are read through ``readers.lines``, so a row is never held beyond the record limit:
a longer one is rejected, and reading goes on at the next physical line."""

from __future__ import annotations

import csv
import re
from collections.abc import Iterator, Sequence
from typing import Any, BinaryIO

from recengine.errors import InvalidRecord
from recengine.jsontext import printable
from recengine.pipeline.ingest.readers.lines import Line, lines
from recengine.pipeline.ingest.readers.raw import RawRecord
from recengine.pipeline.ingest.record_fields import ExtraFields, field_name, unknown_message
from recengine.pipeline.ingest.records import over_limit

CSDN_COLUMNS = ("id", "title", "tags", "published_at", "views", "author", "original", "content")
_CSDN_TAG_SPLIT = re.compile(r"\s{2,}")
_CSDN_LEFT_OUT = ("views", "original")
# an undecodable byte, as the surrogateescape error handler keeps it (see _RowLines.__next__)
_UNDECODED = re.compile("[\udc80-\udcff]")


class _OverLimit(Exception):  # what _RowLines raises out of the csv reader: not an error
    def __init__(self, size: int, at_least: bool) -> None:
        self.size, self.at_least = size, at_least


class _RowLines:
    """The lines the csv module reads, as text, counting the bytes of the row being read:
    raises :class:`_OverLimit` (out of ``next(reader)``) when it goes over the limit. The csv
    reader starts a new row on its next call; the lines of the row over the limit are skipped
    up to the one its quoted field closes on (an odd number of double quotes so far: RFC 4180
    doubles a quote inside a quoted field), so that its text is not read as rows."""

    def __init__(self, handle: BinaryIO, limit: int) -> None:
        self.limit = limit
        self.lines: Iterator[Line] = lines(handle, limit, keep_ends=True)
        self.last = 0  # number of the last line read
        self.row_bytes = self.row_quotes = 0
        self.skipping = False  # in the quoted field of a row over the limit

    def __iter__(self) -> _RowLines:
        return self

    def new_row(self) -> None:
        self.row_bytes = self.row_quotes = 0

    def skip_rest(self) -> None:
        """Skip the rest of a row over the limit (see the class docstring)."""
        while self.skipping:  # an odd number of quotes on a line closes the field
            line = next(self.lines, None)
            if line is None:
                return
            self.last = line.number
            self.skipping = line.quotes % 2 == 0

    def __next__(self) -> str:
        line = next(self.lines)
        self.last = line.number
        size = line.size if line.data is None else len(line.data)  # (with its line break)
        started = self.row_bytes
        self.row_bytes += size
        self.row_quotes += line.quotes
        if line.data is None or self.row_bytes > self.limit:
            self.skipping = self.row_quotes % 2 == 1  # the row goes on: skip_rest
            raise _OverLimit(started + size, at_least=started > 0 or self.skipping)
        # surrogateescape keeps undecodable bytes as lone surrogates, so one bad row is reported
        # (see _row_record) instead of the decoder aborting the whole file
        return line.data.decode("utf-8", "surrogateescape")


def read_delimited(
    handle: BinaryIO,
    delimiter: str,
    max_record_bytes: int,
    columns: Sequence[str] | None = None,
    extra_fields: ExtraFields = "refuse",
) -> Iterator[RawRecord]:
    """CSV (``,``) or TSV (``\\t``) rows (see ``pipeline.ingest.readers`` for the header rules).

    Raises:
        InvalidRecord: no header naming the columns, or one naming a column twice or
            (``extra_fields="refuse"``) a column that is no record field.
    """
    csv.field_size_limit(max(max_record_bytes, 131_072))  # a row is bounded by _RowLines
    source = _RowLines(handle, max_record_bytes)
    reader = csv.reader(source, delimiter=delimiter)
    header = _checked(list(columns), extra_fields) if columns else None
    csdn = False  # the headerless CSDN layout
    while True:
        start = source.last + 1
        try:
            row = next(reader)
        except StopIteration:
            return
        except _OverLimit as over:
            source.skip_rest()
            reason = over_limit(over.size, max_record_bytes, at_least=over.at_least)
            yield RawRecord(start, error=reason)
            continue
        except csv.Error as exc:
            yield RawRecord(start, error=f"unreadable row: {exc}")
            continue
        finally:
            source.new_row()
        if not row or all(not f.strip() for f in row):
            continue
        if header is None:
            header, csdn = _layout(row, extra_fields)
            if not csdn:
                continue
        yield _row_record(start, row, header, csdn)


def _layout(row: list[str], extra_fields: ExtraFields) -> tuple[list[str], bool]:
    """The columns, from the first row: a header's names, or the CSDN layout's (``True``: the
    row is a record of that layout, not a header)."""
    header = _header_of(row)
    if header is not None:
        return _checked(header, extra_fields), False
    if len(row) == len(CSDN_COLUMNS) and row[3].strip().isdigit():
        return list(CSDN_COLUMNS), True
    raise InvalidRecord(
        "the file has no header row naming its columns (id, title, content, ...) "
        "and is not the CSDN blog layout: add a header or give --columns"
    )


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


def _row_record(line: int, row: list[str], header: list[str], csdn: bool) -> RawRecord:
    if any(_UNDECODED.search(f) for f in row):
        return RawRecord(line, error="invalid UTF-8")
    if len(row) != len(header):
        return RawRecord(line, error=f"expected {len(header)} fields, found {len(row)}")
    # a column without a name is left out where it is empty (a trailing delimiter), else kept
    # under "" so that its cell is refused or reported as an unknown field, not dropped
    data: dict[str, Any] = {
        name: value for name, value in zip(header, row, strict=True) if name or value.strip()
    }
    if csdn:  # its tags are separated by runs of two spaces (a tag may hold one: "sql server")
        data["tags"] = [t for t in _CSDN_TAG_SPLIT.split(data["tags"]) if t]
        for name in _CSDN_LEFT_OUT:
            del data[name]
    return RawRecord(line, data=data)
