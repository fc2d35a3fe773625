"""Column types that behave the same on SQLite and PostgreSQL."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from sqlalchemy import BigInteger, DateTime
from sqlalchemy.engine import Dialect
from sqlalchemy.types import TypeDecorator

_2_63 = 1 << 63
_2_64 = 1 << 64


def u64_to_i64(value: int) -> int:
    """Unsigned 64-bit -> the signed integer with the same two's-complement bits."""
    if not 0 <= value < _2_64:
        raise ValueError(f"not an unsigned 64-bit value: {value}")
    return value - _2_64 if value >= _2_63 else value


def i64_to_u64(value: int) -> int:
    """Signed 64-bit -> unsigned with the same bits (inverse of :func:`u64_to_i64`)."""
    return value + _2_64 if value < 0 else value


class UInt64(TypeDecorator[int]):
    """An unsigned 64-bit integer (a simhash fingerprint) in a signed BIGINT column.

    PostgreSQL's BIGINT (and SQLite's INTEGER) are signed: values >= 2**63 are stored as their
    two's-complement negative and converted back on the way out, so every bit survives and
    equality queries still work on the stored form (compare with ``u64_to_i64(x)``).
    """

    impl = BigInteger
    cache_ok = True

    def process_bind_param(self, value: int | None, dialect: Dialect) -> int | None:
        return None if value is None else u64_to_i64(int(value))

    def process_result_value(self, value: Any, dialect: Dialect) -> int | None:
        return None if value is None else i64_to_u64(int(value))


class UTCDateTime(TypeDecorator[datetime]):
    """A timezone-aware UTC datetime on both databases.

    SQLite has no time zones: values are converted to UTC before they are written and marked
    UTC when read, so comparisons and round-trips agree with PostgreSQL's ``timestamptz``.
    Naive datetimes are refused: a time without a zone is ambiguous.
    """

    impl = DateTime(timezone=True)
    cache_ok = True

    def process_bind_param(self, value: datetime | None, dialect: Dialect) -> datetime | None:
        if value is None:
            return None
        if value.tzinfo is None:
            raise ValueError(f"naive datetime {value!r}: give a time zone")
        value = value.astimezone(UTC)
        return value.replace(tzinfo=None) if dialect.name == "sqlite" else value

    def process_result_value(self, value: datetime | None, dialect: Dialect) -> datetime | None:
        if value is None:
            return None
        return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)
