"""Times given by callers: one rule for every place a time comes in.

Ingest records (``published_at`` in JSON Lines, CSV/TSV and HTTP bodies), reader events
(``at``), the filters of related lists and feeds (``published_after`` / ``published_before`` over
HTTP, ``--after`` / ``--before`` on the command line, keywords in the Python API) all go through
:func:`parse_time`, so a value accepted in one place is accepted, with the same meaning,
everywhere:

* ISO 8601 with an offset: ``2024-05-01T08:00:00+08:00``, ``2024-05-01T00:00:00Z``;
* ISO 8601 without an offset (``2024-05-01T08:00:00``, ``2024-05-01 08:00``) or a date alone
  (``2024-05-01``, meaning midnight): read in the configured zone, ``ingest.naive_timezone``
  (UTC unless configured);
* Unix time in seconds: a number, or a string of 9 or more digits (``"1714550400"``, as CSV
  exports write it; a fraction may follow); a shorter digit string is refused as ambiguous
  (``"20240501"``);
* from Python, also ``datetime`` and ``date`` objects (naive ones read in the zone, as above).

An offset written ``+08:00`` in a URL without percent-encoding arrives as `` 08:00`` (a ``+`` in a
query string is a space); that form is read as the ``+`` it was.

Bounds: the year, as written, is from :data:`MIN_YEAR` to :data:`MAX_YEAR` (for Unix time: of
the UTC instant). That keeps every accepted time storable and convertible to UTC on both
databases (``9999-12-31T23:59:59-14:00`` is year 10000 in UTC, which Python cannot represent),
and catches the usual export mistakes: milliseconds given as seconds (13 digits: year 56000),
``yyyymmddHHMMSS`` read as seconds (14 digits: year 2361 read as ms), zero dates (year 1).
"""

from __future__ import annotations

import math
import re
from datetime import UTC, date, datetime, time, tzinfo
from typing import Any

MIN_YEAR = 1900
MAX_YEAR = 2100
# Unix seconds of the first and last second of those years (UTC).
MIN_TIMESTAMP = int(datetime(MIN_YEAR, 1, 1, tzinfo=UTC).timestamp())
MAX_TIMESTAMP = int(datetime(MAX_YEAR, 12, 31, 23, 59, 59, tzinfo=UTC).timestamp())
MAX_TEXT = 64  # no ISO 8601 time is longer; longer input is refused before it is parsed

RULE = (
    f"ISO 8601 (2024-05-01T08:00:00+08:00; without an offset: in the configured zone; a date "
    f"alone: midnight) or Unix seconds, year {MIN_YEAR} to {MAX_YEAR}"
)
_DIGITS = re.compile(r"\d+(\.\d+)?", re.ASCII)  # Unix seconds in 0-9 only, not "١٧١٤٥٥٠٤٠٠"
# The years MIN_YEAR..MAX_YEAR at the start of an ISO 8601 string, for the published schema.
_YEAR_PATTERN = r"^\s*(19\d\d|20\d\d|2100)-"

# Strings of Unix seconds parse_time accepts: 9 digits, or 10 up to MAX_TIMESTAMP (4133980799).
_SECONDS_PATTERN = (
    r"^\s*(\d{9}|[0-3]\d{9}|40\d{8}|41[0-2]\d{7}|413[0-2]\d{6}|4133[0-8]\d{5}|41339[0-7]\d{4}"
    r"|4133980[0-6]\d{2}|41339807\d{2})(\.\d+)?\s*$"
)
# The JSON schemas of a time (published in /openapi.json): what parse_time accepts in a query
# string, and from JSON.
TIME_TEXT_SCHEMA: dict[str, Any] = {
    "anyOf": [
        {"type": "string", "format": "date-time", "pattern": _YEAR_PATTERN},
        {"type": "string", "format": "date", "pattern": _YEAR_PATTERN},
        {"type": "string", "pattern": _SECONDS_PATTERN, "description": "Unix seconds"},
        {"type": "string", "pattern": r"^\s*$", "description": "blank: no bound"},
    ],
    "description": RULE,
}
TIME_SCHEMA: dict[str, Any] = {
    "anyOf": [
        *TIME_TEXT_SCHEMA["anyOf"],
        {"type": "number", "minimum": MIN_TIMESTAMP, "exclusiveMaximum": MAX_TIMESTAMP + 1},
        {"type": "null"},
    ],
    "description": RULE,
}
# "+08:00" in a URL query that was not percent-encoded arrives as " 08:00": put the + back.
_DECODED_PLUS = re.compile(r"^(.*\d[T ]\d{2}:\d{2}(?::\d{2}(?:\.\d+)?)?) (\d{2}(?::?\d{2})?)$")
_MIN_DIGITS = 9  # Unix seconds since 1973-03-03 have 9 digits; fewer is more likely a date


