"""The repository itself: no merge-conflict markers; it stands on its own (links, data, licences).

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


LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")


def test_documents_link_only_to_files_inside_the_repository() -> None:
    """A clone elsewhere has no ../shared: every relative Markdown link must resolve in here."""
    documents = [p for p in tracked_text_files() if p.suffix == ".md"]
    checked, broken = 0, []
    for doc in documents:
        for target in LINK.findall(doc.read_text(encoding="utf-8")):
            if re.match(r"^[a-z]+:", target) or target.startswith("#"):
                continue  # a URL or an anchor
            checked += 1
            path = (doc.parent / target.split("#")[0]).resolve()
            if not path.is_relative_to(ROOT) or not path.exists():
                broken.append(f"{doc.relative_to(ROOT)}: {target}")
    assert checked > 0 and broken == []


def test_tests_need_nothing_outside_the_repository() -> None:
    """The tests read their corpora from tests/data, never from ../shared or this machine."""
    sources = [*(ROOT / "tests").rglob("*.py"), *(ROOT / "scripts").iterdir(), ROOT / ".ci" / "run"]
    outside = re.compile(r"\.\./shared|/work/|RECENGINE_SHARED_DATA")
    found = [
        f"{p.relative_to(ROOT)}: {m.group(0)}"
        for p in sources
        if p.is_file() and p.name != "test_repository.py"
        for m in outside.finditer(p.read_text(encoding="utf-8"))
    ]
    assert found == []


def test_licences_are_shipped() -> None:
    """The project's own licence (pyproject says MIT) and one per bundled corpus."""
    pyproject = (ROOT / "pyproject.toml").read_text(encoding="utf-8")
    assert 'license = "MIT"' in pyproject
    assert (ROOT / "LICENSE").read_text(encoding="utf-8").startswith("MIT License")
    corpora = [p for p in (ROOT / "tests" / "data").iterdir() if p.is_dir()]
    assert {p.name for p in corpora} >= {"csdn-blog-100", "javaguide", "csl-papers"}
    for corpus in corpora:
        notice = (corpus / "LICENSE").read_text(encoding="utf-8")
        assert "MIT License" in notice or "Apache License" in notice, corpus.name
    stopwords = (ROOT / "recengine" / "resources" / "stopwords.txt").read_text(encoding="utf-8")
    assert "Copyright (c) 2018 worry1613" in stopwords
    assert "Permission is hereby granted" in stopwords


def test_the_readme_figures_name_data_a_clone_has() -> None:
    """ "What it measures" says what the benches ran on in terms of this repository: the corpora
    of tests/data (each named one exists), not a ../shared/data a clone does not have."""
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    section = readme.split("## What it measures", 1)[1].split("\n## ", 1)[0]
    intro, table = section.split("| |", 1)
    assert "`tests/data`" in intro
    for corpus in re.findall(r"`(csdn-blog-100|javaguide|csl-papers)`", intro):
        assert (ROOT / "tests" / "data" / corpus).is_dir(), corpus
    assert "../shared" not in table
    assert "../shared/data" not in intro.replace("BENCHMARKS.md's `../shared/data`", "")
