"""A near-duplicate index on disk, with the record of what it reflects, checked on every load.

File layout (little-endian)::

    b"RECNDUP1"  magic + format version
    <u4          header length H
    H bytes      JSON header: seq, model_version, source, k, count, blake2b of the body
    body         count x <i8 ids, then count x <u8 fingerprints (sorted by id)

Only the live ``(id, fingerprint)`` arrays are stored, not FAISS's hash tables: rebuilding the
tables from the arrays costs about as much as reading serialised tables would (both are linear),
and the file stays small (16 bytes per article) and independent of the FAISS version.

Saving writes a temporary file in the same folder, fsyncs it and renames it over the old one, so
a reader (another worker process) sees either the old file or the new one, never half of one,
and a crash while saving leaves the old file. A file that is truncated, has a wrong checksum or
an unknown format raises :class:`IndexFileError`: the caller rebuilds from SQL.
"""

from __future__ import annotations

import hashlib
import json
import struct
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from recengine.files import atomic_write
from recengine.index.neardup import NearDupIndex

MAGIC = b"RECNDUP1"


class IndexFileError(Exception):
    """The index file is missing, unreadable or inconsistent (rebuild it from SQL)."""


@dataclass(frozen=True)
class IndexMeta:
    """What an index file reflects.

    Attributes:
        seq: the change sequence (``articles.seq``) the index includes everything up to.
        model_version: the IDF model version whose fingerprints it holds.
        source: an identifier of the database it was built from (never a password).
        k: the radius it was built for.
    """

    seq: int
    model_version: int
    source: str
    k: int


def save(path: Path, index: NearDupIndex, meta: IndexMeta) -> None:
    """Write ``index`` and ``meta`` to ``path`` atomically (temp file, fsync, rename)."""
    ids, fps = index.arrays()
    body = ids.astype("<i8").tobytes() + fps.astype("<u8").tobytes()
    header = json.dumps(
        {
            **meta.__dict__,
            "count": len(ids),
            "blake2b": hashlib.blake2b(body, digest_size=16).hexdigest(),
        }
    ).encode()
    with atomic_write(path) as handle:
        handle.write(MAGIC + struct.pack("<I", len(header)) + header)
        handle.write(body)


def load(path: Path) -> tuple[NearDupIndex, IndexMeta]:
    """Read an index file written by :func:`save`.

    Raises:
        IndexFileError: missing, truncated, corrupt (checksum) or of another format.
    """
    try:
        blob = path.read_bytes()
    except OSError as exc:
        raise IndexFileError(f"cannot read {path}: {exc}") from exc
    header = _header(blob, path)
    count = header["count"]
    start = len(MAGIC) + 4 + header["_length"]
    body = memoryview(blob)[start:]
    if len(body) != 16 * count:
        raise IndexFileError(f"{path}: {len(body)} body bytes, expected {16 * count}")
    if hashlib.blake2b(body, digest_size=16).hexdigest() != header["blake2b"]:
        raise IndexFileError(f"{path}: checksum mismatch")
    ids = np.frombuffer(body, dtype="<i8", count=count).astype(np.int64)
    fps = np.frombuffer(body, dtype="<u8", count=count, offset=8 * count).astype(np.uint64)
    meta = IndexMeta(
        seq=int(header["seq"]),
        model_version=int(header["model_version"]),
        source=str(header["source"]),
        k=int(header["k"]),
    )
    index = NearDupIndex(meta.k)
    try:
        index.add(ids, fps)
    except ValueError as exc:
        raise IndexFileError(f"{path}: {exc}") from exc
    return index, meta


def _header(blob: bytes, path: Path) -> dict[str, Any]:
    if blob[: len(MAGIC)] != MAGIC or len(blob) < len(MAGIC) + 4:
        raise IndexFileError(f"{path}: not a recengine near-duplicate index file")
    (length,) = struct.unpack_from("<I", blob, len(MAGIC))
    raw = blob[len(MAGIC) + 4 : len(MAGIC) + 4 + length]
    try:
        header: dict[str, Any] = json.loads(raw)
        for key, kind in (("seq", int), ("model_version", int), ("k", int), ("count", int)):
            if not isinstance(header[key], kind):
                raise TypeError(key)
        str(header["source"]), str(header["blake2b"])
    except (ValueError, KeyError, TypeError) as exc:
        raise IndexFileError(f"{path}: unreadable header ({exc})") from exc
    header["_length"] = length
    return header
