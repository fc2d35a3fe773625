"""The physical lines of a file, none held beyond the record limit.

``for line in handle`` reads a whole line whatever its length: a 200 MB line cost 473 MB before
its rejection, and ``/dev/zero`` (no line break, ever) grew until the kernel killed the process.
Here a line is read with ``readline(limit + 2)`` (the limit, and a line break of up to two
bytes); a longer line is read on in chunks that are counted and dropped, so memory stays within
the limit plus one chunk whatever the input.
"""

from __future__ import annotations

import codecs
from collections.abc import Iterator
from dataclasses import dataclass
from typing import BinaryIO

CHUNK = 1 << 20  # bytes read at a time past the limit (and by the JSON scanner)


@dataclass(frozen=True)
class Line:
    """One physical line: ``data`` without its line break, or None when it is over the limit
    (then not held: only its ``size`` is known)."""

    number: int
    data: bytes | None
    size: int  # bytes, the line break excluded
    quotes: int  # double quotes in it (whether a CSV row goes on past it: readers.delimited)

    @property
    def over(self) -> bool:
        return self.data is None


def lines(handle: BinaryIO, limit: int, *, keep_ends: bool = False) -> Iterator[Line]:
    """The lines of ``handle`` (``\\n`` or ``\\r\\n`` ends them); a UTF-8 byte order mark at
    the start is dropped. ``keep_ends``: ``data`` keeps its line break (the CSV reader's)."""
    number = 0
    while True:
        data = handle.readline(limit + 2)
        if not data:
            return
        number += 1
        if number == 1:
            data = data.removeprefix(codecs.BOM_UTF8)
        body = _without_end(data)
        quotes = data.count(b'"')
        if len(body) <= limit:
            yield Line(number, data if keep_ends else body, len(body), quotes)
            continue
        size, before = len(data), data[-1:]
        while not data.endswith(b"\n"):  # the rest of the line: counted, not held
            before, data = data[-1:], handle.readline(CHUNK)
            if not data:
                break
            size += len(data)
            quotes += data.count(b'"')
        if data.endswith(b"\n"):  # its line break is no part of it
            size -= 2 if data.endswith(b"\r\n") or (data == b"\n" and before == b"\r") else 1
        yield Line(number, None, size, quotes)


def _without_end(data: bytes) -> bytes:
    if data.endswith(b"\r\n"):
        return data[:-2]
    return data[:-1] if data.endswith(b"\n") else data
