"""Segment files: one file per segment, memory-mapped on load so processes share the pages.

Layout: ``b"RECSEG01"``, a little-endian ``uint64`` header length, a UTF-8 JSON header, then
each array at a 64-byte aligned offset. The header lists every array (name, dtype, shape,
offset, byte length, CRC-32) and the caller's ``meta`` (which model version and change
sequence the segment reflects). A file is written under a temporary name, flushed to disk and
renamed into place, so readers see the old file or the whole new one, never half of it.

Loading checks the magic, the header, every array's bounds and CRC-32 and the segment's
structure, and raises :class:`CorruptSegment` on any mismatch: a damaged file is rebuilt,
never trusted. The CRC pass reads the whole file once (about 1 s per GB), which also warms
the page cache that every server process then shares through its read-only mapping.
"""

from __future__ import annotations

import json
import struct
import zlib
from pathlib import Path
from typing import Any

import numpy as np

from recengine.files import atomic_write
from recengine.index.segment import Segment

MAGIC = b"RECSEG01"
ALIGN = 64


class CorruptSegment(ValueError):
    """A segment file is missing pieces, damaged or not a segment file."""


def save_segment(segment: Segment, path: Path, meta: dict[str, Any]) -> None:
    """Write ``segment`` to ``path`` atomically (temporary file, fsync, rename)."""
    arrays = segment.arrays()
    entries, offset = [], 0
    for name, array in arrays.items():
        data = np.ascontiguousarray(array)
        entries.append(
            {
                "name": name,
                "dtype": data.dtype.str,
                "shape": list(data.shape),
                "offset": offset,
                "nbytes": data.nbytes,
                "crc32": zlib.crc32(data.data.cast("B")),
            }
        )
        offset += _aligned(data.nbytes)
    header = json.dumps(
        {"index_terms": segment.index_terms, "meta": meta, "arrays": entries}
    ).encode("utf-8")
    start = _aligned(len(MAGIC) + 8 + len(header))
    with atomic_write(path) as out:
        out.write(MAGIC + struct.pack("<Q", len(header)) + header)
        out.write(b"\0" * (start - out.tell()))
        for entry, array in zip(entries, arrays.values(), strict=True):
            out.seek(start + int(entry["offset"]))
            out.write(np.ascontiguousarray(array).data.cast("B"))
        out.truncate(start + _end(entries))


def load_segment(path: Path, verify: bool = True) -> tuple[Segment, dict[str, Any]]:
    """Map a segment file read-only; returns the segment and its ``meta``.

    Raises:
        CorruptSegment: the file is not a complete, undamaged segment file.
        OSError: it cannot be read at all (e.g. missing).
    """
    if path.stat().st_size < len(MAGIC) + 8:
        raise CorruptSegment(f"{path}: too short to be a segment file")
    raw = np.memmap(path, dtype=np.uint8, mode="r")
    header = _header(raw, path)
    start = _aligned(len(MAGIC) + 8 + int(struct.unpack_from("<Q", raw.data, len(MAGIC))[0]))
    if len(raw) != start + _end(header["arrays"]):
        raise CorruptSegment(f"{path}: {len(raw)} bytes, the header describes another size")
    arrays: dict[str, Any] = {}
    for entry in header["arrays"]:
        begin, size = start + int(entry["offset"]), int(entry["nbytes"])
        if begin + size > len(raw):
            raise CorruptSegment(f"{path}: array {entry['name']} runs past the end of the file")
        chunk = raw[begin : begin + size]
        if verify and zlib.crc32(chunk.data) != entry["crc32"]:
            raise CorruptSegment(f"{path}: array {entry['name']} fails its CRC-32 check")
        try:
            arrays[entry["name"]] = chunk.view(np.dtype(entry["dtype"])).reshape(entry["shape"])
        except (TypeError, ValueError) as exc:
            raise CorruptSegment(f"{path}: array {entry['name']}: {exc}") from None
    try:
        segment = Segment(index_terms=int(header["index_terms"]), **arrays)
    except TypeError as exc:
        raise CorruptSegment(f"{path}: {exc}") from None
    check_segment(segment, path)
    return segment, dict(header["meta"])


def _header(raw: np.memmap[Any, np.dtype[np.uint8]], path: Path) -> dict[str, Any]:
    if len(raw) < len(MAGIC) + 8 or bytes(raw[: len(MAGIC)]) != MAGIC:
        raise CorruptSegment(f"{path}: not a recengine segment file")
    (length,) = struct.unpack_from("<Q", raw.data, len(MAGIC))
    if len(MAGIC) + 8 + length > len(raw):
        raise CorruptSegment(f"{path}: truncated header")
    try:
        header = json.loads(bytes(raw[len(MAGIC) + 8 : len(MAGIC) + 8 + length]))
    except ValueError as exc:
        raise CorruptSegment(f"{path}: unreadable header ({exc})") from None
    if not isinstance(header, dict) or {"arrays", "meta", "index_terms"} - header.keys():
        raise CorruptSegment(f"{path}: header lacks arrays, meta or index_terms")
    return header


def check_segment(seg: Segment, where: object = "segment") -> None:
    """Raise :class:`CorruptSegment` unless the arrays fit together (cheap, O(n + V))."""
    n, v = len(seg.ids), len(seg.terms)
    problems = []
    for name in ("fingerprints", "published", "category"):
        if len(getattr(seg, name)) != n:
            problems.append(f"{name} length")
    for name, size, values in (
        ("tag_indptr", n, len(seg.tag_hashes)),
        ("vec_indptr", n, len(seg.vec_cols)),
        ("post_indptr", v, len(seg.post_rows)),
    ):
        ptr = getattr(seg, name)
        if len(ptr) != size + 1 or ptr[0] != 0 or ptr[-1] != values or np.any(np.diff(ptr) < 0):
            problems.append(f"{name} bounds")
    if len(seg.vec_weights) != len(seg.vec_cols) or len(seg.post_weights) != len(seg.post_rows):
        problems.append("weights length")
    if len(seg.vec_cols) and (seg.vec_cols.min() < 0 or seg.vec_cols.max() >= v):
        problems.append("vec_cols out of range")
    if len(seg.post_rows) and (seg.post_rows.min() < 0 or seg.post_rows.max() >= n):
        problems.append("post_rows out of range")
    if n > 1 and np.any(np.diff(seg.ids) <= 0):
        problems.append("ids not ascending")
    if problems:
        raise CorruptSegment(f"{where}: inconsistent arrays: {', '.join(problems)}")


def _end(entries: list[dict[str, Any]]) -> int:
    """Where the last array ends, relative to the first (no padding after it)."""
    return max((int(e["offset"]) + int(e["nbytes"]) for e in entries), default=0)


def _aligned(size: int) -> int:
    return -(-size // ALIGN) * ALIGN
