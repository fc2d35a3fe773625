"""The published JSON schema of the article record (the HTTP API's ``/openapi.json``).

It states everything the record's validators (``pipeline.ingest.records``) accept, so a client
generated from it sends nothing that is refused: the id's pattern, tag cells, title or content
required, no NUL in any text, and the fields' other names (``pipeline.ingest.record_fields``).
"""

from __future__ import annotations

import copy
from typing import Any

from recengine.pipeline.ingest.record_fields import ALIASES, FIELDS

_INT64 = 1 << 63

# Python's str.strip() whitespace, as a regular-expression character class.
_UNICODE_WS = r"\x85\xa0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000"
_NOT_BLANK = rf"[^\t\n\x0b\x0c\r\x1c-\x20{_UNICODE_WS}]"
_ID_CHAR = r"[^\x00-\x08\x0a-\x1f\x7f]"  # what ArticleRecord._id_clean allows
_ID_NOT_BLANK = rf"[^\x00-\x20\x7f{_UNICODE_WS}]"
# An id: 1-255 characters, not all blank, no control characters but tab.
ID_PATTERN = rf"^{_ID_CHAR}*{_ID_NOT_BLANK}{_ID_CHAR}*$"
ID_SCHEMA: dict[str, Any] = {
    "anyOf": [
        {"type": "string", "minLength": 1, "maxLength": 255, "pattern": ID_PATTERN},
        {"type": "integer", "minimum": -_INT64, "maximum": _INT64 - 1},
    ],
    "description": "The caller's own id; a JSON integer is taken as its decimal string.",
}
TAGS_SCHEMA: dict[str, Any] = {
    "anyOf": [
        {"type": "array", "items": {"type": "string", "maxLength": 255}, "maxItems": 200},
        {
            "type": "string",
            "description": "Tags separated by commas or semicolons (ASCII or full-width); "
            "spaces belong to a tag.",
        },
        {"type": "null"},
    ],
}
_HAS_TEXT: dict[str, Any] = {
    "anyOf": [
        {"required": [name], "properties": {name: {"type": "string", "pattern": _NOT_BLANK}}}
        for name in ("title", "content", *(a for a, f in ALIASES.items() if f == "content"))
    ]
}
_NO_NUL = r"^[^\x00]*$"


def published_schema(schema: dict[str, Any]) -> None:
    """Complete the generated JSON schema: title or content required, no NUL in any text, the
    fields' other names (each field under one name only; tags and keywords may be merged)."""
    schema.update(_HAS_TEXT)
    properties = schema["properties"]
    todo = list(properties.values())
    while todo:
        node = todo.pop()
        todo.extend(node.get("anyOf", []))
        if isinstance(node.get("items"), dict):
            todo.append(node["items"])
        if node.get("type") == "string" and "pattern" not in node and "format" not in node:
            node["pattern"] = _NO_NUL
    # The other names of the fields (pipeline.ingest.record_fields), each field under one name only:
    # any of "every name but this one is absent" (a `false` property schema), which generators
    # handle better than `not`. The id's other names are left out: a record always has "id"
    # here, and one more choice makes the combinations too many for schemathesis to generate.
    groups = [[n, *(a for a, f in ALIASES.items() if f == n)] for n in FIELDS if n != "id"]
    for group in groups:
        for alias in group[1:]:
            properties[alias] = {
                **copy.deepcopy(properties[group[0]]),
                "description": f"Also: {group[0]}.",
            }
    schema["allOf"] = [
        {"anyOf": [{"properties": {o: False for o in group if o != name}} for name in group]}
        for group in groups
        if len(group) > 1 and group[0] != "tags"  # tags and keywords are merged
    ]
