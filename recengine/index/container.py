"""The file every derived index is saved in: named arrays, memory-mapped on load, checked.

Layout (little-endian)::

    b"RECIDX01"     magic + format version
    <u8             header length H
    <u4             CRC-32 of the header and its padding
    H bytes         UTF-8 JSON header: kind, database, version, seq, params, the CRC-32 of the
                    body, and per array its name, dtype, shape, offset and byte length
    padding         zeros, to a 64-byte boundary
    body            the arrays, each at a 64-byte aligned offset (relative to the body)

The header says what the file is the index *of*: which index ``kind`` (``neardup``, ``related``,
...), which ``database`` (the identity stored in SQL, ``engine_state.database_id``), which IDF
model ``version``, the change sequence ``seq`` it reflects everything up to, and the kind's
``params`` (radius, postings per article, ...) it was built with. A follower loads a file only
when all of them match what it needs (``index.follower``).

A file is written under a temporary name, flushed to disk and renamed into place
(``files.atomic_write``), so a reader sees the old file or the whole new one. Loading maps the
file read-only (processes share the page cache) and checks the magic, both CRC-32s (every byte
of the file is covered) and every array's bounds: anything wrong raises
:class:`IndexFileError`, and the caller rebuilds from SQL instead of trusting the file. The CRC
pass reads the file once (about 1 s per GB), which also warms the page cache every process
then shares.

Files live in one folder per kind, named ``<kind>-v<version>-s<seq>.idx`` so that the newest
file of a version is found from the names alone (:func:`saved_files`).
"""

from __future__ import annotations

import json
import struct
import zlib
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from recengine.files import atomic_write

MAGIC = b"RECIDX01"
PREFIX = struct.Struct("<QI")  # header length, header CRC-32
ALIGN = 64
SUFFIX = ".idx"

Arrays = dict[str, npt.NDArray[Any]]


class IndexFileError(ValueError):
    """An index file is missing, unreadable, damaged or not an index file (rebuild from SQL)."""


@dataclass(frozen=True)
class FileHeader:
    """What a file is the index of (see the module docstring)."""

    kind: str
    database: str
    version: int
    seq: int
    params: dict[str, Any] = field(default_factory=dict)


def index_path(directory: Path, header: FileHeader) -> Path:
    """Where the file of ``header`` goes in ``directory``."""
    return directory / f"{header.kind}-v{header.version:09d}-s{header.seq:015d}{SUFFIX}"


def saved_files(directory: Path, kind: str, version: int | None = None) -> list[Path]:
    """Files of ``kind`` in ``directory`` (of one ``version`` if given), newest first."""
    pattern = f"{kind}-v{'*' if version is None else f'{version:09d}'}-s*{SUFFIX}"
    return sorted(directory.glob(pattern), reverse=True)


def save_arrays(path: Path, header: FileHeader, arrays: Mapping[str, npt.NDArray[Any]]) -> None:
    """Write ``arrays`` with ``header`` to ``path`` atomically (temporary file, fsync, rename)."""
    contiguous = {name: np.ascontiguousarray(a) for name, a in arrays.items()}
    entries: list[dict[str, Any]] = []
    offset, body_crc = 0, 0
    for name, data in contiguous.items():
        entries.append(
            {
                "name": name,
                "dtype": data.dtype.str,
                "shape": list(data.shape),
                "offset": offset,
                "nbytes": data.nbytes,
            }
        )
        padded = _aligned(data.nbytes)
        body_crc = zlib.crc32(data.data.cast("B"), body_crc) if data.nbytes else body_crc
        if entries and len(entries) < len(contiguous):
            body_crc = zlib.crc32(bytes(padded - data.nbytes), body_crc)
        offset += padded
    meta = {**asdict(header), "body_crc32": body_crc, "arrays": entries}
    blob = json.dumps(meta).encode("utf-8")
    start = _aligned(len(MAGIC) + PREFIX.size + len(blob))
    head = blob + bytes(start - len(MAGIC) - PREFIX.size - len(blob))
    with atomic_write(path) as out:
        out.write(MAGIC + PREFIX.pack(len(blob), zlib.crc32(head)) + head)
        for entry, data in zip(entries, contiguous.values(), strict=True):
            out.seek(start + int(entry["offset"]))
            if data.nbytes:
                out.write(data.data.cast("B"))
        out.truncate(start + _end(entries))


