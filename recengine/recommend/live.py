"""The related-articles index of one process, kept in step with SQL (the source of truth).

A :class:`Snapshot` (model version, change sequence ``seq``, an ``IndexView`` of segments) answers
queries; it is never modified, only replaced, so a query never sees half a change.

Following changes (``articles.seq``, see ``storage.state``):

* Before a query, :meth:`LiveIndex.current` reads ``engine_state`` (at most every
  ``related.sync_interval_s``; 0 = every query). Same model version, higher ``seq``: the
  articles changed in ``(snapshot.seq, state.seq]`` are read, the rows they replace are marked
  dead, and the live ones become a new small segment. A brand-new article is therefore in every
  process's answers from its next query on, with no reindex.
* More than ``max_parts`` segments: the small ones are merged into one. More than
  ``delta_max_rows`` rows outside the main segment (or a fifth of the main segment dead): all
  are merged into a new main segment, in a background thread in servers, then saved.
* A different model version (a reindex switched it): the index is rebuilt for the new
  version. With a snapshot to serve, servers rebuild in the background and keep answering
  from the old one meanwhile (changes are not applied to it: its model is gone from SQL).

Answers do not depend on how rows are spread over segments (``index.view``), so every process
that has caught up with the same ``seq`` gives the same answers. Delay for a write to show in
another process: ``sync_interval_s`` plus the catch-up (milliseconds for a few articles);
after a reindex, loading the file the reindex command saved (under a second at 1M articles)
or, without one, the build from SQL (minutes at 1M articles, ``BENCHMARKS.md``).

Persistence: the main segment is saved under ``data_dir/index/related/`` with the version and
``seq`` it reflects and the database it came from. A starting process maps the newest valid
file and catches up from its ``seq``; a missing, damaged or foreign file means a build from
SQL. A file lock makes one process build while the others wait and then load its file.
"""

from __future__ import annotations

import fcntl
import hashlib
import logging
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import numpy as np
from sqlalchemy.orm import Session, sessionmaker

from recengine.config import Settings
from recengine.errors import ModelMissing
from recengine.index.segment import Segment, build_segment, concat_rows, empty_rows
from recengine.index.segment_file import CorruptSegment, load_segment, save_segment
from recengine.index.view import IndexView, Part, SearchParams
from recengine.recommend.rows import to_rows
from recengine.storage.db import transaction
from recengine.storage.index_source import index_changes, index_rows_after
from recengine.storage.state import State, read_state

log = logging.getLogger(__name__)


@dataclass(frozen=True, eq=False)
class Snapshot:
    """What one query searches: the index of model ``version`` as of change ``seq``."""

    version: int
    seq: int
    view: IndexView

    @property
    def parts(self) -> tuple[Part, ...]:
        return self.view.parts


def search_params(settings: Settings, n_candidates: int | None = None) -> SearchParams:
    """The candidate-stage sizes of ``related`` settings (``n_candidates`` overrides theirs)."""
    r = settings.related
    return SearchParams(
        query_terms=r.query_terms,
        per_term=r.postings_per_term,
        n_candidates=r.candidates if n_candidates is None else n_candidates,
        scale_by_weight=r.scale_postings,
        min_per_term=r.min_postings_per_term,
    )


def _ones(segment: Segment) -> Part:
    return Part(segment, np.ones(len(segment), dtype=bool))