def parse_time(value: Any, zone: tzinfo | None = UTC) -> datetime | None:
    """A caller's time as a datetime (see the module docstring for the rule).

    Args:
        value: None or "" (no time), a string, a number, a ``datetime`` or a ``date``.
        zone: where a time without an offset is read; None keeps it naive (the caller applies
            the zone later, as ingest does once it knows ``ingest.naive_timezone``).

    Returns:
        None for no time; else an aware datetime (naive only when ``zone`` is None and the
        input had no offset).

    Raises:
        ValueError: with a one-line reason; the caller adds the field's name.

    >>> parse_time("2024-05-01").isoformat()
    '2024-05-01T00:00:00+00:00'
    >>> parse_time(1714550400).isoformat()
    '2024-05-01T08:00:00+00:00'
    """
    if value is None or (isinstance(value, str) and not value.strip()):
        return None
    if isinstance(value, bool):
        raise ValueError(f"must be a time: {RULE}")
    if isinstance(value, int | float):
        return _from_timestamp(value)
    if isinstance(value, datetime):
        return _bounded(_zoned(value, zone))
    if isinstance(value, date):
        return _bounded(_zoned(datetime.combine(value, time()), zone))
    if not isinstance(value, str):
        raise ValueError(f"must be a time, not {type(value).__name__}: {RULE}")
    return _from_text(value.strip(), zone)


def _from_text(text: str, zone: tzinfo | None) -> datetime:
    if len(text) > MAX_TEXT:
        raise ValueError(f"is {len(text)} characters long, not a time: {RULE}")
    if _DIGITS.fullmatch(text):
        if len(text.split(".")[0]) < _MIN_DIGITS:
            raise ValueError(
                f"{text!r} is ambiguous (a date? write 2024-05-01; Unix seconds have 9 or more "
                "digits)"
            )
        return _from_timestamp(float(text) if "." in text else int(text))
    text = _DECODED_PLUS.sub(r"\1+\2", text)
    try:
        parsed = datetime.fromisoformat(text.upper())  # RFC 3339 allows "t" and "z"
    except ValueError:
        raise ValueError(f"{text!r} is not a time: {RULE}") from None
    return _bounded(_zoned(parsed, zone))


def _from_timestamp(seconds: float) -> datetime:
    # Compared before any conversion: an int of 400 digits has no float (OverflowError).
    if isinstance(seconds, float) and not math.isfinite(seconds):
        raise ValueError(f"Unix time must be a finite number of seconds, got {seconds}")
    if not MIN_TIMESTAMP <= seconds < MAX_TIMESTAMP + 1:  # to the end of the last second
        hint = " (milliseconds? give seconds)" if MAX_TIMESTAMP < seconds < 10**14 else ""
        shown = str(seconds) if len(str(seconds)) <= 20 else f"{str(seconds)[:17]}..."
        raise ValueError(f"Unix time {shown} is outside the years {MIN_YEAR}-{MAX_YEAR}{hint}")
    # Microseconds truncated, not rounded: 4133980799.9999995 is in the last second of 2100,
    # and rounding would carry it into 2101 (past the bound just checked).
    whole = math.floor(seconds)
    micros = min(999_999, int((seconds - whole) * 1_000_000))
    return datetime.fromtimestamp(whole, tz=UTC).replace(microsecond=micros)


def _zoned(value: datetime, zone: tzinfo | None) -> datetime:
    return value if value.tzinfo is not None or zone is None else value.replace(tzinfo=zone)


def _bounded(value: datetime) -> datetime:
    if not MIN_YEAR <= value.year <= MAX_YEAR:
        raise ValueError(f"year {value.year} is outside {MIN_YEAR}-{MAX_YEAR}")
    return value


def utc_text(value: datetime | None) -> str | None:
    """``2024-05-01T00:00:00Z``: how every time is written out (stored times are UTC; a naive
    one is taken as UTC)."""
    if value is None:
        return None
    aware = value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)
    return aware.isoformat().replace("+00:00", "Z")
