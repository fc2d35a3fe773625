"""The rows every derived index is built from and follows: one full scan, one change query.

:class:`SqlIndexRows` has the shape of ``recengine.index.kind.RowReader``: it reads inside a
session's transaction (the caller's decides what is visible) and opens short transactions of
its own on the same engine for builds (:meth:`SqlIndexRows.separately`).

* :meth:`SqlIndexRows.live`: live articles with features of a model version, keyset-paged by id
  (a build);
* :meth:`SqlIndexRows.changes`: every article whose ``seq`` is in a range, keyset-paged by
  ``(seq, id)``, deleted ones included (soft deletion keeps them visible here), each with
  ``present``: false when the index must drop it (deleted, no features under the version, or
  no terms for a kind that needs them, a member of a near-duplicate cluster for a kind of
  canonicals only). Writers commit in ``seq`` order
  (``state.begin_write``), so reading ``(after, upto]`` for an ``upto`` read from
  ``engine_state`` earlier misses nothing, even under PostgreSQL's per-statement snapshots.

Which columns come back is the kind's choice (``fields``): the near-duplicate index reads
16 bytes per article, not the vectors the related index needs; the passage index reads the
texts (its hashes are a function of them).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from functools import cache
from typing import Any

from sqlalchemy import (
    BindParameter,
    ColumnElement,
    Select,
    and_,
    bindparam,
    case,
    exists,
    func,
    select,
)
from sqlalchemy.orm import Session, sessionmaker

from recengine.storage.db import read_core
from recengine.storage.models import Article, ArticleFeatures, ClusterMember
from recengine.storage.rows.features import load_model_part
from recengine.storage.state import state_statement

COLUMNS: dict[str, Any] = {
    "fingerprint": ArticleFeatures.fingerprint,
    "vector": ArticleFeatures.vector,
    "embedding": ArticleFeatures.embedding,
    "n_tokens": ArticleFeatures.n_tokens,
    "published_at": Article.published_at,
    "category": Article.category,
    "tags": Article.tags,
    "title": Article.title,
    "content": Article.content,
    "external_id": Article.external_id,
    "url": Article.url,
    "card_image": Article.card_image,
    "card_summary": Article.card_summary,
    "card_rule": Article.card_rule,
}
# The article's member row under the version (NULL for a canonical or a singleton): read through
# an outer join when a kind asks for any of them (``derived.briefs``).
MEMBER_COLUMNS: dict[str, Any] = {
    "canonical_id": ClusterMember.canonical_id,
    "member_rule": ClusterMember.rule,
    "member_score": ClusterMember.score,
    "member_distance": ClusterMember.distance,
}


def features_join(version: int | BindParameter[int]) -> ColumnElement[bool]:
    """Articles joined to their features of one model version."""
    return and_(ArticleFeatures.article_id == Article.id, ArticleFeatures.model_version == version)


def _not_member(version: int | BindParameter[int]) -> ColumnElement[bool]:
    """The article has no member row under ``version`` (a canonical or a singleton)."""
    row = exists().where(
        ClusterMember.article_id == Article.id, ClusterMember.model_version == version
    )
    return ~row


def _present(
    version: int | BindParameter[int], needs_terms: bool, canonicals_only: bool
) -> ColumnElement[bool]:
    """What a live article joined to its features must also be to be in a kind's index."""
    out: ColumnElement[bool] = Article.deleted_at.is_(None)
    if needs_terms:
        out = and_(out, ArticleFeatures.n_tokens > 0)
    if canonicals_only:
        out = and_(out, _not_member(version))
    return out


def _columns(fields: Sequence[str]) -> list[Any]:
    known = {**COLUMNS, **MEMBER_COLUMNS}
    try:
        return [Article.id, Article.seq, *(known[f].label(f) for f in fields)]
    except KeyError as exc:
        raise ValueError(f"no index row field {exc}; known: {sorted(known)}") from None


