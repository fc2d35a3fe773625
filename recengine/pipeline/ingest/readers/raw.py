"""What a reader yields: one record as read, or why it cannot be read; and the JSON of one."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Literal

from recengine import jsontext
from recengine.jsontext import json_type

Format = Literal["jsonl", "json", "csv", "tsv"]


@dataclass(frozen=True)
class RawRecord:
    """One record as read: ``data`` to validate, or ``error`` saying why it cannot be read."""

    line: int
    data: dict[str, Any] | None = None
    error: str | None = None


def json_record(line: int, raw: bytes, hint: str = "") -> RawRecord:
    """The record whose JSON text is ``raw`` (UTF-8), starting at ``line``.

    Args:
        hint: added to the reason when ``raw`` is not valid JSON.
    """
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        return RawRecord(line, error=f"invalid UTF-8 at byte {exc.start}")
    try:
        data = jsontext.loads(text)
    except json.JSONDecodeError as exc:
        where = f"column {exc.colno}"
        if exc.lineno > 1:  # a record over several lines: the line in the file
            where = f"line {line + exc.lineno - 1} {where}"
        return RawRecord(line, error=f"invalid JSON: {exc.msg} at {where}{hint}")
    except ValueError as exc:  # out of bounds (recengine.jsontext): nesting, digits, ...
        return RawRecord(line, error=f"invalid JSON: {exc}")
    if not isinstance(data, dict):
        return RawRecord(line, error=f"expected a JSON object, got {json_type(data)}")
    return RawRecord(line, data=data)
