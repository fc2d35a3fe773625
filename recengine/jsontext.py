"""JSON from callers (JSON Lines files, HTTP bodies), parsed with bounds.

Python's ``json`` accepts more than JSON and fails in ways that are not ``ValueError``: a body
nested 100,000 levels deep raises ``RecursionError``; an integer of more than 4,300 digits raises
``ValueError`` with advice about ``sys.set_int_max_str_digits``; ``NaN``, ``Infinity`` and
``1e400`` (which becomes ``inf``) are not JSON numbers; ``"\\ud800"`` gives a string that cannot
be written as UTF-8, so it fails later, when it is stored or printed. :func:`loads` turns each of
these into one ``ValueError`` with a short reason, so every caller can reject the one record (or
request) and go on, and nothing that passes it can fail for those reasons further down.

Bounds: nesting at most :data:`MAX_DEPTH` levels (a record batch needs 3), integers at most
Python's 4,300 digits, finite numbers only, text that is Unicode (no unpaired surrogates).
"""

from __future__ import annotations

import json
import math
import re
from typing import Any

MAX_DEPTH = 32
_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]")
_UNPRINTABLE = re.compile(r"[\x00-\x1f\x7f-\x9f\u2028\u2029]")


def loads(text: str | bytes) -> Any:
    """Parse JSON ``text`` within the bounds above.

    Raises:
        ValueError: invalid JSON or out of bounds, with a one-line reason
            (``json.JSONDecodeError``, a subclass, for syntax errors).
    """
    try:
        value = json.loads(text, parse_constant=_no_constant, parse_float=_finite)
    except RecursionError:
        raise ValueError(f"nested more than {MAX_DEPTH} levels deep") from None
    except json.JSONDecodeError:
        raise
    except ValueError as exc:
        if "integer string conversion" in str(exc):
            raise ValueError("a number has more than 4300 digits") from None
        raise
    raw = text.decode("utf-8", "replace") if isinstance(text, bytes) else text
    _check(value, surrogates=_SURROGATE_ESCAPE.search(raw) is not None)
    return value


def json_type(value: Any) -> str:
    """The JSON name of a parsed value's type: object, array, string, number, boolean, null."""
    if value is None:
        return "null"
    for kind, name in ((bool, "boolean"), (dict, "object"), (list, "array"), (str, "string")):
        if isinstance(value, kind):
            return name
    return "number"


def printable(text: str, limit: int = 100) -> str:
    """A caller's string fit to quote in a one-line message: escapes for control characters and
    lone surrogates (a terminal escape sequence or a line break never reaches the output), cut
    to ``limit`` characters with ``...``."""
    shown = text[:limit].encode("utf-8", "backslashreplace").decode("utf-8")
    shown = _UNPRINTABLE.sub(lambda m: f"\\x{ord(m.group()):02x}", shown)
    return shown + ("..." if len(text) > limit else "")


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON number")


def _finite(literal: str) -> float:
    number = float(literal)
    if not math.isfinite(number):
        raise ValueError(f"number {literal[:20]} is out of range")
    return number


def _check(value: Any, *, surrogates: bool) -> None:
    """Depth (iteratively: no recursion on hostile input) and, if escapes were seen, text."""
    todo = [(value, 1)]
    while todo:
        node, depth = todo.pop()
        if isinstance(node, dict | list):
            if depth > MAX_DEPTH:
                raise ValueError(f"nested more than {MAX_DEPTH} levels deep")
            items = node.items() if isinstance(node, dict) else enumerate(node)
            for key, child in items:
                if surrogates and isinstance(key, str):
                    _unicode(key)
                if isinstance(child, dict | list):
                    todo.append((child, depth + 1))
                elif surrogates and isinstance(child, str):
                    _unicode(child)
        elif surrogates and isinstance(node, str):
            _unicode(node)


def _unicode(text: str) -> None:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        raise ValueError("unpaired UTF-16 surrogate escape (\\ud800-\\udfff) in a string") from None
