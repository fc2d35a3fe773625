"""The article record of the external contract, validated.

``{"id": "external-id", "title": "...", "content": "<html or plain text>", "url": "...",
"tags": ["..."], "category": "...", "author": "...", "published_at": "2024-05-01T08:00:00+08:00"}``

``id`` is the caller's own string id; ``title`` or ``content`` must be non-empty. ``published_at``
is ISO 8601 (a date alone means midnight) or a Unix timestamp in seconds; a time without a zone
is read in ``ingest.naive_timezone`` (UTC unless configured). Unknown fields are ignored, so
exports with extra columns (views, flags) load as they are.
"""

from __future__ import annotations

import hashlib
import json
import re
from datetime import UTC, date, datetime, tzinfo
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from recengine.errors import InvalidRecord

_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")
_TAG_SPLIT = re.compile(r"[,，;；\s]+")
# Unix timestamps from year 1970 to 2100, in seconds.
_MAX_TIMESTAMP = 4_102_444_800

ShortText = Annotated[str, Field(max_length=255)]


class ArticleRecord(BaseModel):
    """One article as callers send it (JSON Lines, CSV/TSV rows, HTTP bodies)."""

    model_config = ConfigDict(extra="ignore", str_strip_whitespace=True, frozen=True)

    id: Annotated[str, Field(min_length=1, max_length=255)]
    title: str = ""
    content: str = ""
    url: str | None = None
    tags: list[ShortText] = Field(default_factory=list, max_length=200)
    category: ShortText | None = None
    author: ShortText | None = None
    published_at: datetime | None = None

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
        if isinstance(value, int):
            return str(value)  # numeric ids in JSON are common and unambiguous
        return value

    @field_validator("id")
    @classmethod
    def _id_clean(cls, value: str) -> str:
        if _CONTROL.search(value) or "\n" in value or "\r" in value:
            raise ValueError("must not contain control characters or line breaks")
        return value

    @field_validator("url", "category", "author", mode="after")
    @classmethod
    def _empty_is_none(cls, value: str | None) -> str | None:
        return value or None

    @field_validator("tags", mode="before")
    @classmethod
    def _split_tags(cls, value: Any) -> Any:
        if value is None:
            return []
        if isinstance(value, str):
            return [t for t in _TAG_SPLIT.split(value) if t]
        return value

    @field_validator("tags", mode="after")
    @classmethod
    def _dedupe_tags(cls, value: list[str]) -> list[str]:
        return list(dict.fromkeys(t for t in value if t))

    @field_validator("published_at", mode="before")
    @classmethod
    def _parse_time(cls, value: Any) -> Any:
        if value is None or value == "":
            return None
        if isinstance(value, bool):
            raise ValueError("must be an ISO 8601 date-time or a Unix timestamp")
        if isinstance(value, str) and re.fullmatch(r"\d{9,11}(\.\d+)?", value.strip()):
            value = float(value)
        if isinstance(value, int | float):
            if not 0 <= value <= _MAX_TIMESTAMP:
                raise ValueError(f"Unix timestamp {value} is outside 1970..2100")
            return datetime.fromtimestamp(value, tz=UTC)
        if isinstance(value, str) and re.fullmatch(r"\d{4}-\d{2}-\d{2}", value.strip()):
            return datetime.combine(date.fromisoformat(value.strip()), datetime.min.time())
        return value

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
        canonical = json.dumps(data, ensure_ascii=False, sort_keys=True, separators=(",", ":"))
        return hashlib.sha256(canonical.encode("utf-8")).hexdigest()


def parse_record(data: Any, zone: tzinfo = UTC) -> ArticleRecord:
    """Validate one record.

    Raises:
        InvalidRecord: with a one-line reason naming the field, e.g.
            ``published_at: Input should be a valid datetime``.
    """
    if not isinstance(data, dict):
        raise InvalidRecord(f"expected a JSON object, got {type(data).__name__}")
    try:
        return ArticleRecord.model_validate(data).with_timezone(zone)
    except ValidationError as exc:
        raise InvalidRecord(describe_validation(exc)) from None


def describe_validation(exc: ValidationError) -> str:
    """A compact, single-line description of what is wrong with which field."""
    parts = []
    for error in exc.errors():
        where = ".".join(str(p) for p in error["loc"])
        message = error["msg"].removeprefix("Value error, ")
        parts.append(f"{where}: {message}" if where else message)
    return "; ".join(parts)
