"""The widget's script and stylesheet as served: the source files without their comments.

``widget.js`` and ``widget.css`` are written to be read (a long comment says how to embed and
theme them); a page needs none of that. :func:`compact` drops every comment that starts a line
(``//`` lines and ``/* ... */`` blocks, except a ``/*!`` licence line), each line's indentation
and the blank lines: nothing inside a line is touched, so no string or URL can be cut. The
sizes a page pays are ``bench/widget_size.py``'s figures.
"""

from __future__ import annotations

import re
from functools import cache
from pathlib import Path

_BLOCK = re.compile(r"^[ \t]*/\*(?!!).*?\*/[ \t]*\n", re.MULTILINE | re.DOTALL)
_LINE = re.compile(r"^[ \t]*//.*\n", re.MULTILINE)


def compact(source: str) -> str:
    """``source`` without the comments that start a line, indentation and blank lines."""
    text = _LINE.sub("", _BLOCK.sub("", source))
    return "".join(line.strip() + "\n" for line in text.splitlines() if line.strip())


def served(path: Path) -> bytes:
    """The file at ``path`` as served (:func:`compact`), read again when it changes."""
    stat = path.stat()
    return _served(str(path), stat.st_mtime_ns, stat.st_size)


@cache
def _served(path: str, _mtime: int, _size: int) -> bytes:
    return compact(Path(path).read_text(encoding="utf-8")).encode("utf-8")
