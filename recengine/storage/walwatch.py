"""Change notifications on SQLite: the write-ahead log's index header, read without a query.

PostgreSQL tells listening workers of every commit (:mod:`recengine.storage.notify`); SQLite
has no such channel, so its workers read the change sequence before every answer, and the
event loop cannot send a stored answer without waiting on the database (``web.server.http.hits``).
But in WAL mode (``storage.db`` sets it on every connection) every commit rewrites the *WAL-index
header* at the start of the database's ``-shm`` file, the shared memory through which SQLite's
own connections learn that another one committed: two copies of a 48-byte header whose change
counter, last frame and salts move with every transaction (``sqlite3/src/wal.c``,
``WalIndexHdr``; a checkpoint that changes no data leaves them be). Reading those 96 bytes
(one ``pread``, plus one ``stat`` to notice a file replaced) costs microseconds, where the
position query costs a session and a statement.

:class:`WalWatch` compares the header with the one seen at the previous look and, when it moved
(or cannot be read: no ``-shm`` file, a file replaced, a write caught half-way, which SQLite's
readers also detect by the two copies differing), calls ``on_change``: the index followers then
check the position before their next answer, exactly as after a PostgreSQL notification.
``look`` runs in the readers' own threads before a follower decides whether it may skip its
check (``Follower.follow_notifications``): there is no thread and nothing is polled while no
request comes. Under its lock, ``on_change`` has returned before any other reader can see the
new header as unchanged, so a reader that starts after a commit always checks.

Limits, where the watch reports itself not live and the followers read the position before
every answer as without it: an in-memory or ``file:`` URI database, a missing ``-shm`` file
(no connection open yet; the next look tries again).
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from pathlib import Path

from recengine.storage.db import sqlite_path

HEADER_BYTES = 48  # one copy of WalIndexHdr; two copies sit back to back at offset 0


def watched_file(url: str) -> Path | None:
    """The ``-shm`` file of the SQLite database at ``url`` (None: not a SQLite file)."""
    path = sqlite_path(url)
    return None if path is None else path.resolve().with_name(path.name + "-shm")


class WalWatch:
    """The WAL-index header of one SQLite database, looked at on demand (module docstring).

    Args:
        path: the database's ``-shm`` file (:func:`watched_file`).
        on_change: called (in the looking thread, under the watch's lock) when the header
            moved since the last look, or could not be read; keep it short.
    """

    def __init__(self, path: Path, on_change: Callable[[], None]) -> None:
        self.path = path
        self.on_change = on_change
        self._lock = threading.Lock()
        self._fd: int | None = None
        self._inode: tuple[int, int] | None = None
        self._last: bytes | None = None  # the header of the last look (None: unreadable)

    @property
    def live(self) -> bool:
        """The last look read a valid header: changes since then will be seen."""
        return self._last is not None

    def look(self) -> bool:
        """Read the header; tell ``on_change`` if it moved. Returns :attr:`live`."""
        with self._lock:
            header = self._read()
            if header is None or header != self._last:
                self.on_change()
            self._last = header
            return header is not None

    def close(self) -> None:
        with self._lock:
            self._reopen(None)
            self._last = None

    def _read(self) -> bytes | None:
        """Both copies of the header when they agree and say it is initialised, else None."""
        try:
            st = os.stat(self.path)
            if (st.st_dev, st.st_ino) != self._inode:  # first look, or the file was replaced
                self._reopen(os.open(self.path, os.O_RDONLY | getattr(os, "O_CLOEXEC", 0)))
                self._inode = (st.st_dev, st.st_ino)
            assert self._fd is not None
            raw = os.pread(self._fd, 2 * HEADER_BYTES, 0)
        except OSError:
            self._reopen(None)
            return None
        first, second = raw[:HEADER_BYTES], raw[HEADER_BYTES:]
        initialised = len(raw) == 2 * HEADER_BYTES and raw[12] == 1  # isInit
        return first if initialised and first == second else None

    def _reopen(self, fd: int | None) -> None:
        if self._fd is not None:
            os.close(self._fd)
        self._fd = fd
        if fd is None:
            self._inode = None
