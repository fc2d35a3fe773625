"""Editors' overrides: adding, removing and listing them (``storage.rows.overrides``).

Each override is written in one transaction under the writers' lock
(``state.begin_write``), so it is ordered with ingest and reindex switches. Overrides that
decide near-duplicate clusters (``not_duplicate``, ``same_article``, ``canonical``) recompute
the clusters they touch in that same transaction (:class:`ClusterMaintenance`, the
deduplicator), so every process reads the corrected clusters from the commit on; the others
are read by every related list and feed as it is made (``recommend.lists.curation``), so they too
hold in every process from the first answer whose index check sees the commit (the delay of
every write, ``index.sync_interval_s``: from the commit on by default).

Editorial decisions replace the ones they contradict: a ``block`` of a pair removes its
``pin`` (either way) and a ``pin`` removes its ``block``; ``same_article`` and
``not_duplicate`` on one pair replace each other. Adding an override that exists already
changes nothing, and takes no change sequence number, so no worker's cached answers are
dropped for it (a pin given a new ``position`` moves). What cannot be decided by replacing is
refused (``Conflict``, ``recommend.override_rules``): a ``not_duplicate`` (of a pair, or of one
article against all) inside a group that ``same_article`` overrides join, a ``same_article``
that would join such a pair or such an article, and a ``pin`` of a near-duplicate of the
article (a list never shows one: the pin would never apply).

An override names articles that exist (an unknown id is ``NotFound``, so a typo is not
stored); when one of them is deleted later, the override is kept (storing the article again
brings it back into force) and listed with ``"active": false`` and the deleted ids.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Protocol

from sqlalchemy.orm import Session, sessionmaker

from recengine.errors import InvalidRequest, NotFound
from recengine.recommend.lists.params import check_id
from recengine.recommend.override_rules import DuplicatePins, check_groups
from recengine.storage.db import transaction
from recengine.storage.rows.index_source import internal_ids
from recengine.storage.rows.overrides import (
    BLOCK,
    CANONICAL,
    CLUSTER_KINDS,
    EXCLUDE,
    KINDS,
    NOT_DUPLICATE,
    PIN,
    SAME_ARTICLE,
    OverrideRow,
    add_override,
    delete_overrides,
    list_overrides,
    mark_changed,
    matching,
    normalised,
    pins_of,
    set_position,
)
from recengine.storage.state import begin_write, lock_writers

MAX_REASON = 2_000
MAX_BY = 255
# Kinds about one article, kinds about a pair, and the one that may be either.
SINGLE = frozenset({CANONICAL, EXCLUDE})
PAIR = frozenset({SAME_ARTICLE, PIN, BLOCK})
# What each kind replaces on the same (normalised) pair.
REPLACES: dict[str, tuple[str, ...]] = {
    NOT_DUPLICATE: (SAME_ARTICLE,),
    SAME_ARTICLE: (NOT_DUPLICATE,),
    BLOCK: (PIN,),
    PIN: (BLOCK,),
}


@dataclass(frozen=True)
class NewOverride:
    """A validated request to add an override (caller ids)."""

    kind: str
    article: str
    other: str | None
    position: int | None
    reason: str
    by: str

    @classmethod
    def parse(
        cls,
        kind: Any,
        article: Any,
        other: Any = None,
        *,
        position: Any = None,
        reason: Any = "",
        by: Any,
    ) -> NewOverride:
        """Check the shape of an override.

        Raises:
            InvalidRequest: unknown kind, a pair kind without its other article (or a single
                kind with one), a pair of one article, a bad position, reason or author.
        """
        if kind not in KINDS:
            raise InvalidRequest(f"kind must be one of {', '.join(KINDS)}, got {kind!r}")
        article = check_id(article)
        other = None if other is None else check_id(other, "other article id")
        if kind in PAIR and other is None:
            raise InvalidRequest(f"a {kind} override needs the other article (other)")
        if kind in SINGLE and other is not None:
            raise InvalidRequest(f"a {kind} override names one article: leave out other")
        if other == article:
            raise InvalidRequest("an override's two articles must differ")
        if position is not None and (
            isinstance(position, bool) or not isinstance(position, int) or not position >= 0
        ):
            raise InvalidRequest("position must be an integer >= 0")
        if position is not None and kind != PIN:
            raise InvalidRequest("position is only for pin overrides")
        if not isinstance(reason, str) or len(reason) > MAX_REASON:
            raise InvalidRequest(f"reason must be text of at most {MAX_REASON} characters")
        if not isinstance(by, str) or not by.strip() or len(by) > MAX_BY:
            raise InvalidRequest(f"by (who decided) must be a name of 1 to {MAX_BY} characters")
        if "\x00" in reason or "\x00" in by:  # PostgreSQL cannot store it; SQLite could
            raise InvalidRequest("reason and by must not contain NUL characters")
        return cls(kind, article, other, position, reason, by.strip())


class ClusterMaintenance(Protocol):
    """What keeps near-duplicate clusters right (``pipeline.clusters.upkeep.Deduplicator``)."""

    def regroup(self, session: Session, changed: Iterable[int]) -> int:
        """Recompute the clusters ``changed`` articles are in, under the cluster overrides as
        they now are, in the caller's write transaction."""
        ...

    def writing(self, factory: sessionmaker[Session]) -> AbstractContextManager[None]:
        """The context a write transaction that calls :meth:`regroup` runs in."""
        ...