class LiveIndex:
    """Holds the current snapshot of one process and keeps it up to date.

    Args:
        settings: ``related`` and ``data_dir`` settings.
        factory: sessions for full builds (paged, one short transaction per page).
        background: rebuild after a model switch and merge into the main segment in a
            background thread (servers); False does everything in the calling thread (CLI,
            tests, benchmarks), so results never lag.
    """

    def __init__(
        self, settings: Settings, factory: sessionmaker[Session], *, background: bool = True
    ) -> None:
        self.settings = settings
        self.related = settings.related
        self.factory = factory
        self.background = background
        self.directory = settings.data_dir / "index" / "related"
        bind = factory.kw.get("bind")
        url = bind.url.render_as_string(hide_password=True) if bind is not None else "?"
        self.database = hashlib.sha256(url.encode()).hexdigest()[:16]
        self._snapshot: Snapshot | None = None
        self._lock = threading.RLock()
        self._checked_at = -float("inf")
        self._worker: threading.Thread | None = None

    # -- queries -----------------------------------------------------------------------------

    def current(self, *, session: Session) -> Snapshot:
        """The snapshot to answer from, caught up with SQL first (see the module docstring).

        Raises:
            ModelMissing: no IDF model has been fitted yet.
        """
        snap = self._snapshot
        interval = self.related.sync_interval_s
        if snap is not None and time.monotonic() - self._checked_at < interval:
            return snap
        with self._lock:
            state = read_state(session=session)
            self._checked_at = time.monotonic()
            if state.active_model_version is None:
                raise ModelMissing("no IDF model yet: run `recengine reindex`")
            return self._sync(session, state)

    def stats(self) -> dict[str, Any]:
        """What a health check shows: version, seq, live rows, segments, background work."""
        snap = self._snapshot
        return {
            "loaded": snap is not None,
            "version": snap.version if snap else None,
            "seq": snap.seq if snap else None,
            "articles": len(snap.view) if snap else 0,
            "segments": len(snap.parts) if snap else 0,
            "busy": self._worker is not None and self._worker.is_alive(),
        }

    def wait(self, timeout: float | None = None) -> None:
        """Wait for background work (a rebuild or merge) to finish."""
        worker = self._worker
        if worker is not None:
            worker.join(timeout)

    # -- following SQL -------------------------------------------------------------------------

    def _sync(self, session: Session, state: State) -> Snapshot:
        snap = self._snapshot
        if snap is None or snap.version != state.active_model_version:
            if snap is not None and self.background:
                self._start(self._rebuild_job)
                return snap
            snap = self._load_or_build()
        if snap.seq < state.seq:
            snap = self._apply_changes(session, snap, state.seq)
        self._snapshot = snap
        self._maybe_merge()
        return self._snapshot

    def _apply_changes(self, session: Session, snap: Snapshot, upto: int) -> Snapshot:
        """Read the articles changed in ``(snap.seq, upto]`` and apply them."""
        latest: dict[int, Any] = {}
        position = (snap.seq + 1, 0)  # just after every row of sequence number snap.seq
        while True:
            rows = index_changes(
                session=session,
                version=snap.version,
                after=position,
                upto=upto,
                limit=self.related.build_batch,
            )
            if not rows:
                break
            latest.update((r.id, r) for r in rows)  # later changes of an id win
            position = (rows[-1].seq, rows[-1].id)
        changed = np.fromiter(latest, dtype=np.int64, count=len(latest))
        live = [r for r in latest.values() if r.deleted_at is None and r.vector is not None]
        parts = []
        for part in snap.parts:
            rows_hit = part.segment.find(changed)
            rows_hit = rows_hit[rows_hit >= 0]
            if len(rows_hit) and part.alive[rows_hit].any():
                alive = part.alive.copy()
                alive[rows_hit] = False
                part = Part(part.segment, alive)
            parts.append(part)
        if live:
            parts.append(_ones(build_segment(to_rows(live), self.related.index_terms)))
        kept = tuple(parts[:1] + [p for p in parts[1:] if p.alive.any()])
        return Snapshot(snap.version, upto, IndexView(kept))

    def _maybe_merge(self) -> None:
        snap = self._snapshot
        assert snap is not None
        main, small = snap.parts[0], snap.parts[1:]
        outside = sum(int(p.alive.sum()) for p in small)
        dead = len(main.alive) - int(main.alive.sum())
        if outside > self.related.delta_max_rows or dead > max(1_000, len(main.alive) // 5):
            if self.background:
                self._start(self._merge_job)
            else:
                self._merge_main(snap)
        elif len(small) > self.related.max_parts:
            merged = build_segment(
                concat_rows([p.segment.rows(p.alive) for p in small]), self.related.index_terms
            )
            self._snapshot = Snapshot(snap.version, snap.seq, IndexView((main, _ones(merged))))

    def _merge_main(self, base: Snapshot) -> None:
        """Merge every live row of ``base`` into one main segment, save it, swap it in."""
        rows = concat_rows([p.segment.rows(p.alive) for p in base.parts])
        segment = build_segment(rows, self.related.index_terms)
        self._save(segment, base.version, base.seq)
        with self._lock:
            cur = self._snapshot
            if cur is not None and cur.version == base.version:
                self._snapshot = _rebase(cur, base, segment)

    # -- full builds ---------------------------------------------------------------------------

    def _load_or_build(self) -> Snapshot:
        """The newest saved main segment of the active version, or one built from SQL."""
        with transaction(self.factory) as session:
            state = read_state(session=session)
        version = state.active_model_version
        if version is None:
            raise ModelMissing("no IDF model yet: run `recengine reindex`")
        with self._file_lock():
            loaded = self._load_saved(version, state.seq)
            if loaded is not None:
                return loaded
            segment = self._build_from_sql(version)
            self._save(segment, version, state.seq)
        return Snapshot(version, state.seq, IndexView((_ones(segment),)))

    def _build_from_sql(self, version: int) -> Segment:
        parts, last = [], 0
        while True:
            with transaction(self.factory) as session:
                rows = index_rows_after(
                    session=session, version=version, after_id=last, limit=self.related.build_batch
                )
            if not rows:
                break
            parts.append(to_rows(rows))
            last = rows[-1].id
        return build_segment(concat_rows(parts or [empty_rows()]), self.related.index_terms)

    def _load_saved(self, version: int, seq: int) -> Snapshot | None:
        if not self.related.persist:
            return None
        for path in sorted(self.directory.glob(f"related-v{version:09d}-s*.seg"), reverse=True):
            try:
                segment, meta = load_segment(path)
            except (OSError, CorruptSegment) as exc:
                log.warning("ignoring index file %s: %s", path, exc)
                continue
            ours = meta.get("database") == self.database and meta.get("version") == version
            if ours and 0 <= int(meta.get("seq", -1)) <= seq:  # never an index from the future
                return Snapshot(version, int(meta["seq"]), IndexView((_ones(segment),)))
        return None

    def _save(self, segment: Segment, version: int, seq: int) -> None:
        if not self.related.persist:
            return
        path = self.directory / f"related-v{version:09d}-s{seq:015d}.seg"
        meta = {"database": self.database, "version": version, "seq": seq}
        try:
            save_segment(segment, path, meta)
            for old in sorted(self.directory.glob("related-v*-s*.seg"), reverse=True)[2:]:
                old.unlink(missing_ok=True)  # mapped copies stay readable until unmapped
        except OSError as exc:
            log.warning("could not save the related-articles index to %s: %s", path, exc)

    @contextmanager
    def _file_lock(self) -> Iterator[None]:
        if not self.related.persist:
            yield
            return
        self.directory.mkdir(parents=True, exist_ok=True)
        with (self.directory / ".build.lock").open("a") as handle:
            fcntl.flock(handle, fcntl.LOCK_EX)
            try:
                yield
            finally:
                fcntl.flock(handle, fcntl.LOCK_UN)

    # -- background work -----------------------------------------------------------------------

    def _start(self, job: Callable[[], None]) -> None:
        if self._worker is not None and self._worker.is_alive():
            return
        self._worker = threading.Thread(target=self._run, args=(job,), daemon=True)
        self._worker.start()

    def _run(self, job: Callable[[], None]) -> None:
        try:
            job()
        except Exception:
            log.exception("related-articles index: background work failed (retried later)")

    def _rebuild_job(self) -> None:
        snap = self._load_or_build()
        with self._lock:
            self._snapshot = snap
            self._checked_at = -float("inf")  # catch up at the next query

    def _merge_job(self) -> None:
        snap = self._snapshot
        if snap is not None:
            self._merge_main(snap)


def _rebase(cur: Snapshot, base: Snapshot, segment: Segment) -> Snapshot:
    """``cur`` with the parts of ``base`` replaced by ``segment`` (their merge).

    Rows of ``base`` that ``cur`` has since marked dead, and every id of the parts added
    since ``base``, are dead in the new main segment; the added parts stay.
    """
    base_alive = {id(p.segment): p.alive for p in base.parts}
    dead, newer = [], []
    for part in cur.parts:
        old = base_alive.get(id(part.segment))
        if old is None:
            newer.append(part)
            dead.append(part.segment.ids)
        else:
            dead.append(part.segment.ids[old & ~part.alive])
    alive = ~np.isin(segment.ids, np.concatenate(dead)) if dead else np.ones(len(segment), bool)
    return Snapshot(cur.version, cur.seq, IndexView((Part(segment, alive), *newer)))
