"""Editorial override rows (``overrides``): what editors decided, with who, when and why.

Kinds (:data:`KINDS`) and their shape:

* ``not_duplicate``: ``article_id`` and ``other_id`` are never near-duplicates of each other;
  with no ``other_id``, the article is a near-duplicate of nothing;
* ``same_article``: the pair is one article (one cluster) whatever the criterion says;
* ``canonical``: the article is the canonical copy of its cluster;
* ``pin``: ``other_id`` is shown first in ``article_id``'s related list, by ``position``;
* ``block``: the pair is never shown together;
* ``exclude``: the article is never shown in a related list or a feed (it is not deleted).

Pairs of the symmetric kinds (``not_duplicate``, ``same_article``, ``block``) are stored smaller
id first, so one pair has one spelling. Ids are internal article ids: a reindex never changes
them, and an article's soft deletion keeps its row, so its overrides stay (and are reported as
naming a deleted article).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from functools import cache
from typing import Any

from sqlalchemy import Select, bindparam, delete, exists, func, insert, or_, select, update
from sqlalchemy.orm import Session, aliased

from recengine.storage.models import Article, EngineState, Override
from recengine.storage.rows.articles import in_chunks

NOT_DUPLICATE = "not_duplicate"
SAME_ARTICLE = "same_article"
CANONICAL = "canonical"
PIN = "pin"
BLOCK = "block"
EXCLUDE = "exclude"
KINDS = (NOT_DUPLICATE, SAME_ARTICLE, CANONICAL, PIN, BLOCK, EXCLUDE)
SYMMETRIC = frozenset({NOT_DUPLICATE, SAME_ARTICLE, BLOCK})
# Kinds that decide near-duplicate clusters (the others decide lists and feeds).
CLUSTER_KINDS = (NOT_DUPLICATE, SAME_ARTICLE, CANONICAL)


@dataclass(frozen=True)
class OverrideRow:
    """One override, with the caller ids of its articles and whether they are deleted."""

    id: int
    kind: str
    article_id: int
    other_id: int | None
    position: int | None
    reason: str
    created_by: str
    created_at: datetime
    article: str = ""
    other: str | None = None
    article_deleted: bool = False
    other_deleted: bool = False
    article_title: str = ""
    other_title: str | None = None


@dataclass(frozen=True)
class Relation:
    """The part of an override a computation needs."""

    kind: str
    article_id: int
    other_id: int | None
    position: int | None


def normalised(kind: str, article_id: int, other_id: int | None) -> tuple[int, int | None]:
    """The stored spelling of a pair: smaller id first for the symmetric kinds."""
    if kind in SYMMETRIC and other_id is not None and other_id < article_id:
        return other_id, article_id
    return article_id, other_id


def add_override(
    *,
    session: Session,
    kind: str,
    article_id: int,
    other_id: int | None,
    position: int | None,
    reason: str,
    created_by: str,
    created_at: datetime,
) -> int:
    """Insert one override (ids already normalised); returns its id. Never commits."""
    result = session.execute(
        insert(Override)
        .values(
            kind=kind,
            article_id=article_id,
            other_id=other_id,
            position=position,
            reason=reason,
            created_by=created_by,
            created_at=created_at,
        )
        .returning(Override.id)
    )
    return int(result.scalar_one())


def live_ids(*, session: Session, article_ids: Sequence[int]) -> set[int]:
    """Those of ``article_ids`` that name a live (not deleted) article."""
    out: set[int] = set()
    for chunk in in_chunks(list(article_ids)):
        rows = session.scalars(
            select(Article.id).where(Article.id.in_(chunk), Article.deleted_at.is_(None))
        )
        out.update(int(i) for i in rows)
    return out


def mark_changed(*, session: Session, article_ids: Sequence[int], seq: int) -> None:
    """Give the articles ``seq`` as their last change (nothing else of theirs changes): a
    reindex running meanwhile then catches their clusters up like an edit's, and the indexes
    that follow cluster rows (``derived.neardup.CanonicalKind``) read them again. Those
    already at ``seq`` are left alone."""
    for chunk in in_chunks(list(article_ids)):
        session.execute(
            update(Article).where(Article.id.in_(chunk), Article.seq != seq).values(seq=seq)
        )


def delete_overrides(*, session: Session, ids: Sequence[int]) -> None:
    for chunk in in_chunks(list(ids)):
        session.execute(delete(Override).where(Override.id.in_(chunk)))


def matching(
    *, session: Session, kinds: Sequence[str], article_id: int, other_id: int | None
) -> list[int]:
    """Ids of the overrides of these kinds on exactly this (normalised) article and other."""
    other = Override.other_id.is_(None) if other_id is None else Override.other_id == other_id
    rows = session.scalars(
        select(Override.id)
        .where(Override.kind.in_(list(kinds)), Override.article_id == article_id, other)
        .order_by(Override.id)
    ).all()
    return [int(i) for i in rows]


def pins_of(*, session: Session, article_id: int) -> list[tuple[int, int, int]]:
    """``(override id, pinned article, position)`` of an article's pins, in the editor's order."""
    rows = session.execute(
        select(Override.id, Override.other_id, Override.position)
        .where(Override.kind == PIN, Override.article_id == article_id)
        .order_by(Override.position, Override.id)
    ).all()
    return [(r.id, int(r.other_id), int(r.position or 0)) for r in rows]


def set_position(*, session: Session, override_id: int, position: int) -> None:
    session.execute(update(Override).where(Override.id == override_id).values(position=position))


@cache
def _touching_statement() -> Select[*tuple[Any, ...]]:
    ids: Any = bindparam("ids", expanding=True)
    return select(Override.kind, Override.article_id, Override.other_id, Override.position).where(
        Override.kind.in_(bindparam("kinds", expanding=True)),
        or_(Override.article_id.in_(ids), Override.other_id.in_(ids)),
    )


def relations_touching(
    *, session: Session, article_ids: Sequence[int], kinds: Sequence[str] = KINDS
) -> list[Relation]:
    """Overrides of ``kinds`` whose article or other article is one of ``article_ids``."""
    out: list[Relation] = []
    seen: set[tuple[str, int, int | None]] = set()
    for chunk in in_chunks(list(article_ids)):
        rows = session.execute(_touching_statement(), {"ids": chunk, "kinds": list(kinds)})
        for r in rows:
            key = (r.kind, r.article_id, r.other_id)
            if key not in seen:  # a pair with both ends in two chunks comes back twice
                seen.add(key)
                out.append(Relation(r.kind, r.article_id, r.other_id, r.position))
    return out


@cache
def _presence_statement() -> Select[int, bool]:
    return select(EngineState.seq, exists().where(Override.id.is_not(None))).where(
        EngineState.id == 1
    )


def overrides_exist(*, session: Session) -> tuple[int, bool]:
    """``(change sequence, whether any override exists)``, read in one statement (so both are
    of one snapshot, on PostgreSQL's per-statement snapshots too). Every override write takes a
    sequence number (``state.begin_write``), so the answer holds until the sequence moves."""
    seq, found = session.execute(_presence_statement()).one()
    return int(seq), bool(found)


def relations_of_kinds(*, session: Session, kinds: Sequence[str]) -> list[Relation]:
    """Every override of ``kinds`` (a full recluster reads the cluster overrides this way)."""
    rows = session.execute(
        select(Override.kind, Override.article_id, Override.other_id, Override.position)
        .where(Override.kind.in_(list(kinds)))
        .order_by(Override.id)
    ).all()
    return [Relation(r.kind, r.article_id, r.other_id, r.position) for r in rows]


def list_overrides(
    *,
    session: Session,
    kinds: Sequence[str] = KINDS,
    article_id: int | None = None,
    ids: Sequence[int] | None = None,
    after_id: int = 0,
    limit: int = 1_000,
) -> list[OverrideRow]:
    """Overrides by id, with their articles' caller ids, titles and deletion state.

    Args:
        kinds: of these kinds only.
        article_id: only those naming this article (as either article).
        ids: only these overrides.
        after_id / limit: paging by id.
    """
    first, second = aliased(Article), aliased(Article)
    query = (
        select(
            Override,
            first.external_id,
            first.deleted_at,
            second.external_id.label("other_external"),
            second.deleted_at.label("other_deleted_at"),
            first.title,
            second.title.label("other_title"),
        )
        .join(first, first.id == Override.article_id)
        .outerjoin(second, second.id == Override.other_id)
        .where(Override.kind.in_(list(kinds)), Override.id > after_id)
        .order_by(Override.id)
        .limit(limit)
    )
    if article_id is not None:
        query = query.where(or_(Override.article_id == article_id, Override.other_id == article_id))
    if ids is not None:
        query = query.where(Override.id.in_(list(ids)))
    out = []
    for row in session.execute(query):
        o, external, deleted_at, other_external, other_deleted_at, title, other_title = row
        out.append(
            OverrideRow(
                o.id,
                o.kind,
                o.article_id,
                o.other_id,
                o.position,
                o.reason,
                o.created_by,
                o.created_at,
                external,
                other_external,
                deleted_at is not None,
                other_deleted_at is not None,
                title,
                other_title,
            )
        )
    return out


def count_overrides(*, session: Session) -> dict[str, int]:
    """Overrides per kind."""
    rows = session.execute(select(Override.kind, func.count()).group_by(Override.kind)).all()
    return {str(kind): int(n) for kind, n in rows}
