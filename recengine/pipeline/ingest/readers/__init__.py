"""Input files -> raw records with their line numbers: JSON Lines, JSON, CSV and TSV.

Every problem with one record (invalid JSON or UTF-8, JSON out of bounds such as deep nesting or
huge numbers, a record over the size limit, a row with the wrong number of fields) becomes a
:class:`RawRecord` carrying an ``error`` and its line number; reading goes on with the next
record. Only a problem with the whole file (missing, unreadable, unknown format, a CSV without
a usable header) raises.

Reading is bounded: no record is held beyond ``ingest.max_record_bytes``. A longer line, row or
array element is read on without being held, and rejected as over the limit; memory stays
within the limit plus a read chunk whatever the input (a 200 MB line, ``/dev/zero``).

- ``jsonl``: JSON Lines, one object per line (``.jsonl``, ``.ndjson``).
- ``json_values``: a JSON file (``.json``): an array of records, streamed element by element,
  or records one after another (indented over many lines, or one per line).
- ``delimited``: CSV/TSV. Columns are named in a header row, case-insensitively, by the record's
  field names and their other names (``pipeline.ingest.record_fields``: ``_id``, ``body``, ``html``,
  ``timestamp``, ...). Under ``ingest.extra_fields = "refuse"`` (the default) a header naming
  any other column refuses the whole file before a row is read; under ``"report"`` such
  columns are read and each record lists them as left out. A headerless file with the eight
  columns of the CSDN blog export (``tests/data/csdn-blog-100``: id, title, tags, unix time,
  views, author, original flag, HTML body) is recognised: its views and original flag are not
  article fields and are left out, and its tags are separated by runs of two spaces, since a
  tag may hold one (``sql server``). Any other headerless file needs ``columns``. A tag cell of
  any other file lists tags separated by commas or semicolons (``Spring Boot;Spring Cloud``).
- ``lines``: physical lines, none held beyond the limit (what JSON Lines and CSV read).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import BinaryIO

from recengine.errors import InvalidRecord
from recengine.pipeline.ingest.readers.delimited import read_delimited
from recengine.pipeline.ingest.readers.json_values import read_json
from recengine.pipeline.ingest.readers.jsonl import read_jsonl
from recengine.pipeline.ingest.readers.raw import Format, RawRecord
from recengine.pipeline.ingest.record_fields import ExtraFields

__all__ = [
    "Format",
    "RawRecord",
    "detect_format",
    "read_delimited",
    "read_file",
    "read_json",
    "read_jsonl",
    "read_stream",
]

_SUFFIXES: dict[str, Format] = {
    ".jsonl": "jsonl",
    ".ndjson": "jsonl",
    ".json": "json",
    ".csv": "csv",
    ".tsv": "tsv",
    ".tab": "tsv",
}


def detect_format(path: Path) -> Format:
    """The format a file's extension names.

    Raises:
        InvalidRecord: an extension of no format.
    """
    fmt = _SUFFIXES.get(path.suffix.lower())
    if fmt is None:
        raise InvalidRecord(
            f"cannot tell the format of {path.name!r} from its extension: "
            "use .jsonl, .json, .csv or .tsv, or give --format"
        )
    return fmt


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
        yield from read_stream(handle, fmt, max_record_bytes, columns, extra_fields)


def read_stream(
    handle: BinaryIO,
    fmt: Format,
    max_record_bytes: int,
    columns: Sequence[str] | None = None,
    extra_fields: ExtraFields = "refuse",
) -> Iterator[RawRecord]:
    """Stream the records of an open binary file (standard input, a pipe) in format ``fmt``."""
    if fmt == "jsonl":
        yield from read_jsonl(handle, max_record_bytes)
    elif fmt == "json":
        yield from read_json(handle, max_record_bytes)
    else:
        delimiter = "," if fmt == "csv" else "\t"
        yield from read_delimited(handle, delimiter, max_record_bytes, columns, extra_fields)
