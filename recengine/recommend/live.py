"""The related-articles index of one process, as queries use it: a :class:`Snapshot`.

The index is the related kind (``derived.related.RelatedKind``) of the follower every derived
index uses (``index.follower``: first use and model switch load the newest saved file or build
under a file lock; catch-up from the file's sequence; the size check after a load; one
``index.sync_interval_s``). In servers (``background=True``) a model switch opens the new
version in a thread while the old index keeps answering (changes are not applied to it: its
model is gone from SQL), and merges into the main segment run in a thread too.

Beside it, the dense kind (``derived.dense.DenseKind``: each article's LSA vector and a FAISS
index, the dense part of the ranking, ``recommend.lists.blend``) follows SQL the same way, read in
the same transaction (the position the related index checked is the dense index's too: one read
of the state row per answer); when ``related.dense_weight`` is 0 it is never opened. So does the
briefs kind (``derived.briefs``: what a list shows of each article, and its cluster), so that a
list reads its items, its query article and its clusters from memory, as of the same position.

A :class:`Snapshot` (model version, change sequence, an ``IndexView``, the dense state of the
same version or None, the briefs of the same version and sequence or None) answers one query;
it is never modified. TF-IDF answers do not depend
on how rows are spread over segments (``index.related.view``), so every process that has caught up
with the same ``seq`` gives the same answers (dense candidates too below ``dense.ivf_min``
articles, where their search is exact). Delay for a
write to show in another process: ``index.sync_interval_s`` plus the catch-up (milliseconds
for a few articles); after a reindex, loading the file the reindex published (under a second at
1M articles) or, without one, the build from SQL (minutes at 1M articles, ``BENCHMARKS.md``).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from sqlalchemy.orm import Session, sessionmaker

from recengine.config import Settings
from recengine.derived.briefs import brief_follower
from recengine.derived.dense import DenseState, dense_follower
from recengine.derived.related import related_follower
from recengine.errors import ModelMissing
from recengine.index.briefs import Briefs
from recengine.index.follower import Follower
from recengine.index.related.view import IndexView, Part, SearchParams
from recengine.storage.notify import ChangeListener, listens
from recengine.storage.rows.index_rows import SqlIndexRows
from recengine.storage.walwatch import WalWatch, watched_file


@dataclass(frozen=True, eq=False)
class Snapshot:
    """What one query searches: the index of model ``version`` as of change ``seq``."""

    version: int
    seq: int
    view: IndexView
    dense: DenseState | None = None
    briefs: Briefs | None = None  # None: read what lists show from SQL

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


class _OneCheck(SqlIndexRows):
    """Index rows of one request, whose followers check the position once between them: the
    dense follower takes the position the related one read a moment before in the same
    transaction (the state row read once per request, not once per index)."""

    def __init__(self, session: Session) -> None:
        super().__init__(session)
        self._last: tuple[int, int | None, str] | None = None
        self._shared: tuple[int, int | None, str] | None = None

    def position(self) -> tuple[int, int | None, str]:
        if self._shared is not None:
            found, self._shared = self._shared, None
            return found
        self._last = super().position()
        return self._last

    def share_last(self) -> None:
        """The next :meth:`position` returns the last one read (once; none read: it reads)."""
        self._shared = self._last


class LiveIndex:
    """Holds the current snapshot of one process and keeps it up to date.

    Args:
        settings: ``related``, ``index`` and ``data_dir`` settings.
        factory: sessions of the database (kept for callers; reads go through sessions).
        background: open a new model version and compact in a background thread (servers);
            False does everything in the calling thread (CLI, tests, benchmarks), so results
            never lag.
    """

    def __init__(
        self, settings: Settings, factory: sessionmaker[Session], *, background: bool = True
    ) -> None:
        self.settings = settings
        self.factory = factory
        self.background = background
        self.follower = related_follower(settings, background=background)
        self.dense = dense_follower(settings, background=background)
        self.briefs = brief_follower(settings, background=background)

    def followers(self) -> tuple[Follower[Any], ...]:
        """Every follower a read syncs (what change notifications must reach)."""
        return self.follower, self.dense, self.briefs

    def follow_changes(
        self,
        changed: Callable[[], None] = lambda: None,
        connected: Callable[[bool], None] = lambda live: None,
    ) -> ChangeListener | WalWatch | None:
        """Follow the database's changes without a query per answer (``index.listen``):
        PostgreSQL's notifications (``storage.notify``), SQLite's WAL-index header
        (``storage.walwatch``), so reads stop checking SQL while nothing changes. Returns the
        listener (None: the database offers neither, or ``index.listen`` is off); ``changed``
        is called on each notification, ``connected`` when the channel comes or goes."""
        index, url = self.settings.index, self.settings.resolved_database_url
        shm = watched_file(url)
        if not index.listen or not (listens(url) or shm):
            return None
        followers = self.followers()

        def on_change() -> None:
            for follower in followers:
                follower.notified()
            changed()

        live: Callable[[], bool]
        listener: ChangeListener | WalWatch
        if shm is not None:
            watch = listener = WalWatch(shm, on_change)
            live = watch.look
            connected(True)  # looked at by every read; not live only while it has no file
        else:
            connected(False)
            channel = listener = ChangeListener(url, on_change, connected).start()
            live = lambda: channel.live  # noqa: E731
        for follower in followers:
            follower.follow_notifications(live, index.listen_interval_s)
        return listener

    def current(self, *, session: Session) -> Snapshot:
        """The snapshot to answer from, caught up with SQL first (see the module docstring).

        Raises:
            ModelMissing: no IDF model has been fitted yet.
        """
        rows = _OneCheck(session)
        held = self.follower.sync(rows, fresh=False)
        if held is None:
            raise ModelMissing("no IDF model yet: run `recengine reindex`")
        dense = None
        if self.settings.related.dense_weight > 0:
            rows.share_last()
            found = self.dense.sync(rows, fresh=False)
            if found is not None and found.version == held.version:
                dense = found.index  # (while a switch opens it in the background: none)
        rows.share_last()
        facts = self.briefs.sync(rows, fresh=False)
        briefs = None  # (while a switch opens it in the background, or a seq apart: none)
        if facts is not None and (facts.version, facts.seq) == (held.version, held.seq):
            briefs = facts.index
        return Snapshot(held.version, held.seq, held.index, dense, briefs)

    def fresh_position(self) -> tuple[int, int] | None:
        """``(version, seq)`` of the snapshot :meth:`current` would return right now without a
        query (no position check due for either index, the last position read of the model
        held: no new model opening); None when :meth:`current` would read SQL first."""
        held = self.follower.held_if_fresh()
        position = self.follower.position
        if held is None or position is None or position.version != held.version:
            return None
        if self.settings.related.dense_weight > 0:
            dense = self.dense.held_if_fresh()
            if dense is None or dense.version != held.version:
                return None
        briefs = self.briefs.held_if_fresh()
        if briefs is None or briefs.version != held.version:
            return None
        return held.version, held.seq

    def stats(self) -> dict[str, Any]:
        """What a health check shows: version, seq, live rows, segments, background work."""
        return {"segments": 0, **self.follower.report()}

    def dense_stats(self) -> dict[str, Any]:
        """The same of the dense index, with its dimensions (``dims``)."""
        return self.dense.report()

    def wait(self, timeout: float | None = None) -> None:
        """Wait for background work (a rebuild or merge) to finish."""
        for follower in self.followers():
            follower.wait(timeout)
