"""Co-reading: "readers of this also read", from the reader events feeds already store.

**Window.** A reader's *day* (the UTC date of the reads) is one window: two articles are
co-read once for each reader-day that holds both (reading one article twice that day counts
once). A reader-day with more than ``signals.coread_max_reads`` articles counts for nothing
(a crawler or a shared id: one such day would otherwise add ``n^2 / 2`` pairs), which bounds
what a day can add.

**Normalised** (cosine with shrinkage): ``coread(a, b) = n_ab / (sqrt(n_a * n_b) + lambda)``,
``n_ab`` the reader-days that read both, ``n_a`` those that read ``a``, ``lambda =
signals.coread_shrink``: a pair read together by 2 readers of 2 does not outrank one read
together by 50 of 200 (raw cosine gives 1.0 and 0.25; with ``lambda = 5``, 0.29 and 0.24). Pairs
of fewer than ``signals.coread_min_readers`` reader-days are noise and left out.

**Pruned**: an article keeps its ``signals.coread_neighbours`` best co-read articles. The days
before today are summarised once a day keeping each article's ``4 x`` that many most co-read
partners (memory: articles x 4N pairs whatever the traffic); today's reads are summarised
again every ``signals.refresh_s`` (``signals.window``), and a list adds the two.

**From SQL, nothing stored**: the summaries are built from ``reader_events`` (at start, once a
day, and today's as events arrive; the past days' again when reads stamped before today
arrive, :class:`LateReads`), so they are rebuilt from the source of truth daily and hold no
reader id: a reader's erasure leaves them at the next daily build (at most a day).

In a list (``recommend.signals.scoring``): the co-read articles are a candidate source (one
that shares no word with the article still gets scored and can be listed), and a score part,
``related.coread_weight * coread(q, item)``, said in ``reasons.coread``.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from datetime import UTC, date, datetime, time, timedelta
from itertools import combinations

import numpy as np
import numpy.typing as npt
from sqlalchemy.orm import Session

from recengine.config import SignalsSettings
from recengine.recommend.signals.window import Halves
from recengine.storage.rows.events import any_event_after, last_event_id, reads_between

F64 = npt.NDArray[np.float64]
I64 = npt.NDArray[np.int64]
KEEP_FACTOR = 4  # partners kept per article in a day's summary, per neighbour listed


def reader_days(rows: Iterable[tuple[str, datetime, int]]) -> Iterator[set[int]]:
    """The distinct articles of each reader's UTC day, from ``(reader, at, article)`` rows
    ordered by reader then time."""
    key: tuple[str, date] | None = None
    read: set[int] = set()
    for user, at, article in rows:
        day = at.astimezone(UTC).date()
        if (user, day) != key:
            if read:
                yield read
            key, read = (user, day), set()
        read.add(article)
    if read:
        yield read


@dataclass(frozen=True)
class CoCounts:
    """Co-read counts of some days: pairs in both directions sorted by ``(source, other)``,
    and the reader-days of each article (``articles`` sorted)."""

    source: I64
    other: I64
    count: F64
    articles: I64
    readers: F64

    @classmethod
    def of(cls, days: Iterable[set[int]], max_reads: int, keep: int | None = None) -> CoCounts:
        """Counted from reader-days (see the module docstring); ``keep``: at most that many
        partners per article, the most co-read (ties: the smaller id)."""
        pairs: Counter[tuple[int, int]] = Counter()
        readers: Counter[int] = Counter()
        for read in days:
            if len(read) > max_reads:
                continue
            readers.update(read)
            pairs.update(combinations(sorted(read), 2))
        a = np.fromiter((p[0] for p in pairs), np.int64, len(pairs))
        b = np.fromiter((p[1] for p in pairs), np.int64, len(pairs))
        n = np.fromiter(pairs.values(), np.float64, len(pairs))
        source, other, count = np.concatenate((a, b)), np.concatenate((b, a)), np.tile(n, 2)
        order = np.lexsort((other, -count, source))
        source, other, count = source[order], other[order], count[order]
        if keep is not None and len(source):
            starts = np.searchsorted(source, source)  # first row of each row's article
            kept = np.arange(len(source)) - starts < keep
            source, other, count = source[kept], other[kept], count[kept]
        order = np.lexsort((other, source))
        ids = np.array(sorted(readers), np.int64)
        return cls(
            source[order],
            other[order],
            count[order],
            ids,
            np.array([readers[i] for i in ids.tolist()], np.float64),
        )

    @classmethod
    def empty(cls) -> CoCounts:
        return cls.of((), 2)

    def partners(self, article: int) -> tuple[I64, F64]:
        """The articles co-read with ``article`` (sorted) and how often."""
        lo, hi = np.searchsorted(self.source, [article, article + 1])
        return self.other[lo:hi], self.count[lo:hi]

    def readers_of(self, ids: I64) -> F64:
        """The reader-days of each of ``ids`` (0: none)."""
        if not len(self.articles):
            return np.zeros(len(ids), np.float64)
        at = np.searchsorted(self.articles, ids).clip(max=len(self.articles) - 1)
        return np.where(self.articles[at] == ids, self.readers[at], 0.0)


def read_counts(
    session: Session, first: date, last: date, settings: SignalsSettings, keep: bool
) -> CoCounts:
    """The :class:`CoCounts` of the reads of ``first`` .. ``last`` (UTC days); ``keep``: pruned
    to ``4 x signals.coread_neighbours`` partners per article."""
    since = datetime.combine(first, time(), UTC)
    until = datetime.combine(last + timedelta(days=1), time(), UTC)
    rows = reads_between(session=session, since=since, until=until)
    limit = KEEP_FACTOR * settings.coread_neighbours if keep else None
    return CoCounts.of(reader_days(rows), settings.coread_max_reads, limit)


class LateReads:
    """The ``signals.window.PastWatch`` of reads: events are stamped with the time the reader
    read (an import, a client sending late), so days already summarised can still change;
    new events (ids above those summarised) stamped before today say they did."""

    def __init__(self) -> None:
        self.seen = 0

    def mark(self, session: Session) -> None:
        self.seen = last_event_id(session=session)

    def moved(self, session: Session, today: date) -> bool:
        start = datetime.combine(today, time(), UTC)
        late = any_event_after(session=session, after_id=self.seen, before=start)
        self.seen = last_event_id(session=session)
        return late


def neighbours(
    halves: Halves[CoCounts], article: int, settings: SignalsSettings
) -> tuple[I64, F64]:
    """The ``signals.coread_neighbours`` articles most co-read with ``article`` and their
    normalised co-read scores (see the module docstring), best first (ties: smaller id)."""
    pid, pn = halves.past.partners(article)
    tid, tn = halves.today.partners(article)
    ids, where = np.unique(np.concatenate((pid, tid)), return_inverse=True)
    together = np.bincount(where, np.concatenate((pn, tn)), len(ids)).astype(np.float64)
    keep = together >= settings.coread_min_readers
    ids, together = ids[keep], together[keep]
    if not len(ids):
        return ids, together.astype(np.float64)
    one = np.array([article], np.int64)
    n_a = float((halves.past.readers_of(one) + halves.today.readers_of(one))[0])
    n_b = halves.past.readers_of(ids) + halves.today.readers_of(ids)
    norm = np.sqrt(np.maximum(n_a * n_b, together * together))  # n_ab <= min(n_a, n_b)
    scores = together / (norm + settings.coread_shrink)
    order = np.lexsort((ids, -scores))[: settings.coread_neighbours]
    return ids[order], scores[order]