class Overrides:
    """The override use cases. One per process; thread-safe (state lives in SQL).

    Args:
        factory: sessions; :meth:`add` and :meth:`remove` commit a transaction of their own
            (``add_in`` / ``remove_in`` write in the caller's).
        clusters: recomputes the near-duplicate clusters a cluster override touches, inside
            its write transaction; None leaves the rows alone (they are then right after the
            next ingest touching them, or the next reindex).
        pins: refuses pins of near-duplicates (``override_rules.DuplicatePins``); None
            stores them unchecked (a list then leaves such a pin out).
    """

    def __init__(
        self,
        factory: sessionmaker[Session],
        clusters: ClusterMaintenance | None = None,
        pins: DuplicatePins | None = None,
    ) -> None:
        self.factory = factory
        self.clusters = clusters
        self.pins = pins

    def add(self, new: NewOverride) -> dict[str, Any]:
        """Store ``new`` and commit (see :meth:`add_in`)."""
        with self._writing(), transaction(self.factory) as session:
            return self.add_in(new, session=session)

    def remove(self, override_id: int) -> dict[str, Any]:
        """Delete an override and commit (see :meth:`remove_in`)."""
        with self._writing(), transaction(self.factory) as session:
            return self.remove_in(override_id, session=session)

    def _writing(self) -> AbstractContextManager[object]:
        return nullcontext() if self.clusters is None else self.clusters.writing(self.factory)

    def add_in(self, new: NewOverride, *, session: Session) -> dict[str, Any]:
        """Store ``new`` in the caller's transaction (the caller commits).

        The writers' lock is taken first; a change sequence number only when something is
        written (an override stored again changes nothing, and no cache is dropped for it).

        Returns:
            ``{"override": {...}, "created": bool, "replaced": [ids]}``.

        Raises:
            NotFound: an article does not exist. Conflict: see the module docstring.
        """
        lock_writers(session=session)
        found = internal_ids(session=session, external_ids=[new.article, new.other or new.article])
        for name in (new.article, new.other):
            if name is not None and name not in found:
                raise NotFound(f"no article with id {name!r}")
        a = found[new.article]
        b = found[new.other] if new.other is not None else None
        a, b = normalised(new.kind, a, b)
        existing = matching(session=session, kinds=[new.kind], article_id=a, other_id=b)
        if existing:
            order = _pin_order(session, a, existing[0], new.position) if new.kind == PIN else None
            if order is not None:  # a pin that moves
                begin_write(session=session)
                _number_pins(session, order)
            return self._answer(session, existing[0], created=False, replaced=[])
        check_groups(session, new.kind, a, b)
        if new.kind == PIN and self.pins is not None and b is not None:
            self.pins.check(session, a, b)
        seq = begin_write(session=session).seq
        replaced = _replace(session, new.kind, a, b)
        override_id = add_override(
            session=session,
            kind=new.kind,
            article_id=a,
            other_id=b,
            position=0 if new.kind == PIN else None,
            reason=new.reason,
            created_by=new.by,
            created_at=datetime.now(UTC),
        )
        if new.kind == PIN:
            _place_pin(session, a, override_id, new.position)
        if new.kind in CLUSTER_KINDS:
            self._clusters(session, seq, [x for x in (a, b) if x is not None])
        return self._answer(session, override_id, created=True, replaced=replaced)

    def _answer(
        self, session: Session, override_id: int, *, created: bool, replaced: list[int]
    ) -> dict[str, Any]:
        (row,) = list_overrides(session=session, ids=[override_id])
        return {"override": as_dict(row), "created": created, "replaced": replaced}

    def remove_in(self, override_id: int, *, session: Session) -> dict[str, Any]:
        """Delete one override in the caller's transaction; returns it as it was.

        Raises:
            NotFound: no override has this id.
        """
        seq = begin_write(session=session).seq
        rows = list_overrides(session=session, ids=[override_id])
        if not rows:
            raise NotFound(f"no override with id {override_id}")
        row = rows[0]
        delete_overrides(session=session, ids=[override_id])
        if row.kind == PIN:
            _place_pin(session, row.article_id, None, None)
        if row.kind in CLUSTER_KINDS:
            named = [x for x in (row.article_id, row.other_id) if x is not None]
            self._clusters(session, seq, named)
        return as_dict(row)

    def listing(
        self,
        *,
        session: Session,
        kinds: Sequence[str] | None = None,
        article: str | None = None,
        after_id: int = 0,
        limit: int = 1_000,
    ) -> list[dict[str, Any]]:
        """Overrides by id (optionally of some kinds, or naming one article).

        Raises:
            InvalidRequest: an unknown kind. NotFound: an unknown article.
        """
        wanted = tuple(kinds or KINDS)
        unknown = [k for k in wanted if k not in KINDS]
        if unknown:
            raise InvalidRequest(f"kind must be one of {', '.join(KINDS)}, got {unknown[0]!r}")
        article_id = None
        if article is not None:
            found = internal_ids(session=session, external_ids=[check_id(article)])
            if article not in found:
                raise NotFound(f"no article with id {article!r}")
            article_id = found[article]
        rows = list_overrides(
            session=session, kinds=wanted, article_id=article_id, after_id=after_id, limit=limit
        )
        return [as_dict(r) for r in rows]

    def _clusters(self, session: Session, seq: int, ids: Sequence[int]) -> None:
        """The articles' clusters follow the change: recomputed now (the active version), and
        marked changed for a reindex running meanwhile (its new version)."""
        mark_changed(session=session, article_ids=ids, seq=seq)
        if self.clusters is not None:
            self.clusters.regroup(session, ids)


