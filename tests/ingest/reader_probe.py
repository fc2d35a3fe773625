"""Every file reader run on generated input, in a process whose address space is capped.

``python -m tests.ingest.reader_probe HEADROOM_BYTES`` caps its own address space (``RLIMIT_AS``) at
what it maps after its imports plus ``HEADROOM_BYTES``, then answers one JSON line per input
line: ``{"format", "limit", "parts": [[hex bytes, times], ...], "columns"?}`` -> ``{"records",
"rejected", "problem"}``. The input is made of its parts as it is read (:class:`PatternFile`),
so a 64 MB part costs nothing until a reader holds it; a reader that does fails with
``MemoryError`` here, reported as the problem. ``problem`` is null for a clean outcome: records
(each valid, or cleanly refused by the record's validation), rejections with a one-line reason,
or ``InvalidRecord`` for the whole file (a CSV without a usable header). Anything else is the
problem, with its traceback. (``tests/ingest/test_readers.py`` drives it with hypothesis.)
"""

from __future__ import annotations

import io
import json
import resource
import sys
import traceback
from collections.abc import Iterable
from typing import Any

from recengine.errors import InvalidRecord
from recengine.pipeline.ingest.readers import RawRecord, read_stream
from recengine.pipeline.ingest.records import parse_record

_BLOCK = 1 << 16


class PatternFile(io.RawIOBase):
    """A read-only file made of ``(piece, times)`` parts: ``piece`` repeated ``times`` times,
    produced as it is read (never held whole)."""

    def __init__(self, parts: Iterable[tuple[bytes, int]]) -> None:
        self.parts = [(p, n) for p, n in parts if p and n > 0]
        self.part, self.offset = 0, 0  # offset: bytes of the current part already read

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        while self.part < len(self.parts):
            piece, times = self.parts[self.part]
            total = len(piece) * times
            if self.offset < total:
                start = self.offset % len(piece)
                block = (piece * (_BLOCK // len(piece) + 2))[start:]
                size = min(len(buffer), len(block), total - self.offset)
                buffer[:size] = block[:size]
                self.offset += size
                return size
            self.part, self.offset = self.part + 1, 0
        return 0


def opened(parts: Iterable[tuple[bytes, int]]) -> io.BufferedReader:
    return io.BufferedReader(PatternFile(parts))


def check(records: Iterable[RawRecord]) -> tuple[int, int]:
    """(records read, rejected); an AssertionError for an unclean one."""
    read = rejected = 0
    last = 0
    for r in records:
        assert r.line >= 1 and r.line >= last, (r.line, last)
        last = r.line
        assert (r.data is None) != (r.error is None), r
        if r.error is not None:
            assert r.error and "\n" not in r.error and len(r.error) < 2000, r.error
            r.error.encode("utf-8")
            rejected += 1
            continue
        assert r.data is not None
        for extra in ("refuse", "report"):
            try:
                parse_record(r.data, extra_fields=extra)  # type: ignore[arg-type]
            except InvalidRecord as exc:
                assert str(exc) and "\n" not in str(exc), str(exc)
        read += 1
    return read, rejected


def run(case: dict[str, Any]) -> dict[str, Any]:
    parts = [(bytes.fromhex(h), n) for h, n in case["parts"]]
    try:
        handle = opened(parts)
        found = check(read_stream(handle, case["format"], case["limit"], case.get("columns")))
    except InvalidRecord as exc:  # a problem with the whole file: clean when it says which
        message = str(exc)
        problem = None if message and "\n" not in message else f"unclear: {message!r}"
        return {"records": 0, "rejected": 0, "problem": problem}
    except BaseException:  # MemoryError among them: an unbounded read
        return {"records": 0, "rejected": 0, "problem": traceback.format_exc()}
    return {"records": found[0], "rejected": found[1], "problem": None}


def _mapped() -> int:
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("VmSize:"):
                return int(line.split()[1]) * 1024
    raise RuntimeError("no VmSize in /proc/self/status")


def main() -> None:
    cap = _mapped() + int(sys.argv[1])
    resource.setrlimit(resource.RLIMIT_AS, (cap, cap))
    print(json.dumps({"ready": cap}), flush=True)
    for line in sys.stdin:
        print(json.dumps(run(json.loads(line))), flush=True)


if __name__ == "__main__":
    main()
