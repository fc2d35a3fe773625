"""One process's copy of a derived index, kept in step with SQL: the same state machine for
every index kind (``index.kind``).

Before the index answers, :meth:`Follower.sync` brings it to the database's position (read in
the caller's transaction):

1. **first use, or a model switch** (the active IDF model version is not the one held; a
   reindex switched): *open* the version. That is one path: the newest saved file of this kind,
   database, version and parameters that is not ahead of the database is loaded (memory-mapped,
   checksums verified) and caught up; otherwise the process takes the kind's build lock (a file
   lock: one process builds, the others wait and then load its file), looks again, and builds
   from SQL in short read transactions of its own (``RowReader.separately``), **outside the
   caller's transaction**, so a writer waiting here never holds the writers' lock while a
   whole index is read; then saves the file. A reindex publishes the new version's file right
   after its switch, so servers load it instead of building. An index made elsewhere from
   the same rows (:meth:`Follower.seed`: a reindex's passage index, of what its workers
   computed) is taken before any file, and checked like one;
2. **after a load**, the number of indexed articles is compared with SQL's count (a file that
   lost entries is rebuilt, never trusted blindly);
3. **catch-up**: every article change with ``seq`` above the held one and up to the position is
   applied (the latest row of each article: removed when deleted or without features, added or
   replaced otherwise); the held sequence becomes the position's.

Why this converges: writers take sequence numbers under one row lock and commit in that order
(``storage.state.begin_write``), so once a reader sees sequence S every change up to S is
visible to it, and "changed since S" misses nothing. A build reads its position first and its
pages afterwards, so rows that change during the build are applied again by the catch-up (the
latest state of an article wins, so applying it twice changes nothing). Every process applies
the same changes to the same start state and ends with the same index.

**Delay.** ``interval`` (``index.sync_interval_s``, one setting for every kind): seconds a read
may answer from the held index without reading the position again; 0 = before every answer (one
indexed read of the state row, plus the changed rows if any), so a write committed through one
process is in the next answer of every process. Writers always sync (``fresh=True``).
With change notifications (:meth:`Follower.follow_notifications`, PostgreSQL ``LISTEN``,
``storage.notify``) a read skips the check until a notification says the position moved (at
most ``index.listen_interval_s``): a write is then in another process's first answer after the
notification arrives (a millisecond or so after the commit), and idle readers cost no query.
On SQLite the source is looked at by the read itself (``storage.walwatch``: the WAL-index
header that every commit moves), so a commit is in every process's next answer.

**Uncommitted changes.** A writer syncs inside its write transaction so that the index includes
the batch it is writing (the near-duplicate clusters need it). Wrap such a transaction in
:meth:`Follower.pending`: if it rolls back, the held index is dropped (it holds changes that
never happened) and opened again at the next sync; files are only saved outside it.

**Background** (servers, for read-only kinds): with ``background=True`` a model switch opens
the new version in a thread while the old index keeps answering, and a due compaction runs in
a thread too; their result is swapped in at the next sync and caught up from its sequence.
"""

from __future__ import annotations

import fcntl
import logging
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Generic, TypeVar

import numpy as np

from recengine.index.container import (
    FileHeader,
    index_path,
    load_arrays,
    save_arrays,
    saved_files,
)
from recengine.index.kind import Held, IndexKind, Position, RowReader

T = TypeVar("T")
log = logging.getLogger(__name__)

SIZE_CHECK_TRIES = 3  # concurrent commits can make one count differ (PostgreSQL statements)


@dataclass(frozen=True)
class Step(Generic[T]):
    """How a sync changed the held index, for listeners (:meth:`Follower.listen`).

    ``rows`` are the change rows (the latest of each article with a ``seq`` in
    ``(from_seq, after.seq]``) applied to get ``after`` from ``before`` (or from a compacted
    copy of it at ``from_seq``, swapped in: same content); None when ``after`` was opened
    (loaded or built), which says nothing about what changed since ``before``.
    """

    before: Held[T] | None
    after: Held[T]
    from_seq: int
    rows: Sequence[Any] | None


