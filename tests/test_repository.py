"""The repository itself: no file left with merge-conflict markers.

Several branches land on main by merge; a marker committed by mistake in a document (it has
happened once, in BENCHMARKS.md) is not caught by the linters, which read only Python.
"""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
MARKER = re.compile(r"^(<{7} |>{7} |={7}$)", re.MULTILINE)
CHECKED = ("*.md", "*.toml", "*.py", "*.ini", "*.js", "*.html", "*.sh", "*.cfg")


def tracked_text_files() -> list[Path]:
    skip = {".git", ".venv", "node_modules", "bench/results"}
    out = []
    for pattern in CHECKED:
        for path in ROOT.rglob(pattern):
            rel = path.relative_to(ROOT).as_posix()
            if not any(rel == s or rel.startswith(s + "/") or f"/{s}/" in rel for s in skip):
                out.append(path)
    return out


def test_no_merge_conflict_markers() -> None:
    files = tracked_text_files()
    assert any(p.name == "README.md" for p in files)  # the walk sees the repository
    marked = [
        str(p.relative_to(ROOT))
        for p in files
        if MARKER.search(p.read_text(encoding="utf-8", errors="replace"))
    ]
    assert marked == []
