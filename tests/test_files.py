"""Durable file replacement (recengine/files.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from recengine.files import atomic_write, remove_temporaries


def test_the_new_content_replaces_the_old_whole(tmp_path: Path) -> None:
    path = tmp_path / "sub" / "f.bin"
    with atomic_write(path) as out:
        out.write(b"first")
    with atomic_write(path) as out:
        out.write(b"0123456789")
        out.seek(2)
        out.write(b"xx")
        out.truncate(6)
    assert path.read_bytes() == b"01xx45"
    with atomic_write(path.with_suffix(".json"), "w", encoding="utf-8") as out:
        out.write("文本")
    assert path.with_suffix(".json").read_text("utf-8") == "文本"
    assert sorted(p.name for p in path.parent.iterdir()) == ["f.bin", "f.json"]


def test_an_error_leaves_the_old_file_and_no_temporary(tmp_path: Path) -> None:
    path = tmp_path / "f.bin"
    path.write_bytes(b"old")
    with pytest.raises(RuntimeError), atomic_write(path) as out:
        out.write(b"half")
        raise RuntimeError("stop")
    assert path.read_bytes() == b"old"
    assert [p.name for p in tmp_path.iterdir()] == ["f.bin"]


def test_leftovers_of_a_killed_writer_are_removed(tmp_path: Path) -> None:
    (tmp_path / ".f.bin.abc.tmp").write_bytes(b"torn")
    (tmp_path / "keep.bin").write_bytes(b"kept")
    remove_temporaries(tmp_path)
    assert [p.name for p in tmp_path.iterdir()] == ["keep.bin"]
