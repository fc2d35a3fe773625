"""JSON Lines: one JSON object per line, each line on its own (a broken line is one rejection,
and reading goes on at the next)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import BinaryIO

from recengine.pipeline.ingest.readers.lines import lines
from recengine.pipeline.ingest.readers.raw import RawRecord, json_record
from recengine.pipeline.ingest.records import over_limit

# What a line that is not JSON on its own most often is: a piece of a pretty-printed object, or
# of an array, in a file named .jsonl (a .json file may hold those: readers.json_values).
_HINT = " (JSON Lines: one object per line; a .json file may hold an array or indented objects)"


def read_jsonl(handle: BinaryIO, max_record_bytes: int) -> Iterator[RawRecord]:
    """One JSON object per line; blank lines are skipped. A line over ``max_record_bytes`` is
    rejected without being held (``readers.lines``)."""
    for line in lines(handle, max_record_bytes):
        if line.data is None:
            yield RawRecord(line.number, error=over_limit(line.size, max_record_bytes))
        elif line.data.strip():
            yield json_record(line.number, line.data, _HINT)
