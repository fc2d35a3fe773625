"""The names of an article record's fields: one table for every input (files and HTTP).

A record's fields are :data:`FIELDS`; :data:`ALIASES` are the other names exports commonly use
for them (``body`` for ``content``, ``link`` for ``url``, ``keywords`` for ``tags``, ...). JSON
Lines, JSON, CSV/TSV headers (read case-insensitively) and HTTP bodies all accept both, so a
field is never lost because an export spelled it another way.

A field given under two names is taken once: the names' values must agree (an empty one, null
or blank, gives way to the other), except tags, which are merged (``tags`` and ``keywords``
both list tags). Any other name is not a field of the record: refused with its name, or, with
``ingest.extra_fields = "report"``, left out and listed per record (never dropped silently).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any, Literal

from recengine.jsontext import printable

ExtraFields = Literal["refuse", "report"]

FIELDS = (
    "id",
    "title",
    "content",
    "url",
    "tags",
    "category",
    "author",
    "published_at",
    "image",
    "summary",
)
ALIASES: Mapping[str, str] = {
    "_id": "id",
    "article_id": "id",
    "body": "content",
    "html": "content",
    "text": "content",
    "link": "url",
    "keywords": "tags",
    "timestamp": "published_at",
    "time": "published_at",
    "date": "published_at",
    "published": "published_at",
    "thumbnail": "image",
    "excerpt": "summary",
}
_SHOWN = 5  # unknown names quoted in one message
# A tag cell (CSV/TSV, or a string instead of a list) lists tags separated by commas or
# semicolons, ASCII or full-width; spaces belong to a tag ("Spring Boot").
_TAG_SPLIT = re.compile(r"[,，;；]")


def field_name(name: str) -> str | None:
    """The record field ``name`` stands for (itself or by an alias), None if it is none."""
    if name in FIELDS:
        return name
    return ALIASES.get(name)


def unknown_names(data: Mapping[str, Any]) -> list[str]:
    """The keys of ``data`` that name no field of the record, in their order."""
    return [name for name in data if not isinstance(name, str) or field_name(name) is None]


def canonical_fields(data: Mapping[str, Any]) -> dict[str, Any]:
    """``data`` with every alias replaced by its field's name (unknown keys kept as they are).

    Raises:
        ValueError: one field given under two names with different values
            (``give content or body, not both``).
    """
    out: dict[str, Any] = {}
    given: dict[str, str] = {}  # field -> the name it was given under
    for name, value in data.items():
        field = field_name(name) if isinstance(name, str) else None
        if field is None:
            out[name] = value
            continue
        if field not in out:
            out[field], given[field] = value, name
        elif field == "tags":
            out[field] = [*_listed(tag_list(out[field])), *_listed(tag_list(value))]
        elif _empty(out[field]):
            out[field], given[field] = value, name
        elif not _empty(value) and not _same(value, out[field]):
            first, second = sorted((given[field], name), key=_rank)
            raise ValueError(f"give {first} or {second}, not both")
    return out


def tag_list(value: Any) -> Any:
    """Tags as a list: a tag cell split (see ``_TAG_SPLIT``), None as no tags; any other
    value as it is (the record's validation says what is wrong with it)."""
    if value is None:
        return []
    if isinstance(value, str):
        return [t.strip() for t in _TAG_SPLIT.split(value) if t.strip()]
    return value


def unknown_message(names: list[str]) -> str:
    """Why a record with the unknown keys ``names`` is refused, naming them."""
    shown = ", ".join(f"'{printable(str(n), 40)}'" for n in names[:_SHOWN])
    more = f" and {len(names) - _SHOWN} more" if len(names) > _SHOWN else ""
    plural = "s" if len(names) > 1 else ""
    return (
        f"unknown field{plural} {shown}{more} (a record's fields: {', '.join(FIELDS)}, "
        'or their other names in README; ingest.extra_fields = "report" stores such '
        "records and lists what was left out)"
    )


def _listed(value: Any) -> list[Any]:
    if value is None:
        return []
    return list(value) if isinstance(value, list) else [value]


def _empty(value: Any) -> bool:
    return value is None or (isinstance(value, str) and not value.strip())


def _same(a: Any, b: Any) -> bool:
    """Equal as JSON values (Python takes ``0 == False``)."""
    return type(a) is type(b) and a == b


def _rank(name: str) -> tuple[bool, str]:
    """The field's own name first in a message, then its aliases by name."""
    return (name not in FIELDS, name)
