"""JSON files: an array of records, or records one after another (indented over many lines, or
one per line as in JSON Lines), read as a stream.

The file is never loaded whole: a scanner finds where each value ends (strings, escapes and
brackets followed across read chunks) and holds one record's bytes at a time, up to the record
limit; a longer record is scanned to its end, counted and dropped. Each record is parsed on its
own, so one broken record is one rejection (with the line it starts on) and the others go in.
What the scanner cannot recover from is a value that never ends: everything from its start to
the end of the file is then one rejection (JSON Lines, ``.jsonl``, recovers at the next line).
At the top level, text that cannot start a record (not ``{`` or ``[``) is rejected up to the
end of its line.
"""

from __future__ import annotations

import codecs
import re
from collections.abc import Iterator
from typing import BinaryIO

from recengine.pipeline.ingest.readers.lines import CHUNK
from recengine.pipeline.ingest.readers.raw import RawRecord, json_record
from recengine.pipeline.ingest.records import over_limit

_WS = b" \t\r\n"
_SPACE = re.compile(rb"[^ \t\r\n]")  # where the whitespace ends
_BRACKET = re.compile(rb"[{}\[\]]")
_WINDOW = 4096
# the body of a JSON string: runs of plain bytes and escapes (possessive: no backtracking
# stack however long it is); it stops at the closing quote, or a backslash last in the buffer
_STRING_BODY = re.compile(rb'(?:[^"\\]++|\\.)*+', re.DOTALL)
_SCALAR_END = re.compile(rb'[ \t\r\n,\]}{\["]')


class _Scanner:
    """A window on the file: ``buf[pos:]`` is what is read and not consumed yet."""

    def __init__(self, handle: BinaryIO, limit: int) -> None:
        self.handle, self.limit = handle, limit
        self.buf, self.pos, self.line = b"", 0, 1
        self.started = False
        self.held: bytearray | None = None  # the bytes of the value being read (None: over)
        self.size = 0

    def more(self) -> bool:
        """Read on; False at the end of the file."""
        chunk = self.handle.read(CHUNK)
        if not chunk:
            return False
        if not self.started:  # a UTF-8 byte order mark at the start of the file
            chunk, self.started = chunk.removeprefix(codecs.BOM_UTF8), True
        self.buf, self.pos = self.buf[self.pos :] + chunk, 0
        return True

    def peek(self) -> int | None:
        """The next byte that is not whitespace (not consumed), None at the end of the file."""
        while True:
            found = _SPACE.search(self.buf, self.pos)
            if found is not None:
                self._skip(found.start())
                return self.buf[self.pos]
            self._skip(len(self.buf))
            if not self.more():
                return None

    def take(self, end: int) -> None:
        """Consume ``buf[pos:end]`` into the value being read (held while within the limit)."""
        self.size += end - self.pos
        if self.held is not None:
            if self.size > self.limit:
                self.held = None
            else:
                self.held += self.buf[self.pos : end]
        self._skip(end)

    def _skip(self, end: int) -> None:
        self.line += self.buf.count(b"\n", self.pos, end)
        self.pos = end

    def skip_line(self) -> None:
        """Consume up to the end of the line, or of the file."""
        while (end := self.buf.find(b"\n", self.pos)) < 0:
            self.take(len(self.buf))
            if not self.more():
                return
        self.take(end)

    def value(self) -> bool:
        """Consume one value starting at ``pos`` into ``held``; False if the file ends first."""
        self.held, self.size = bytearray(), 0
        first = self.buf[self.pos]
        if first in b"{[":
            return self._nested()
        if first == ord('"'):
            self.take(self.pos + 1)
            return self._string()
        while (found := _SCALAR_END.search(self.buf, self.pos)) is None:
            self.take(len(self.buf))
            if not self.more():
                return True  # a number, true, false, null: the end of the file ends it
        self.take(max(found.start(), self.pos + 1))  # (a stray "}" is a value of one byte)
        return True

    def _nested(self) -> bool:
        """Consume an object or array (its opening bracket at ``pos``) to its closing one.

        Step by step over windows of ``_WINDOW`` bytes, each up to its first quote: a window
        whose closing brackets are too few to end the value is taken at once ("[[[[...", deep
        or long), else bracket by bracket; what one step searches and counts stays small.
        """
        depth = 0
        while True:
            end = min(len(self.buf), self.pos + _WINDOW)
            quote = self.buf.find(b'"', self.pos, end)
            stop = quote if quote >= 0 else end
            closers = _count(self.buf, b"}]", self.pos, stop)
            if depth > closers:
                depth += _count(self.buf, b"{[", self.pos, stop) - closers
                self.take(stop)
            elif (found := _BRACKET.search(self.buf, self.pos, stop)) is not None:
                self.take(found.end())
                depth += 1 if found.group() in (b"{", b"[") else -1
                if depth == 0:
                    return True
                continue
            else:
                self.take(stop)
            if quote >= 0:
                self.take(quote + 1)
                if not self._string():
                    return False
            elif self.pos == len(self.buf) and not self.more():
                return False

    def _string(self) -> bool:
        """Consume the rest of a string (its opening quote consumed): up to the next quote
        (``bytes.find``, memchr speed) when no backslash comes before it, else as far as the
        regular expression of a string's body goes (in C, escapes included, ~60-170 MB/s)."""
        while True:
            quote = self.buf.find(b'"', self.pos)
            end = quote if quote >= 0 else len(self.buf)
            if self.buf.find(b"\\", self.pos, end) >= 0:
                end = _STRING_BODY.match(self.buf, self.pos).end()  # type: ignore[union-attr]
                quote = end if end < len(self.buf) and self.buf[end] == ord('"') else -1
            if quote >= 0:
                self.take(quote + 1)
                return True
            self.take(end)  # (a backslash last in buf stays, to be read with what it escapes)
            if not self.more():
                return False


