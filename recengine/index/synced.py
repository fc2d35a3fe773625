"""A process's near-duplicate index kept in step with SQL, the source of truth.

Each process (a gunicorn worker, the ingest command) holds one :class:`SyncedIndex`. Before it
answers, :meth:`SyncedIndex.sync` brings it to the database's current change sequence:

1. first use: load the file in ``data_dir``; check that it was built from this database, for the
   active model version and radius, and is not ahead of the database; otherwise (missing,
   unreadable, corrupt, foreign) rebuild from SQL;
2. when the active model version changed (a reindex switched), rebuild from SQL;
3. apply every article change with ``articles.seq > index seq`` (new and changed fingerprints
   replace old ones; deleted articles and articles without features are removed), then take the
   database's sequence number as the index's;
4. after a load, compare the number of indexed articles with SQL's count (a file that lost
   entries is rebuilt, never trusted blindly).

Why this converges: writers take sequence numbers under one row lock and commit in that order
(``storage.state.begin_write``), so once a reader sees sequence S, every change up to S is
visible to it, and "changed since S" misses nothing. Every process applies the same changes to
the same start state, so all processes answer from the same set of fingerprints.

Delay: with ``refresh_interval = 0`` (the default) every answer is preceded by a sync (one
indexed read of the state row, plus the changed rows if any): a write committed through one
worker is seen by the next request to any worker. A positive interval skips the check for that
many seconds, trading a bounded staleness for fewer queries.

Changes made inside a write transaction that is not committed yet are applied too (the ingest
needs them to cluster a batch). Use :meth:`SyncedIndex.pending` around such a transaction: if
it rolls back, the in-memory index is dropped (it would hold changes that never happened) and
reloaded on next use. The file is only written from committed state (:meth:`SyncedIndex.save`).
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

import numpy as np

from recengine.index.neardup import NearDupIndex
from recengine.index.store import IndexFileError, IndexMeta, load, save


@dataclass(frozen=True)
class SourcePosition:
    """Where the database is: its change sequence, active model version and identity."""

    seq: int
    model_version: int | None
    source: str


class FingerprintSource(Protocol):
    """What the index needs from the database (``storage.fingerprints`` implements it)."""

    def position(self) -> tuple[int, int | None, str]:
        """``(seq, active model version or None, database identity)``."""
        ...

    def scan(self, version: int) -> Iterable[tuple[Sequence[int], Sequence[int]]]:
        """Batches of ``(ids, fingerprints)`` of every live article with features."""
        ...

    def changes_since(
        self, seq: int, version: int
    ) -> Iterable[tuple[Sequence[int], Sequence[int | None]]]:
        """Batches of ``(ids, fingerprints)`` of articles with ``seq`` above the given one;
        ``None`` for a deleted article or one without features under ``version``."""
        ...

    def count(self, version: int) -> int:
        """How many articles :meth:`scan` yields."""
        ...


@dataclass
class SyncStats:
    loads: int = 0
    rebuilds: int = 0
    applied: int = 0


class SyncedIndex:
    """The process's near-duplicate index, brought up to date with SQL before answers.

    Args:
        path: the index file (in ``settings.data_dir``); None keeps it in memory only.
        k: the largest radius the index answers.
        refresh_interval: seconds a sync stays valid (0: check before every answer).
        save_after: changes applied since the last save after which :meth:`sync` saves the
            file (only outside :meth:`pending`).
    """

    def __init__(
        self,
        path: Path | None,
        k: int,
        refresh_interval: float = 0.0,
        save_after: int = 10_000,
    ) -> None:
        self.path = path
        self.k = k
        self.refresh_interval = refresh_interval
        self.save_after = save_after
        self.stats = SyncStats()
        self._index: NearDupIndex | None = None
        self._meta: IndexMeta | None = None
        self._synced_at = float("-inf")
        self._unsaved = 0
        self._pending = 0

    @property
    def meta(self) -> IndexMeta | None:
        return self._meta

    def sync(self, source: FingerprintSource, force: bool = True) -> NearDupIndex:
        """The index, caught up with ``source``'s current position.

        Args:
            source: the database, read inside the caller's transaction.
            force: sync even when the last sync is younger than ``refresh_interval``.
        """
        now = time.monotonic()
        fresh = now - self._synced_at < self.refresh_interval
        if self._index is not None and not force and fresh:
            return self._index
        pos = SourcePosition(*source.position())
        if pos.model_version is None:
            self._index, self._meta = NearDupIndex(self.k), None
            return self._index
        if self._index is None or self._meta is None:
            self._open(source, pos)
        elif self._meta.model_version != pos.model_version or self._meta.source != pos.source:
            self._rebuild(source, pos)
        self._catch_up(source, pos)
        self._synced_at = now
        if not self._pending and self._unsaved >= self.save_after:
            self.save()
        assert self._index is not None
        return self._index

    @contextmanager
    def pending(self) -> Iterator[None]:
        """Wrap a write transaction whose changes the index is synced with before commit."""
        self._pending += 1
        try:
            yield
        except BaseException:
            self.invalidate()
            raise
        finally:
            self._pending -= 1

    def invalidate(self) -> None:
        """Forget the in-memory index (reloaded from file / SQL at the next sync)."""
        self._index, self._meta, self._synced_at = None, None, float("-inf")

    def save(self) -> None:
        """Write the current (committed) state to the file, atomically."""
        if self.path is None or self._index is None or self._meta is None:
            return
        save(self.path, self._index, self._meta)
        self._unsaved = 0

    # -- internals ---------------------------------------------------------------------------

    def _open(self, source: FingerprintSource, pos: SourcePosition) -> None:
        assert pos.model_version is not None
        try:
            if self.path is None:
                raise IndexFileError("no index file")
            index, meta = load(self.path)
            if (meta.source, meta.model_version, meta.k) != (pos.source, pos.model_version, self.k):
                raise IndexFileError("built for another database, model version or radius")
            if meta.seq > pos.seq:
                raise IndexFileError("ahead of the database (restored from a backup?)")
        except IndexFileError:
            self._rebuild(source, pos)
            return
        self._index, self._meta = index, meta
        self.stats.loads += 1
        self._catch_up(source, pos)
        if len(index) != source.count(pos.model_version):
            self._rebuild(source, pos)

    def _rebuild(self, source: FingerprintSource, pos: SourcePosition) -> None:
        assert pos.model_version is not None
        id_parts, fp_parts = [np.zeros(0, np.int64)], [np.zeros(0, np.uint64)]
        for ids, fps in source.scan(pos.model_version):
            id_parts.append(np.asarray(ids, dtype=np.int64))
            fp_parts.append(np.asarray(fps, dtype=np.uint64))
        index = NearDupIndex(self.k)
        index.add(np.concatenate(id_parts), np.concatenate(fp_parts))
        self._index = index
        self._meta = IndexMeta(pos.seq, pos.model_version, pos.source, self.k)
        self.stats.rebuilds += 1
        self._unsaved = self.save_after if not self._pending else self._unsaved

    def _catch_up(self, source: FingerprintSource, pos: SourcePosition) -> None:
        assert self._index is not None and self._meta is not None
        assert pos.model_version is not None
        if pos.seq == self._meta.seq:
            return
        for ids, fps in source.changes_since(self._meta.seq, pos.model_version):
            present = [(i, f) for i, f in zip(ids, fps, strict=True) if f is not None]
            self._index.remove(
                np.asarray([i for i, f in zip(ids, fps, strict=True) if f is None], dtype=np.int64)
            )
            if present:
                self._index.add(
                    np.asarray([i for i, _ in present], dtype=np.int64),
                    np.asarray([f for _, f in present], dtype=np.uint64),
                )
            self._unsaved += len(ids)
            self.stats.applied += len(ids)
        self._meta = IndexMeta(pos.seq, pos.model_version, pos.source, self.k)