def as_dict(row: OverrideRow) -> dict[str, Any]:
    """The JSON shape of an override (HTTP and CLI)."""
    deleted = [x for x, gone in ((row.article, row.article_deleted),) if gone]
    if row.other is not None and row.other_deleted:
        deleted.append(row.other)
    return {
        "id": row.id,
        "kind": row.kind,
        "article": row.article,
        "other": row.other,
        "article_title": row.article_title,
        "other_title": row.other_title,
        "position": row.position,
        "reason": row.reason,
        "by": row.created_by,
        "at": row.created_at.isoformat(),
        "active": not deleted,
        "deleted": deleted,
    }


def _replace(session: Session, kind: str, a: int, b: int | None) -> list[int]:
    """Delete what ``kind`` on (a, b) replaces; returns the deleted override ids."""
    gone: list[int] = []
    for other_kind in REPLACES.get(kind, ()):
        pairs = [(a, b)]
        if PIN in (kind, other_kind) and b is not None:
            pairs += [(b, a)]  # a pin is directed, a block is not
        for x, y in dict.fromkeys(normalised(other_kind, x, y) for x, y in pairs):
            found = matching(session=session, kinds=[other_kind], article_id=x, other_id=y)
            delete_overrides(session=session, ids=found)
            gone += found
            if found and other_kind == PIN:
                _place_pin(session, x, None, None)
    return gone


def _place_pin(session: Session, article_id: int, override_id: int | None, at: int | None) -> None:
    """Renumber the article's pins 0..n-1 in order, with ``override_id`` moved to ``at``."""
    pins = [p[0] for p in pins_of(session=session, article_id=article_id)]
    if override_id is not None:
        pins.remove(override_id)
        pins.insert(len(pins) if at is None else min(at, len(pins)), override_id)
    _number_pins(session, pins)


def _number_pins(session: Session, pins: list[int]) -> None:
    for position, pin_id in enumerate(pins):
        set_position(session=session, override_id=pin_id, position=position)


def _pin_order(
    session: Session, article_id: int, override_id: int, at: int | None
) -> list[int] | None:
    """The article's pins in order with ``override_id`` moved to ``at``; None when that is
    where they are already (``at`` None: the pin stays where it is)."""
    pins = pins_of(session=session, article_id=article_id)
    order = [p[0] for p in pins]
    if at is not None:
        order.remove(override_id)
        order.insert(min(at, len(order)), override_id)
    positions = [p[2] for p in pins]
    return None if order == [p[0] for p in pins] and positions == list(range(len(pins))) else order


def touched(rows: Iterable[OverrideRow]) -> set[int]:
    """Internal ids the given overrides name."""
    return {x for r in rows for x in (r.article_id, r.other_id) if x is not None}
