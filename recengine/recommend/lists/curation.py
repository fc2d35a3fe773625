"""Editors' overrides as one related list or feed sees them (``storage.rows.overrides``).

A :class:`Curation` is read from SQL while the list is made, in the request's own session, so
an override is honoured by every process from the first answer whose index check sees its
commit (with the default ``index.sync_interval_s = 0``, from its commit on; see
:class:`OverridePresence` for the one thing kept between answers):

* first for the query article (its pins, its blocked partners, its own overrides), then for
  the candidates as the list takes them (:meth:`Curation.learn`: one indexed query per batch of
  new ids, over the override table's two article columns);
* **excluded** articles are taken out of the candidates before suppression
  (:meth:`Curation.without_excluded`): never shown, and, since they are not there, they hide
  nothing (a copy of an excluded article can be shown in its place);
* **blocked** pairs are never shown together: the query's partners are filtered out before the
  candidate cut, and a candidate blocked with an item kept above it is skipped
  (``recommend.lists.suppress.pick``) as is one blocked with an article the reader read (feeds);
* **not duplicates** (a pair, or an article against all) and **same article** pairs correct
  the duplicate criterion's verdict (:meth:`Curation.correct`): a ``not_duplicate`` pair is
  never suppressed as a duplicate, whatever the fingerprints say; a ``same_article`` pair always
  is. Clusters already carry both (``pipeline.clusters.upkeep``); correcting the verdict too makes a
  list right even for a pair of articles the clusters have not been recomputed for yet;
* **pins** are the query article's own, shown first in the editor's order (``recommend.related``).

Most sites have few overrides or none, and reading them costs a list several statements (an
``IN`` over every candidate, for both article columns). :class:`OverridePresence` knows, per
change sequence, whether any override exists; when none does, a list takes
:meth:`Curation.none` and reads nothing. Every override write takes a sequence number, so "none
at ``seq``" holds until the sequence moves, and a list answered from an index caught up to
``seq`` honours every override committed up to it: an override added through any process or
node is honoured from the first answer of each process that sees its sequence (the freshness
delay of every other change, ``index.sync_interval_s`` or a change notification).

Array contracts: ids ``int64 (n,)``; masks ``bool (n,)``.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt
from sqlalchemy.orm import Session

from recengine.index.related.view import Hits
from recengine.storage.rows.overrides import (
    BLOCK,
    EXCLUDE,
    NOT_DUPLICATE,
    SAME_ARTICLE,
    overrides_exist,
    pins_of,
    relations_touching,
)

LIST_KINDS = (EXCLUDE, BLOCK, NOT_DUPLICATE, SAME_ARTICLE)
Pair = tuple[int, int]


def pair(a: int, b: int) -> Pair:
    return (a, b) if a < b else (b, a)


@dataclass
class Curation:
    """The overrides known so far for one list (see the module docstring)."""

    pins: list[int] = field(default_factory=list)
    excluded: set[int] = field(default_factory=set)
    blocked: dict[int, set[int]] = field(default_factory=dict)
    apart: set[Pair] = field(default_factory=set)
    alone: set[int] = field(default_factory=set)
    together: set[Pair] = field(default_factory=set)
    closed: bool = False  # nothing to learn: no override exists (:meth:`none`)
    _known: set[int] = field(default_factory=set)

    @classmethod
    def none(cls) -> Curation:
        """The curation of a list when no override exists (:class:`OverridePresence`):
        empty, and :meth:`learn` reads nothing."""
        return cls(closed=True)

    @classmethod
    def of_article(cls, session: Session, article_id: int) -> Curation:
        """The overrides of ``article_id`` (the query of a related list), pins included."""
        curation = cls(pins=[p[1] for p in pins_of(session=session, article_id=article_id)])
        curation.learn(session, [article_id])
        return curation

    @classmethod
    def of_articles(cls, session: Session, article_ids: Iterable[int]) -> Curation:
        """The overrides touching several articles (a reader's reads), no pins."""
        curation = cls()
        curation.learn(session, article_ids)
        return curation

    def learn(self, session: Session, article_ids: Iterable[int]) -> None:
        """Read the overrides of those ids not read yet (one query per ~5,000 new ids)."""
        if self.closed:
            return
        new = sorted({int(i) for i in article_ids} - self._known)
        if not new:
            return
        self._known.update(new)
        for r in relations_touching(session=session, article_ids=new, kinds=LIST_KINDS):
            if r.kind == EXCLUDE:
                self.excluded.add(r.article_id)
            elif r.other_id is None:
                self.alone.add(r.article_id)  # not a duplicate of anything
            elif r.kind == BLOCK:
                self.blocked.setdefault(r.article_id, set()).add(r.other_id)
                self.blocked.setdefault(r.other_id, set()).add(r.article_id)
            elif r.kind == NOT_DUPLICATE:
                self.apart.add(pair(r.article_id, r.other_id))
            else:
                self.together.add(pair(r.article_id, r.other_id))

    @property
    def empty(self) -> bool:
        return not (self.excluded or self.blocked or self.apart or self.alone or self.together)

    def blocked_with(self, article_id: int) -> set[int]:
        """Articles never shown together with ``article_id`` (as far as learnt)."""
        return self.blocked.get(article_id, set())

    def blocks_any(self, article_id: int, others: Iterable[int]) -> bool:
        mine = self.blocked.get(article_id)
        return mine is not None and any(o in mine for o in others)

    def without_excluded(self, session: Session, hits: Hits) -> Hits:
        """``hits`` without excluded articles (learning the overrides of every hit)."""
        self.learn(session, hits.ids.tolist())
        if not self.excluded or not len(hits):
            return hits
        keep = ~np.isin(hits.ids, np.fromiter(self.excluded, np.int64, len(self.excluded)))
        return take(hits, np.flatnonzero(keep))

    def correct(
        self, article_id: int, others: npt.NDArray[np.int64], duplicate: npt.NDArray[np.bool_]
    ) -> npt.NDArray[np.bool_]:
        """The criterion's verdicts on ``article_id`` against ``others``, with the editors'
        ``not_duplicate`` and ``same_article`` overrides applied (same article wins)."""
        if self.empty:
            return duplicate
        out = duplicate.copy()
        ids = others.tolist()
        if article_id in self.alone:
            out[:] = False
        for j, other in enumerate(ids):
            key = pair(article_id, other)
            if other in self.alone or key in self.apart:
                out[j] = False
            if key in self.together:
                out[j] = True
        return out


class OverridePresence:
    """Whether any override exists, known per change sequence (see the module docstring).
    One per process; thread-safe.

    The sequence a list passes is its index's last position check (``index.follower``): a
    list must honour the overrides committed up to it, like every other change it reflects.
    """

    def __init__(self) -> None:
        self._known: tuple[int, bool] = (-1, True)  # (seq, any override at that seq)
        self._lock = threading.Lock()
        self.reads = 0  # statements run (tests, metrics)

    def exist(self, session: Session, seq: int) -> bool:
        """Whether any override exists at ``seq`` (one statement when ``seq`` is new).

        When the statement finds another sequence than ``seq`` (a write committed since the
        caller's check), its own answer is given: it is of a later state, and it is kept for
        its own sequence.
        """
        known_seq, found = self._known
        if known_seq == seq:
            return found
        now, found = overrides_exist(session=session)
        with self._lock:
            self.reads += 1
            if now >= self._known[0]:
                self._known = (now, found)
        return found


def take(hits: Hits, positions: npt.NDArray[np.intp] | Sequence[int]) -> Hits:
    """The hits at ``positions``, in that order."""
    return hits.take(np.asarray(positions, dtype=np.intp))


def concat(first: Hits, second: Hits) -> Hits:
    """``first`` then ``second`` (no re-sorting: pins stay in the editor's order). When only
    one side has dense shares, the other side's are NaN ("no dense part in this score")."""
    dense = None
    if first.dense is not None or second.dense is not None:
        dense = np.concatenate([_dense_or_nan(first), _dense_or_nan(second)])
    return Hits(
        np.concatenate((first.part, second.part)),
        np.concatenate((first.row, second.row)),
        np.concatenate((first.ids, second.ids)),
        np.concatenate((first.scores, second.scores)),
        np.concatenate((first.fingerprints, second.fingerprints)),
        dense,
    )


def _dense_or_nan(hits: Hits) -> npt.NDArray[np.float64]:
    return hits.dense if hits.dense is not None else np.full(len(hits), np.nan)
