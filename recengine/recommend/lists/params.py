"""Validated query parameters of related lists and feeds (bad values raise InvalidRequest)."""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import UTC, datetime, tzinfo
from typing import Any

from recengine.errors import InvalidRequest
from recengine.times import parse_time

MAX_ID_LENGTH = 255


def check_id(value: Any, what: str = "article id") -> str:
    if not isinstance(value, str) or not value or len(value) > MAX_ID_LENGTH:
        raise InvalidRequest(f"{what} must be a non-empty string of at most {MAX_ID_LENGTH} chars")
    if "\x00" in value:  # stored as a reader's id or in an override: PostgreSQL refuses NUL
        raise InvalidRequest(f"{what} must not contain NUL characters")
    return value


def _shown(value: Any) -> str:
    """A caller's value in a message: its repr, at most 40 characters."""
    text = repr(value) if not isinstance(value, int) or abs(value) < 10**30 else "a huge integer"
    return text if len(text) <= 40 else text[:37] + "..."


# Numbers as text: ASCII digits only (str.isdigit(), int() and float() also take other
# scripts' digits: "٣" is 3, and "²".isdigit() while int("²") fails).
INTEGER = re.compile(r"-?[0-9]{1,19}")
DECIMAL = re.compile(r"-?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][-+]?[0-9]{1,3})?")


def check_int(value: Any, name: str, low: int, high: int) -> int:
    """An integer in ``[low, high]`` (strings of ASCII digits accepted, as from a query string)."""
    if isinstance(value, str) and INTEGER.fullmatch(value.strip()):
        value = int(value)
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise InvalidRequest(f"{name} must be an integer from {low} to {high}, got {_shown(value)}")
    return value


def check_labels(values: Iterable[Any] | str | None, name: str, limit: int) -> tuple[str, ...]:
    """Strings (a single string counts as one value); at most ``limit`` of them."""
    if values is None:
        return ()
    items = [values] if isinstance(values, str) else list(values)
    if len(items) > limit:
        raise InvalidRequest(f"{name}: at most {limit} values, got {len(items)}")
    for item in items:
        if not isinstance(item, str) or not item or len(item) > MAX_ID_LENGTH:
            raise InvalidRequest(f"{name}: every value must be a non-empty string")
    return tuple(dict.fromkeys(items))


def check_time(value: Any, name: str, zone: tzinfo = UTC) -> datetime | None:
    """A time by the one rule of ``recengine.times`` (without an offset: read in ``zone``)."""
    try:
        return parse_time(value, zone)
    except ValueError as exc:
        raise InvalidRequest(f"{name}: {exc}") from None


def check_score(value: Any, name: str = "min_score") -> float:
    if isinstance(value, str):
        if not DECIMAL.fullmatch(value.strip()):
            raise InvalidRequest(f"{name} must be a number from 0 to 1, got {_shown(value)}")
        value = float(value)
    if isinstance(value, bool) or not isinstance(value, int | float) or not 0 <= value <= 1:
        raise InvalidRequest(f"{name} must be a number from 0 to 1, got {_shown(value)}")
    return float(value)


@dataclass(frozen=True)
class Filters:
    """Restrictions shared by related lists and feeds (see ``index.related.view.RowFilter``)."""

    exclude: tuple[str, ...] = ()
    categories: tuple[str, ...] = ()
    tags: tuple[str, ...] = ()
    published_after: datetime | None = None
    published_before: datetime | None = None
    min_score: float | None = None  # None: the caller's default (related.min_score, feed.min_score)

    @classmethod
    def parse(cls, limit: int, zone: tzinfo = UTC, **raw: Any) -> Filters:
        """From keyword values (None = not given); times without an offset are read in ``zone``.

        Raises:
            InvalidRequest: an unknown name or a bad value; the message names it.
        """
        unknown = set(raw) - {f for f in cls.__dataclass_fields__}
        if unknown:
            raise InvalidRequest(f"unknown parameter(s): {', '.join(sorted(unknown))}")
        after = check_time(raw.get("published_after"), "published_after", zone)
        before = check_time(raw.get("published_before"), "published_before", zone)
        if after and before and after >= before:
            raise InvalidRequest("published_after must be earlier than published_before")
        score = raw.get("min_score")
        return cls(
            exclude=check_labels(raw.get("exclude"), "exclude", limit),
            categories=check_labels(raw.get("categories"), "categories", limit),
            tags=check_labels(raw.get("tags"), "tags", limit),
            published_after=after,
            published_before=before,
            min_score=None if score is None else check_score(score),
        )
