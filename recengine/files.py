"""Durable file replacement: a file is replaced whole or not at all, and the new one survives
a crash or power cut once the call returns.

The recipe (POSIX): write a temporary file in the same directory, flush and ``fsync`` it,
``os.replace`` it over the target (atomic: readers see the old file or the new one, never a
mix), then ``fsync`` the directory so that the rename itself is on disk. Every file recengine
keeps next to its database goes through :func:`atomic_write`: the near-duplicate index, the
related-articles segments, the reindex job record.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO, Any


@contextmanager
def atomic_write(path: Path, mode: str = "wb", encoding: str | None = None) -> Iterator[IO[Any]]:
    """Yield a handle whose content replaces ``path`` when the block ends without error.

    On an error (or ``kill -9``) the old ``path`` stays as it was; the temporary file
    (``.<name>.<random>.tmp`` in the same directory) is removed, or left for
    :func:`remove_temporaries` when the process died. The handle may seek and truncate.

    Args:
        path: the file to replace (its directory is created when missing).
        mode: ``"wb"`` or ``"w"``.
        encoding: for text mode.
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{uuid.uuid4().hex}.tmp")
    try:
        with tmp.open(mode, encoding=encoding) as handle:
            yield handle
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)
    fsync_dir(path.parent)


def remove_temporaries(folder: Path) -> None:
    """Delete what interrupted :func:`atomic_write` calls left in ``folder``."""
    for leftover in folder.glob(".*.tmp"):
        leftover.unlink(missing_ok=True)


def fsync_dir(folder: Path) -> None:
    """Make renames and deletions in ``folder`` durable; a no-op where directories cannot be
    opened (not POSIX)."""
    try:
        fd = os.open(folder, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