@dataclass
class FollowerStats:
    """What a follower did: files loaded, builds from SQL, change rows applied, files saved,
    seeds taken (:meth:`Follower.seed`)."""

    loads: int = 0
    rebuilds: int = 0
    applied: int = 0
    saves: int = 0
    seeded: int = 0


class Follower(Generic[T]):
    """Holds one index of ``kind`` and keeps it in step with SQL (see the module docstring).

    Args:
        kind: what the index is and how rows become it.
        directory: where its files live (``data_dir/index/<kind>``); None keeps it in memory.
        interval: seconds a read may skip the position check (``index.sync_interval_s``).
        save_after: change rows applied after which the file is saved again (outside
            :meth:`pending`); None saves only after builds and compactions.
        background: open a new version and compact in a thread while the old index answers.
        page: rows per read while building or catching up.
        keep_files: files of this kind kept in ``directory`` (older ones are deleted).
    """

    def __init__(
        self,
        kind: IndexKind[T],
        directory: Path | None,
        *,
        interval: float = 0.0,
        save_after: int | None = 10_000,
        background: bool = False,
        page: int = 5_000,
        keep_files: int = 2,
    ) -> None:
        self.kind = kind
        self.directory = directory
        self.interval = interval
        self.save_after = save_after
        self.background = background
        self.page = page
        self.keep_files = keep_files
        self.stats = FollowerStats()
        self._held: Held[T] | None = None
        self._adopt: Held[T] | None = None
        self._seed: Held[T] | None = None
        self._lock = threading.RLock()
        self._checked_at = -float("inf")
        self._unsaved = 0
        self._pending = 0
        self._worker: threading.Thread | None = None
        self._build_locks = 0
        self._lock_file: Any = None
        self._listeners: list[Callable[[Step[T]], None]] = []
        self.position: Position | None = None  # the last one read
        self.position_reads = 0
        self._notifications: Callable[[], bool] | None = None
        self._notified_interval = 0.0
        self._generation = 0  # notifications received
        self._checked_generation = -1  # notifications received before the last check
        self._due_for: tuple[T, bool] | None = None  # the last index asked about compaction

    @property
    def held(self) -> Held[T] | None:
        return self._held

    # -- following SQL -----------------------------------------------------------------------

    def sync(
        self, reader: RowReader, *, version: int | None = None, fresh: bool = True
    ) -> Held[T] | None:
        """The index (with what it reflects), caught up with ``reader``'s position; None while
        there is no model.

        Args:
            reader: the database, read in the caller's transaction.
            version: follow this model version instead of the active one (a reindex building
                the next version before its switch).
            fresh: check the position even when the last check is younger than ``interval``.
        """
        held = self._held
        skip = not fresh and version is None and held is not None
        if skip and self._may_skip():
            return held
        with self._lock:
            generation = self._generation
            pos = Position(*reader.position())
            self.position = pos
            self.position_reads += 1
            self._checked_at = time.monotonic()
            self._checked_generation = generation
            target = pos.version if version is None else version
            if target is None:
                return None
            before = self._held
            self._take_adopted(target, pos.database)
            held = self._held
            opened = False
            if held is None or (held.version, held.database) != (target, pos.database):
                if held is not None and self.background and version is None:
                    self._start(lambda: self._open_in_background(reader, target))
                    return held  # the old model's index answers until the new one is in
                held, opened = self._open(reader, pos, target), True
            from_seq = held.seq
            rows: list[Any] = []
            if held.seq < pos.seq:
                held, rows = self._catch_up(reader, held, pos.seq)
            if held is not before:
                self._tell(Step(before, held, from_seq, None if opened else rows))
            self._held = held
            self._maintain()
            return self._held

    def held_if_fresh(self) -> Held[T] | None:
        """What ``sync(reader, fresh=False)`` would return without reading SQL, when no check is
        due (None: one is, or nothing is held yet). For callers that may not wait on the
        database (the worker's event loop, ``web.server.http.hits``): they answer from exactly what
        a reader on a thread would answer from at that moment."""
        held = self._held
        if held is None or not self._may_skip():
            return None
        return held

    def follow_notifications(self, live: Callable[[], bool], interval: float) -> None:
        """Change notifications reach this follower (:meth:`notified`) while ``live()``: reads
        then skip the position check until one arrives, for at most ``interval`` seconds
        (``storage.notify``, ``storage.walwatch``; while not live, ``interval`` of the
        constructor applies). ``live()`` is asked before each skip, and may itself call
        :meth:`notified` (a source looked at on demand)."""
        self._notifications, self._notified_interval = live, interval

    def notified(self) -> None:
        """The database's position may have moved: the next read checks it."""
        self._generation += 1

    def _may_skip(self) -> bool:
        age = time.monotonic() - self._checked_at
        if age < self.interval:
            return True
        live = self._notifications
        # live() first: a source that is looked at on demand (SQLite's WAL watch) reports a
        # change from inside it, and the generation must be compared after that
        return (
            live is not None
            and age < self._notified_interval
            and live()
            and self._checked_generation == self._generation
        )

    def listen(self, listener: Callable[[Step[T]], None]) -> None:
        """Call ``listener`` with every change of the held index, before readers can see it
        (under the follower's lock: keep it short; an exception is logged, not raised)."""
        self._listeners.append(listener)

    def _tell(self, step: Step[T]) -> None:
        for listener in self._listeners:
            try:
                listener(step)
            except Exception:
                log.exception("%s index: a listener failed", self.kind.name)

    @contextmanager
    def pending(self) -> Iterator[None]:
        """Wrap a write transaction whose changes the index is synced with before commit."""
        with self._lock:
            self._pending += 1
        try:
            yield
        except BaseException:
            self.invalidate()
            raise
        finally:
            with self._lock:
                self._pending -= 1

    def rewind(self, seq: int) -> None:
        """Treat the changes after ``seq`` as not applied yet: the next sync applies them again.

        For rows that changed without a new ``seq``: a reindex writes the features of its new
        version for articles changed since ``seq`` (their ``seq`` unchanged) in the same
        transaction that syncs the index; applying a change twice changes nothing.
        """
        with self._lock:
            held = self._held
            if held is not None and held.seq > seq:
                self._held = Held(held.index, held.version, seq, held.database)

    def invalidate(self) -> None:
        """Forget the held index (opened again at the next sync)."""
        with self._lock:
            self._held, self._adopt, self._checked_at = None, None, -float("inf")
            self._seed = None

    def seed(self, index: T, *, version: int, seq: int, database: str) -> None:
        """Open ``version`` of ``database`` with ``index`` at the next sync that opens it,
        instead of a file or a build: ``index`` holds what a build as of ``seq`` would (a
        full reindex makes its passage index of what its workers computed beside the
        tokens). It is taken as a loaded file is: caught up from ``seq``, its size checked
        against SQL's count, and built from SQL instead when the count does not match."""
        with self._lock:
            self._seed = Held(index, version, seq, database)

    def save(self) -> None:
        """Save the held (committed) index to its file now."""
        with self._lock:
            if self._held is not None and not self._pending:
                self._save(self._held)

    @contextmanager
    def build_lock(self) -> Iterator[None]:
        """Hold the kind's build lock (re-entrant in this follower): other processes that need
        to open a version wait, then load the file saved meanwhile."""
        if self.directory is None:
            yield
            return
        with self._lock:
            if not self._build_locks:
                self.directory.mkdir(parents=True, exist_ok=True)
                handle = (self.directory / ".build.lock").open("a")
                fcntl.flock(handle, fcntl.LOCK_EX)
                self._lock_file = handle
            self._build_locks += 1
        try:
            yield
        finally:
            with self._lock:
                self._build_locks -= 1
                if not self._build_locks:
                    self._lock_file.close()  # closing releases the flock
                    self._lock_file = None

    def checked_at(self) -> float | None:
        """Wall-clock time of the last position check (None: never checked)."""
        if self._checked_at == -float("inf"):
            return None
        return time.time() - (time.monotonic() - self._checked_at)

    def wait(self, timeout: float | None = None) -> None:
        """Wait for background work (an open or a compaction) to finish."""
        worker = self._worker
        if worker is not None:
            worker.join(timeout)

    def report(self) -> dict[str, Any]:
        """What a health check shows: loaded, version, seq, articles, background work."""
        held = self._held
        return {
            "loaded": held is not None,
            "version": held.version if held else None,
            "seq": held.seq if held else None,
            "articles": self.kind.size(held.index) if held else 0,
            "busy": self._worker is not None and self._worker.is_alive(),
            "bytes": self.kind.nbytes(held.index) if held else 0,
            "checked_at": self.checked_at(),
            **(self.kind.describe(held.index) if held else {}),
        }

    # -- opening a version -------------------------------------------------------------------

    def _open(self, reader: RowReader, pos: Position, version: int) -> Held[T]:
        """First use and model switch: the seed, else the newest valid file, else a build
        under the lock."""
        seeded, self._seed = self._seed, None
        if seeded is not None and (seeded.version, seeded.database) == (version, pos.database):
            checked = self._checked(reader, seeded, pos, version)
            if checked is not None:
                self.stats.seeded += 1
                return checked
            log.warning("the seeded %s index does not match SQL's count: building", self.kind.name)
        loaded = self._load_checked(reader, pos, version)
        if loaded is not None:
            return loaded
        with self.build_lock():
            loaded = self._load_checked(reader, pos, version)
            if loaded is not None:
                return loaded
            with reader.separately() as own:
                start = Position(*own.position())
            built = self._build(reader, Position(start.seq, version, start.database))
            if start.version == version and not self._pending:
                self._save(built)  # only a version that is active (a reindex saves its own)
            return built

    def _load_checked(self, reader: RowReader, pos: Position, version: int) -> Held[T] | None:
        found = self._load_newest(pos.database, version, pos.seq)
        if found is None:
            return None
        held, path = found
        checked = self._checked(reader, held, pos, version)
        if checked is None:
            log.warning("%s does not match SQL's article count: deleted, rebuilding", path)
            path.unlink(missing_ok=True)
        return checked

    def _checked(
        self, reader: RowReader, held: Held[T], pos: Position, version: int
    ) -> Held[T] | None:
        """``held`` caught up with the database, or None when its size then differs from
        SQL's count of the articles it should hold."""
        for _ in range(SIZE_CHECK_TRIES):
            if held.seq < pos.seq:
                held, _ = self._catch_up(reader, held, pos.seq)
            if self.kind.size(held.index) == reader.count(
                version=version,
                needs_terms=self.kind.needs_terms,
                canonicals_only=self.kind.canonicals_only,
            ):
                return held
            pos = Position(*reader.position())
        return None

    def _load_newest(
        self, database: str, version: int, max_seq: int
    ) -> tuple[Held[T], Path] | None:
        if self.directory is None:
            return None
        wanted = (self.kind.name, database, version, self.kind.params())
        for path in saved_files(self.directory, self.kind.name, version):
            try:
                header, arrays = load_arrays(path)
                if (header.kind, header.database, header.version, header.params) != wanted:
                    log.info("ignoring %s: built for another database or parameters", path)
                    continue
                if header.seq > max_seq:
                    log.warning("ignoring %s: ahead of the database (restored backup?)", path)
                    continue
                index = self.kind.restore(arrays)
            except ValueError as exc:  # IndexFileError included: damaged, never trusted
                log.warning("deleting a damaged index file: %s", exc)
                path.unlink(missing_ok=True)
                continue
            self.stats.loads += 1
            return Held(index, version, header.seq, database), path
        return None

    def _build(self, reader: RowReader, start: Position) -> Held[T]:
        """The index of ``start.version`` from SQL, one short transaction per page."""
        assert start.version is not None
        version = start.version
        with reader.separately() as own:
            kind = self.kind.for_version(own, version)

        def pages() -> Iterator[Any]:
            last = 0
            while True:
                with reader.separately() as own:
                    rows = own.live(
                        version=version,
                        fields=kind.fields,
                        needs_terms=kind.needs_terms,
                        canonicals_only=kind.canonicals_only,
                        after_id=last,
                        limit=self.page,
                    )
                if not rows:
                    return
                yield rows
                last = rows[-1].id

        index = kind.build(pages())
        self.stats.rebuilds += 1
        return Held(index, version, start.seq, start.database)

    def _open_in_background(self, reader: RowReader, version: int) -> None:
        with reader.separately() as own:
            pos = Position(*own.position())
            held = self._open(own, pos, version)
        with self._lock:
            self._adopt = held
            self._checked_at = -float("inf")

    # -- changes -----------------------------------------------------------------------------

    def _catch_up(self, reader: RowReader, held: Held[T], upto: int) -> tuple[Held[T], list[Any]]:
        """``held`` with every change in ``(held.seq, upto]`` applied, and the rows applied
        (the latest of each article, by id)."""
        latest: dict[int, Any] = {}
        after = (held.seq + 1, -1)  # every row with a larger seq
        while True:
            rows = reader.changes(
                version=held.version,
                fields=self.kind.fields,
                needs_terms=self.kind.needs_terms,
                canonicals_only=self.kind.canonicals_only,
                after=after,
                upto=upto,
                limit=self.page,
            )
            if not rows:
                break
            latest.update((r.id, r) for r in rows)  # a later change of an id wins
            after = (rows[-1].seq, rows[-1].id)
        order = sorted(latest)
        if latest:
            drops = np.array([i for i in order if not latest[i].present], dtype=np.int64)
            upserts = [latest[i] for i in order if latest[i].present]
            index = self.kind.apply(held.index, drops, upserts)
            self.stats.applied += len(latest)
            self._unsaved += len(latest)
        else:
            index = held.index
        return Held(index, held.version, upto, held.database), [latest[i] for i in order]

    # -- saving and compaction ---------------------------------------------------------------

    def _maintain(self) -> None:
        held = self._held
        assert held is not None
        if self._adopt is not None:
            return  # a compacted index waits to be swapped in at the next sync
        if self._compaction_due(held.index):
            if self.background:
                base = held
                self._start(lambda: self._compact_in_background(base))
                return
            held = Held(self.kind.compact(held.index), held.version, held.seq, held.database)
            self._held = held
            if not self._pending:
                self._save(held)
        elif self.save_after is not None and self._unsaved >= self.save_after and not self._pending:
            self._save(held)

    def _compaction_due(self, index: T) -> bool:
        """``kind.compaction_due(index)``, asked once per index: every read syncs, and most
        find the index unchanged (the check counts live rows: ~0.4 ms per read at 1M).
        Indexes are immutable, so the answer for the same object cannot change."""
        last = self._due_for
        if last is not None and last[0] is index:
            return last[1]
        due = self.kind.compaction_due(index)
        self._due_for = (index, due)
        return due

    def _compact_in_background(self, base: Held[T]) -> None:
        compacted = Held(self.kind.compact(base.index), base.version, base.seq, base.database)
        self._save(compacted)
        with self._lock:
            cur = self._held
            if cur is not None and cur.version == base.version and cur.seq >= base.seq:
                self._adopt = compacted

    def _take_adopted(self, version: int, database: str) -> None:
        adopted, self._adopt = self._adopt, None
        if adopted is not None and (adopted.version, adopted.database) == (version, database):
            self._held = adopted  # caught up from its own seq by the caller

    def _save(self, held: Held[T]) -> None:
        """Write ``held`` to its file unless a file at least as recent exists; prune old ones."""
        self._unsaved = 0
        if self.directory is None:
            return
        header = FileHeader(
            self.kind.name, held.database, held.version, held.seq, self.kind.params()
        )
        newest = saved_files(self.directory, self.kind.name, held.version)
        if newest and newest[0].name >= index_path(self.directory, header).name:
            return  # another process saved this version at this seq or later
        try:
            save_arrays(index_path(self.directory, header), header, self.kind.arrays(held.index))
            self.stats.saves += 1
            for old in saved_files(self.directory, self.kind.name)[self.keep_files :]:
                old.unlink(missing_ok=True)  # mapped copies stay readable until unmapped
        except OSError as exc:
            log.warning(
                "could not save the %s index in %s: %s", self.kind.name, self.directory, exc
            )

    def _start(self, job: Callable[[], None]) -> None:
        if self._worker is not None and self._worker.is_alive():
            return
        self._worker = threading.Thread(target=self._run, args=(job,), daemon=True)
        self._worker.start()

    def _run(self, job: Callable[[], None]) -> None:
        try:
            job()
        except Exception:
            log.exception("%s index: background work failed (retried later)", self.kind.name)
