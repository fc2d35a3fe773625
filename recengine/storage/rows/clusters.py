"""Near-duplicate cluster rows: ``cluster_members`` (member -> canonical, distance, score).

A canonical article has no row of its own; each other member of its cluster has one. An article
with no row that no row points to is a singleton.

Rows belong to an IDF model version, like features: writers name the version they write (ingest:
the active one; a reindex: its new one, before the switch); readers see the active version's
(:func:`active_rows`, a sub-select of ``engine_state``), so a switch changes every answer at
once without rewriting a row.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from datetime import datetime
from functools import cache
from typing import Any

from sqlalchemy import (
    BindParameter,
    ColumnElement,
    CompoundSelect,
    bindparam,
    delete,
    insert,
    select,
    text,
    union_all,
)
from sqlalchemy.orm import Session, aliased

from recengine.storage.db import read_core
from recengine.storage.models import Article, ClusterMember, EngineState
from recengine.storage.rows.articles import in_chunks


@dataclass(frozen=True)
class MemberRow:
    article_id: int
    canonical_id: int
    distance: int
    score: float | None
    rule: str | None = None  # "resemblance" / "containment"; None: written before it was kept


def active_rows() -> ColumnElement[bool]:
    """``cluster_members`` rows of the active model version."""
    active = select(EngineState.active_model_version).where(EngineState.id == 1)
    return ClusterMember.model_version == active.scalar_subquery()


def canonicals_of(*, session: Session, version: int, article_ids: Sequence[int]) -> dict[int, int]:
    """``member id -> canonical id`` under ``version`` for those of ``article_ids`` that are
    members."""
    rows = session.execute(
        *_ids_query(session, "SELECT article_id, canonical_id", version, article_ids)
    )
    return {int(r[0]): int(r[1]) for r in rows}


def not_members(*, session: Session, version: int, article_ids: Sequence[int]) -> list[int]:
    """Those of ``article_ids`` without a member row under ``version`` (canonicals and
    singletons), sorted.

    A write into a large cluster asks this for every member (they are all its candidates):
    the ids travel as one parameter (a JSON array on SQLite, an array on PostgreSQL) and only
    the few that qualify come back, so the cost is one index probe per id inside the
    database (an ``IN`` of thousands of bound values costs more to build than the query)."""
    ids = sorted({int(i) for i in article_ids})
    if not ids:
        return []
    if session.get_bind().dialect.name == "sqlite":
        sql = (
            "SELECT value FROM json_each(:ids) WHERE value NOT IN "
            "(SELECT article_id FROM cluster_members WHERE model_version = :version "
            "AND article_id IN (SELECT value FROM json_each(:ids))) ORDER BY value"
        )
        rows = session.execute(text(sql), {"ids": json.dumps(ids), "version": version})
    else:
        sql = (
            "SELECT v FROM unnest(CAST(:ids AS BIGINT[])) AS v WHERE NOT EXISTS "
            "(SELECT 1 FROM cluster_members m WHERE m.model_version = :version "
            "AND m.article_id = v) ORDER BY v"
        )
        rows = session.execute(text(sql), {"ids": ids, "version": version})
    return [int(r[0]) for r in rows]


def _ids_query(
    session: Session, head: str, version: int, article_ids: Sequence[int]
) -> tuple[Any, Any]:
    """``(statement, parameters)``: ``head`` FROM cluster_members for the rows of ``version``
    of the given article ids, the ids as one parameter (see :func:`not_members`)."""
    ids = sorted({int(i) for i in article_ids})
    mine = "model_version = :version AND "
    if session.get_bind().dialect.name == "sqlite":
        where = mine + "article_id IN (SELECT value FROM json_each(:ids))"
        params: dict[str, Any] = {"ids": json.dumps(ids), "version": version}
    else:
        where, params = mine + "article_id = ANY(:ids)", {"ids": ids, "version": version}
    return text(f"{head} FROM cluster_members WHERE {where}"), params


def replace_member_rows(
    *, session: Session, version: int, article_ids: Sequence[int], rows: Sequence[MemberRow]
) -> None:
    """Delete the member rows of ``version`` of ``article_ids`` (rows pointing at them as
    canonical stay), then insert ``rows`` under it."""
    for chunk in in_chunks(list(article_ids)):
        session.execute(
            delete(ClusterMember).where(
                ClusterMember.model_version == version, ClusterMember.article_id.in_(chunk)
            )
        )
    insert_rows(session=session, version=version, rows=rows)


def insert_rows(*, session: Session, version: int, rows: Sequence[MemberRow]) -> None:
    if rows:
        session.execute(
            insert(ClusterMember), [{**r.__dict__, "model_version": version} for r in rows]
        )


def delete_version(*, session: Session, version: int, limit: int | None = None) -> int:
    """Delete the rows of ``version`` (at most ``limit`` of them); returns how many."""
    if limit is None:
        return _rowcount(
            session.execute(delete(ClusterMember).where(ClusterMember.model_version == version))
        )
    some = (
        select(ClusterMember.article_id)
        .where(ClusterMember.model_version == version)
        .limit(limit)
        .scalar_subquery()
    )
    return _rowcount(
        session.execute(
            delete(ClusterMember).where(
                ClusterMember.model_version == version, ClusterMember.article_id.in_(some)
            )
        )
    )


def _rowcount(result: Any) -> int:
    return int(getattr(result, "rowcount", 0) or 0)


def published(*, session: Session, article_ids: Sequence[int]) -> dict[int, datetime | None]:
    """``published_at`` of the given articles (the canonical order's first key)."""
    out: dict[int, datetime | None] = {}
    ids = list(article_ids)
    for chunk in in_chunks(ids):
        rows = session.execute(
            select(Article.id, Article.published_at).where(Article.id.in_(chunk))
        )
        out.update({r.id: r.published_at for r in rows})
    return out


def live_published(*, session: Session, article_ids: Sequence[int]) -> dict[int, datetime | None]:
    """``published_at`` of those of the given articles that are not deleted."""
    out: dict[int, datetime | None] = {}
    for chunk in in_chunks(list(article_ids)):
        rows = session.execute(
            select(Article.id, Article.published_at).where(
                Article.id.in_(chunk), Article.deleted_at.is_(None)
            )
        )
        out.update({r.id: r.published_at for r in rows})
    return out


def canonical_of(*, session: Session, article_id: int) -> MemberRow | None:
    """The row of ``article_id`` if it is a member (None: a canonical or a singleton)."""
    row = session.scalars(
        select(ClusterMember).where(active_rows(), ClusterMember.article_id == article_id)
    ).one_or_none()
    if row is None:
        return None
    return MemberRow(row.article_id, row.canonical_id, row.distance, row.score, row.rule)


def clusters_of(*, session: Session, article_ids: Sequence[int]) -> dict[int, int]:
    """``article id -> canonical id`` for those of ``article_ids`` in a cluster of two or more.

    A member maps to its canonical, a canonical to itself; singletons are absent. One round
    trip per ``IN_CHUNK`` ids (related lists ask this for every candidate they show).
    """
    out: dict[int, int] = {}
    ids = sorted(set(article_ids))
    for chunk in in_chunks(ids):
        rows: Any = read_core(session, _clusters_statement(), {"ids": chunk})
        for row in rows:
            article_id, canonical_id = int(row[0]), int(row[1])
            if out.get(article_id, article_id) == article_id:  # a member's own row wins
                out[article_id] = canonical_id
    return out


@cache
def _clusters_statement() -> CompoundSelect[*tuple[Any, ...]]:
    """Built once: members' rows, and canonicals (as pointing at themselves)."""
    ids: BindParameter[int] = bindparam("ids", expanding=True)
    members = select(ClusterMember.article_id, ClusterMember.canonical_id).where(
        active_rows(), ClusterMember.article_id.in_(ids)
    )
    heads = (
        select(ClusterMember.canonical_id, ClusterMember.canonical_id)
        .where(active_rows(), ClusterMember.canonical_id.in_(ids))
        .distinct()
    )
    return union_all(members, heads)


def member_ids(*, session: Session, version: int) -> list[int]:
    """Every member id under ``version`` (a full recluster's rows before it replaces them)."""
    rows = session.execute(
        select(ClusterMember.article_id).where(ClusterMember.model_version == version)
    )
    return [int(r[0]) for r in rows]


def members_of_all(*, session: Session, version: int, canonical_ids: Sequence[int]) -> list[int]:
    """Member ids under ``version`` of the given canonicals, one read per ``IN_CHUNK``."""
    out: list[int] = []
    for chunk in in_chunks(sorted(set(canonical_ids))):
        rows = session.execute(
            select(ClusterMember.article_id).where(
                ClusterMember.model_version == version, ClusterMember.canonical_id.in_(chunk)
            )
        )
        out += [int(r[0]) for r in rows]
    return out


def earliest_members(
    *, session: Session, version: int, canonical_id: int, limit: int = 8
) -> dict[int, datetime | None]:
    """``published_at`` of the ``limit`` earliest-published members of a canonical under
    ``version`` (deleted ones included; undated ones last, then by id): one read whatever the
    cluster's size, the caller ranks them exactly (``pipeline.clusters.leader_rule.rank_key``)."""
    rows = session.execute(
        select(Article.id, Article.published_at)
        .join(ClusterMember, ClusterMember.article_id == Article.id)
        .where(ClusterMember.model_version == version, ClusterMember.canonical_id == canonical_id)
        .order_by(Article.published_at.is_(None), Article.published_at, Article.id)
        .limit(limit)
    )
    return {int(r.id): r.published_at for r in rows}


def member_rows(*, session: Session, article_ids: Sequence[int]) -> dict[int, MemberRow]:
    """The active rows of those of ``article_ids`` that are members (canonicals and singletons
    have none), by article id; one read per ``IN_CHUNK`` ids."""
    out: dict[int, MemberRow] = {}
    for chunk in in_chunks(sorted(set(article_ids))):
        rows = session.scalars(
            select(ClusterMember).where(active_rows(), ClusterMember.article_id.in_(chunk))
        )
        out.update(
            {
                r.article_id: MemberRow(r.article_id, r.canonical_id, r.distance, r.score, r.rule)
                for r in rows
            }
        )
    return out


def members_of(*, session: Session, canonical_id: int) -> list[MemberRow]:
    rows = session.execute(
        select(ClusterMember)
        .where(active_rows(), ClusterMember.canonical_id == canonical_id)
        .order_by(ClusterMember.article_id)
    ).scalars()
    return [MemberRow(r.article_id, r.canonical_id, r.distance, r.score, r.rule) for r in rows]


def iter_members(
    *, session: Session, page: int = 10_000
) -> Iterator[list[tuple[str, str, int, float | None, str | None]]]:
    """Pages of ``(canonical external id, member external id, distance, score, rule)``, grouped
    by canonical (ordered by canonical internal id, then member id)."""
    canonical = aliased(Article)
    member = aliased(Article)
    position = (-1, -1)
    while True:
        c, m = position
        rows = session.execute(
            select(
                ClusterMember.canonical_id,
                ClusterMember.article_id,
                canonical.external_id,
                member.external_id,
                ClusterMember.distance,
                ClusterMember.score,
                ClusterMember.rule,
            )
            .join(canonical, canonical.id == ClusterMember.canonical_id)
            .join(member, member.id == ClusterMember.article_id)
            .where(
                active_rows(),
                (ClusterMember.canonical_id > c)
                | ((ClusterMember.canonical_id == c) & (ClusterMember.article_id > m)),
            )
            .order_by(ClusterMember.canonical_id, ClusterMember.article_id)
            .limit(page)
        ).all()
        if not rows:
            return
        yield [(r[2], r[3], r[4], r[5], r[6]) for r in rows]
        position = (rows[-1][0], rows[-1][1])