def _count(buf: bytes, marks: bytes, start: int, end: int) -> int:
    return sum(buf.count(mark, start, end) for mark in (marks[:1], marks[1:]))


def read_json(handle: BinaryIO, max_record_bytes: int) -> Iterator[RawRecord]:
    """The records of a JSON file (see the module docstring)."""
    scan = _Scanner(handle, max_record_bytes)
    while (first := scan.peek()) is not None:
        if first == ord("["):
            scan.take(scan.pos + 1)
            yield from _array(scan)
        elif first == ord("{"):
            yield _record(scan)
        else:
            line = scan.line
            scan.held, scan.size = None, 0
            scan.skip_line()
            yield RawRecord(line, error="expected a JSON object or an array of objects")


def _array(scan: _Scanner) -> Iterator[RawRecord]:
    """The elements of an array whose ``[`` is consumed, up to its ``]``."""
    while True:
        mark = scan.peek()
        if mark is None:
            yield RawRecord(scan.line, error="the array is not closed: ']' missing at the end")
            return
        if mark == ord("]"):
            scan.take(scan.pos + 1)
            return
        if mark == ord(","):
            yield RawRecord(scan.line, error="expected a value before ','")
            scan.take(scan.pos + 1)
            continue
        yield _record(scan)
        after = scan.peek()
        if after == ord(","):
            scan.take(scan.pos + 1)
        elif after is not None and after != ord("]"):
            yield RawRecord(scan.line, error="expected ',' or ']' after an element of the array")


def _record(scan: _Scanner) -> RawRecord:
    """The value at ``pos`` as a record (its error, if it is no valid record)."""
    line = scan.line
    if not scan.value():
        return RawRecord(line, error="unterminated JSON value: the file ends inside it")
    if scan.held is None:
        return RawRecord(line, error=over_limit(scan.size, scan.limit))
    return json_record(line, bytes(scan.held))
