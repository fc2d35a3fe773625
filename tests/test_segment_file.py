"""Segment files: exact round trip, and every kind of damage detected (never trusted blindly)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from recengine.index.segment import build_segment
from recengine.index.segment_file import CorruptSegment, load_segment, save_segment
from tests.test_index_view import random_rows


def saved(tmp_path: Path) -> tuple[Path, object]:
    segment = build_segment(random_rows(4, 200), 8)
    path = tmp_path / "seg" / "a.seg"
    save_segment(segment, path, {"version": 3, "seq": 17})
    return path, segment


def test_round_trip_is_exact_and_memory_mapped(tmp_path: Path) -> None:
    path, segment = saved(tmp_path)
    loaded, meta = load_segment(path)
    assert meta == {"version": 3, "seq": 17}
    assert loaded.index_terms == 8
    for name, array in segment.arrays().items():  # type: ignore[attr-defined]
        got = getattr(loaded, name)
        assert got.dtype == array.dtype and np.array_equal(got, array), name
    assert isinstance(loaded.ids.base, np.memmap) or isinstance(loaded.ids, np.memmap)
    assert not list(path.parent.glob(".*.tmp"))  # no temporary file left behind


@pytest.mark.parametrize("where", [0, 12, 40, -200, -1])
def test_a_flipped_byte_anywhere_is_detected(tmp_path: Path, where: int) -> None:
    path, _ = saved(tmp_path)
    data = bytearray(path.read_bytes())
    data[where] ^= 0x55
    path.write_bytes(bytes(data))
    with pytest.raises(CorruptSegment):
        load_segment(path)


def test_truncated_and_foreign_files_are_refused(tmp_path: Path) -> None:
    path, _ = saved(tmp_path)
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])
    with pytest.raises(CorruptSegment):
        load_segment(path)
    path.write_bytes(b"")
    with pytest.raises(CorruptSegment):
        load_segment(path)
    path.write_bytes(b"RECSEG01" + (10).to_bytes(8, "little") + b"not json!!")
    with pytest.raises(CorruptSegment, match="header"):
        load_segment(path)