def load_arrays(path: Path, verify: bool = True) -> tuple[FileHeader, Arrays]:
    """Map an index file read-only; returns its header and its arrays (plain ``ndarray`` views
    of the mapping).

    Args:
        verify: check the body's CRC-32 (reads the whole file once).

    Raises:
        IndexFileError: missing, unreadable, truncated, damaged (CRC) or of another format.
    """
    try:
        if path.stat().st_size < len(MAGIC) + PREFIX.size:
            raise IndexFileError(f"{path}: too short to be an index file")
        raw = np.memmap(path, dtype=np.uint8, mode="r")
    except OSError as exc:
        raise IndexFileError(f"cannot read {path}: {exc}") from exc
    header, meta, start = _header(raw, path)
    try:
        entries = meta["arrays"]
        end = start + _end(entries)
        if len(raw) != end:
            raise IndexFileError(f"{path}: {len(raw)} bytes, the header describes {end}")
        if verify and zlib.crc32(raw[start:end].data) != meta["body_crc32"]:
            raise IndexFileError(f"{path}: the arrays fail their CRC-32 check")
        # plain ndarray views of the mapping (it stays mapped while any of them lives):
        # slicing a np.memmap runs Python code per slice (__getitem__, __array_finalize__),
        # ~80 slices per related list
        plain = raw.view(np.ndarray)
        arrays: Arrays = {}
        for entry in entries:
            begin, nbytes = start + int(entry["offset"]), int(entry["nbytes"])
            chunk = plain[begin : begin + nbytes]
            dtype = np.dtype(entry["dtype"])
            arrays[str(entry["name"])] = chunk.view(dtype).reshape(entry["shape"])
    except (KeyError, TypeError, ValueError) as exc:
        if isinstance(exc, IndexFileError):
            raise
        raise IndexFileError(f"{path}: bad array description ({exc})") from None
    return header, arrays


def _header(raw: npt.NDArray[np.uint8], path: Path) -> tuple[FileHeader, dict[str, Any], int]:
    if bytes(raw[: len(MAGIC)]) != MAGIC:
        raise IndexFileError(f"{path}: not a recengine index file")
    length, crc = PREFIX.unpack_from(raw.data, len(MAGIC))
    first = len(MAGIC) + PREFIX.size
    start = _aligned(first + length)
    if start > len(raw):
        raise IndexFileError(f"{path}: truncated header")
    if zlib.crc32(raw[first:start].data) != crc:
        raise IndexFileError(f"{path}: the header fails its CRC-32 check")
    try:
        meta = json.loads(bytes(raw[first : first + length]))
        header = FileHeader(
            kind=str(meta["kind"]),
            database=str(meta["database"]),
            version=_int(meta["version"]),
            seq=_int(meta["seq"]),
            params=dict(meta["params"]),
        )
    except (ValueError, KeyError, TypeError) as exc:
        raise IndexFileError(f"{path}: unreadable header ({exc})") from None
    return header, meta, start


def _int(value: Any) -> int:
    if not isinstance(value, int) or isinstance(value, bool):
        raise TypeError(f"expected an integer, got {value!r}")
    return value


def _end(entries: list[dict[str, Any]]) -> int:
    """Where the last array ends, relative to the first (no padding after it)."""
    return max((int(e["offset"]) + int(e["nbytes"]) for e in entries), default=0)


def _aligned(size: int) -> int:
    return -(-size // ALIGN) * ALIGN
