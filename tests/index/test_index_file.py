"""Index files (``index.container``): exact round trip, memory-mapped, and every kind of damage
detected (never trusted blindly); the related index's parts (``index.layered``) round trip."""

from __future__ import annotations

import mmap
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from recengine.index import layered
from recengine.index.container import (
    FileHeader,
    IndexFileError,
    index_path,
    load_arrays,
    save_arrays,
    saved_files,
)
from recengine.index.related.segment import build_segment
from recengine.index.related.view import IndexView, Part
from tests.index.test_index_view import random_rows

HEADER = FileHeader("related", "db-1", 3, 17, {"index_terms": 8})


def saved(tmp_path: Path) -> tuple[Path, IndexView]:
    main = build_segment(random_rows(4, 200), 8)
    delta = build_segment(random_rows(5, 20, first_id=1_000), 8)
    alive = np.ones(len(main), bool)
    alive[::7] = False
    view = IndexView((Part(main, alive), layered.whole(delta)))
    path = index_path(tmp_path / "related", HEADER)
    save_arrays(path, HEADER, layered.view_arrays(view))
    return path, view


def mapped(array: Any) -> bool:
    """Whether ``array``'s memory is a file mapping (somewhere down its chain of bases)."""
    while array is not None:
        if isinstance(array, np.memmap | mmap.mmap):
            return True
        array = getattr(array, "base", None)
    return False


def test_round_trip_is_exact_and_memory_mapped(tmp_path: Path) -> None:
    path, view = saved(tmp_path)
    header, arrays = load_arrays(path)
    assert header == HEADER
    loaded = layered.view_from_arrays(arrays, 8)
    assert loaded.parts[0].segment.index_terms == 8 and len(loaded.parts) == 2
    for part, again in zip(view.parts, loaded.parts, strict=True):
        assert np.array_equal(part.alive, again.alive)
        for name, array in part.segment.arrays().items():
            got = getattr(again.segment, name)
            assert got.dtype == array.dtype and np.array_equal(got, array), name
    ids = loaded.parts[0].segment.ids
    assert type(ids) is np.ndarray and mapped(ids)  # plain views: slicing runs no Python
    assert not list(path.parent.glob(".*.tmp"))  # no temporary file left behind
    assert saved_files(tmp_path / "related", "related", 3) == [path]
    assert saved_files(tmp_path / "related", "related", 4) == []


@pytest.mark.parametrize("where", [0, 12, 40, 300, -200, -1])
def test_a_flipped_byte_anywhere_is_detected(tmp_path: Path, where: int) -> None:
    path, _ = saved(tmp_path)
    data = bytearray(path.read_bytes())
    data[where] ^= 0x55
    path.write_bytes(bytes(data))
    with pytest.raises(IndexFileError):
        load_arrays(path)


def test_every_byte_is_covered(tmp_path: Path) -> None:
    """Not only the sampled positions: a flip of any byte of a small file is caught."""
    path = tmp_path / "small.idx"
    save_arrays(path, HEADER, {"a": np.arange(5, dtype=np.int64), "b": np.ones(3, np.uint8)})
    data = path.read_bytes()
    for where in range(len(data)):
        damaged = bytearray(data)
        damaged[where] ^= 0x01
        path.write_bytes(bytes(damaged))
        with pytest.raises(IndexFileError):
            load_arrays(path)


def test_truncated_and_foreign_files_are_refused(tmp_path: Path) -> None:
    path, _ = saved(tmp_path)
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])
    with pytest.raises(IndexFileError):
        load_arrays(path)
    path.write_bytes(b"")
    with pytest.raises(IndexFileError):
        load_arrays(path)
    path.write_bytes(b"RECSEG01" + (10).to_bytes(8, "little") + b"not json!!")
    with pytest.raises(IndexFileError, match="not a recengine index file"):
        load_arrays(path)
    with pytest.raises(IndexFileError):
        load_arrays(tmp_path / "missing.idx")


def test_inconsistent_parts_are_refused(tmp_path: Path) -> None:
    _, view = saved(tmp_path)
    arrays = layered.view_arrays(view)
    broken = {**arrays, "p0.alive": arrays["p0.alive"][:-1]}
    with pytest.raises(ValueError, match="alive"):
        layered.view_from_arrays(broken, 8)
    shuffled = {**arrays, "p1.ids": arrays["p1.ids"][::-1].copy()}
    with pytest.raises(ValueError, match="ascending"):
        layered.view_from_arrays(shuffled, 8)
    with pytest.raises(ValueError, match="unexpected"):
        layered.view_from_arrays({**arrays, "x": arrays["p0.ids"]}, 8)
