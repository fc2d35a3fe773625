"""The article record of the external contract, validated.

``{"id": "external-id", "title": "...", "content": "<html or plain text>", "url": "...",
"tags": ["..."], "category": "...", "author": "...", "published_at": "2024-05-01T08:00:00+08:00",
"image": "https://...", "summary": "..."}``

``id`` is the caller's own string id; ``title`` or ``content`` must be non-empty. ``published_at``
follows the one rule for times (``recengine.times``): ISO 8601 (a date alone means midnight) or
Unix seconds, years 1900-2100; a time without an offset is read in ``ingest.naive_timezone`` (UTC
unless configured). Fields go by the names of ``pipeline.ingest.record_fields`` (``body`` is
``content``, ...); any other field is refused with its name (:class:`ArticleRecord`), or left out
and listed in ``ignored_fields`` (:class:`ReportingRecord`, ``ingest.extra_fields = "report"``).
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Sequence
from datetime import UTC, datetime, tzinfo
from typing import Annotated, Any

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    ModelWrapValidatorHandler,
    PrivateAttr,
    ValidationError,
    WithJsonSchema,
    field_validator,
    model_validator,
)
from pydantic_core import ErrorDetails

from recengine.errors import InvalidRecord
from recengine.jsontext import json_type, printable
from recengine.pipeline.ingest.record_fields import (
    ExtraFields,
    canonical_fields,
    tag_list,
    unknown_message,
    unknown_names,
)
from recengine.pipeline.ingest.record_schema import ID_SCHEMA, TAGS_SCHEMA, published_schema
from recengine.times import TIME_SCHEMA, parse_time

_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")
ShortText = Annotated[str, Field(max_length=255)]
MAX_IMAGE = 2_000  # characters of an image URL
MAX_SUMMARY = 2_000  # characters of a given summary (a card shows two or three lines)
_INT64 = 1 << 63


class ArticleRecord(BaseModel):
    """One article as callers send it (JSON Lines, CSV/TSV rows, HTTP bodies)."""

    model_config = ConfigDict(
        extra="forbid",
        str_strip_whitespace=True,
        frozen=True,
        json_schema_extra=published_schema,
    )

    id: Annotated[str, Field(min_length=1, max_length=255), WithJsonSchema(ID_SCHEMA)]
    title: str = ""
    content: str = ""
    url: str | None = None
    tags: Annotated[
        list[ShortText], Field(default_factory=list, max_length=200), WithJsonSchema(TAGS_SCHEMA)
    ]
    category: ShortText | None = None
    author: ShortText | None = None
    published_at: Annotated[datetime | None, WithJsonSchema(TIME_SCHEMA)] = None
    # What a list's card shows (stored as given; pipeline.cards derives them when absent)
    image: Annotated[str | None, Field(max_length=MAX_IMAGE)] = None
    summary: Annotated[str | None, Field(max_length=MAX_SUMMARY)] = None
    _ignored: tuple[str, ...] = PrivateAttr(default=())

    @property
    def ignored_fields(self) -> tuple[str, ...]:
        """The unknown fields left out of this record (only a :class:`ReportingRecord` has)."""
        return self._ignored

    @model_validator(mode="before")
    @classmethod
    def _field_names(cls, data: Any) -> Any:
        """Fields by their names (``body`` is ``content``); unknown fields refused, by name."""
        if not isinstance(data, dict):
            return data
        unknown = unknown_names(data)
        if unknown:
            raise ValueError(unknown_message(unknown))
        return canonical_fields(data)

    @field_validator("*", mode="after")
    @classmethod
    def _storable_text(cls, value: Any) -> Any:
        """Text both databases can store: no NUL (PostgreSQL refuses it in text columns).

        Lone surrogates (``"\\udc80"`` in JSON) are already refused by pydantic's str type.
        """
        for text in value if isinstance(value, list) else [value]:
            if isinstance(text, str) and "\x00" in text:
                raise ValueError("must not contain NUL characters")
        return value

    @field_validator("id", mode="before")
    @classmethod
    def _id_text(cls, value: Any) -> Any:
        if isinstance(value, bool):
            raise ValueError("must be a string")
        if isinstance(value, float) and value.is_integer():
            value = int(value)  # JSON does not tell 5 from 5.0
        if isinstance(value, int):
            if not -_INT64 <= value < _INT64:
                raise ValueError("an integer id must fit in 64 bits")
            return str(value)  # numeric ids in JSON are common and unambiguous
        return value

    @field_validator("id")
    @classmethod
    def _id_clean(cls, value: str) -> str:
        if _CONTROL.search(value) or "\n" in value or "\r" in value:
            raise ValueError("must not contain control characters or line breaks")
        return value

    @field_validator("url", "category", "author", "image", "summary", mode="after")
    @classmethod
    def _empty_is_none(cls, value: str | None) -> str | None:
        return value or None

    @field_validator("tags", mode="before")
    @classmethod
    def _split_tags(cls, value: Any) -> Any:
        return tag_list(value)

    @field_validator("tags", mode="after")
    @classmethod
    def _dedupe_tags(cls, value: list[str]) -> list[str]:
        return list(dict.fromkeys(t for t in value if t))

    @field_validator("published_at", mode="before")
    @classmethod
    def _parse_time(cls, value: Any) -> Any:
        """The one rule for times; a time without an offset stays naive (see with_timezone)."""
        return parse_time(value, zone=None)

    @model_validator(mode="after")
    def _has_text(self) -> ArticleRecord:
        if not self.title and not self.content:
            raise ValueError("title or content must be non-empty")
        return self

    def with_timezone(self, zone: tzinfo) -> ArticleRecord:
        """The record with a naive ``published_at`` read in ``zone`` (then kept as given)."""
        if self.published_at is None or self.published_at.tzinfo is not None:
            return self
        return self.model_copy(update={"published_at": self.published_at.replace(tzinfo=zone)})

    def record_hash(self) -> str:
        """sha256 of the canonical JSON of every field: equal hashes, nothing to write."""
        data = self.model_dump(mode="json")
        for name in ("image", "summary"):  # added later: a record without them hashes as before
            if data[name] is None:
                del data[name]
        canonical = json.dumps(data, ensure_ascii=False, sort_keys=True, separators=(",", ":"))
        return hashlib.sha256(canonical.encode("utf-8")).hexdigest()


class ReportingRecord(ArticleRecord):
    """An article record whose unknown fields are left out and listed in ``ignored_fields``
    (``ingest.extra_fields = "report"``: exports with columns that are not article fields)."""

    @model_validator(mode="wrap")
    @classmethod
    def _left_out(cls, data: Any, handler: ModelWrapValidatorHandler[ReportingRecord]) -> Any:
        unknown = unknown_names(data) if isinstance(data, dict) else []
        if not unknown:
            return handler(data)
        record = handler({k: v for k, v in data.items() if k not in unknown})
        record._ignored = tuple(str(k) for k in unknown)
        return record


RECORD_CLASSES: dict[ExtraFields, type[ArticleRecord]] = {
    "refuse": ArticleRecord,
    "report": ReportingRecord,
}


def record_size(data: Any) -> int | None:
    """UTF-8 bytes of a parsed record's JSON, without insignificant whitespace: the size a record
    of an HTTP body is held to (a file's record is measured as written, by its reader). None
    when it cannot be written back (a number of more than 4,300 digits: refused anyway)."""
    try:
        text = json.dumps(data, ensure_ascii=False, separators=(",", ":"))
    except (ValueError, RecursionError):
        return None
    return len(text.encode("utf-8", "surrogatepass"))


def limited_record(extra_fields: ExtraFields, max_bytes: int) -> type[ArticleRecord]:
    """The record class of HTTP bodies: ``extra_fields`` as in ``RECORD_CLASSES``, and a record
    over ``max_bytes`` (``ingest.max_record_bytes``, see :func:`record_size`) refused with the
    message a file's record gets (:func:`over_limit`), before anything else is validated."""
    base = RECORD_CLASSES[extra_fields]

    # named ArticleRecord as the record it extends: the published schema does not change
    class ArticleRecord(base):  # type: ignore[valid-type,misc]
        @model_validator(mode="before")
        @classmethod
        def _within_limit(cls, data: Any) -> Any:
            size = record_size(data) if isinstance(data, dict) else None
            if size is not None and size > max_bytes:
                raise ValueError(over_limit(size, max_bytes))
            return data

    return ArticleRecord


def parse_record(
    data: Any, zone: tzinfo = UTC, *, extra_fields: ExtraFields = "refuse"
) -> ArticleRecord:
    """Validate one record; unknown fields refused or (``"report"``) left out and listed in
    its ``ignored_fields``.

    Raises:
        InvalidRecord: with a one-line reason naming the field, e.g.
            ``published_at: Input should be a valid datetime``.
    """
    if not isinstance(data, dict):
        raise InvalidRecord(f"expected a JSON object, got {json_type(data)}")
    try:
        return RECORD_CLASSES[extra_fields].model_validate(data).with_timezone(zone)
    except ValidationError as exc:
        raise InvalidRecord(describe_validation(exc)) from None


def over_limit(size: int, limit: int, *, at_least: bool = False) -> str:
    """Why a record over ``ingest.max_record_bytes`` is refused: one message from every input
    (a file's line or row, an element of a JSON array, a record of an HTTP body)."""
    size_text = f"at least {size}" if at_least else str(size)
    return f"record is {size_text} bytes, over the limit of {limit} (ingest.max_record_bytes)"


def describe_validation(exc: ValidationError) -> str:
    """A compact, single-line description of what is wrong with which field."""
    return "; ".join(describe_error(error["loc"], error) for error in exc.errors())


_NOT_AN_OBJECT = frozenset({"model_type", "dict_type", "model_attributes_type"})


def describe_error(loc: Sequence[Any], error: ErrorDetails) -> str:
    """``field.sub: reason`` for one pydantic error; the caller's field names made printable,
    and "expected a JSON object, got array" rather than a Python class name."""
    where = ".".join(printable(str(p), 40) for p in loc)
    message = error["msg"].removeprefix("Value error, ")
    if error["type"] in _NOT_AN_OBJECT:
        message = f"expected a JSON object, got {json_type(error.get('input'))}"
    return f"{where}: {message}" if where else message