def _with_member(
    query: Select[Any], fields: Sequence[str], version: int | BindParameter[int]
) -> Select[Any]:
    """``query`` outer-joined to the articles' member rows under ``version`` when ``fields``
    name any of :data:`MEMBER_COLUMNS` (a row per article: the key is the version and id)."""
    if not any(f in MEMBER_COLUMNS for f in fields):
        return query
    own = and_(ClusterMember.article_id == Article.id, ClusterMember.model_version == version)
    return query.outerjoin(ClusterMember, own)


class SqlIndexRows:
    """Index rows read in ``session``'s transaction.

    Args:
        session: an open session; every read happens in its transaction.
    """

    def __init__(self, session: Session) -> None:
        self.session = session

    def position(self) -> tuple[int, int | None, str]:
        """``(seq, active model version or None, database identity)``."""
        # every answer reads it: without the ORM's execution layer (the state row is only
        # ever written by Core statements, so nothing unflushed can change it)
        row: Any = read_core(self.session, state_statement()).one()
        return int(row[0]), row[1], str(row[2])

    def live(
        self,
        *,
        version: int,
        fields: Sequence[str],
        needs_terms: bool,
        after_id: int,
        limit: int,
        canonicals_only: bool = False,
    ) -> Sequence[Any]:
        query = (
            select(*_columns(fields))
            .join(ArticleFeatures, features_join(version))
            .where(Article.id > after_id, _present(version, needs_terms, canonicals_only))
            .order_by(Article.id)
            .limit(limit)
        )
        return self.session.execute(_with_member(query, fields, version)).all()

    def changes(
        self,
        *,
        version: int,
        fields: Sequence[str],
        needs_terms: bool,
        after: tuple[int, int],
        upto: int,
        limit: int,
        canonicals_only: bool = False,
    ) -> Sequence[Any]:
        seq, last_id = after
        statement = _changes_statement(tuple(fields), needs_terms, canonicals_only)
        values = {"version": version, "seq": seq, "last_id": last_id, "upto": upto, "n": limit}
        return self.session.execute(statement, values).all()

    def count(self, *, version: int, needs_terms: bool, canonicals_only: bool = False) -> int:
        query = (
            select(func.count())
            .select_from(Article)
            .join(ArticleFeatures, features_join(version))
            .where(_present(version, needs_terms, canonicals_only))
        )
        return int(self.session.scalar(query) or 0)

    def model_part(self, *, version: int, name: str) -> bytes | None:
        found = load_model_part(session=self.session, version=version, name=name)
        return None if found is None else found[0]

    @contextmanager
    def separately(self) -> Iterator[SqlIndexRows]:
        factory = sessionmaker(bind=self.session.get_bind(), expire_on_commit=False)
        with factory() as session, session.begin():
            yield SqlIndexRows(session)


@cache
def _changes_statement(
    fields: tuple[str, ...], needs_terms: bool, canonicals_only: bool
) -> Select[Any]:
    """Built once per kind: every write reads each follower's changes (twice), and building
    the statement costs more than running it."""
    version: BindParameter[int] = bindparam("version")
    seq: BindParameter[int] = bindparam("seq")
    present = and_(
        ArticleFeatures.article_id.is_not(None), _present(version, needs_terms, canonicals_only)
    )
    flag = case((present, True), else_=False).label("present")
    query = select(*_columns(fields), flag).outerjoin(ArticleFeatures, features_join(version))
    return (
        _with_member(query, fields, version)
        .where(
            (Article.seq > seq) | ((Article.seq == seq) & (Article.id > bindparam("last_id"))),
            Article.seq <= bindparam("upto"),
        )
        .order_by(Article.seq, Article.id)
        .limit(bindparam("n"))
    )


@contextmanager
def index_rows(factory: sessionmaker[Session]) -> Iterator[SqlIndexRows]:
    """Index rows in a short read transaction of their own."""
    with factory() as session, session.begin():
        yield SqlIndexRows(session)
