"""The article facts a related query needs, read per request (the rows indexes are built from
and follow are ``storage.rows.index_rows``)."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from functools import cache
from typing import Any

from sqlalchemy import Integer, Row, Select, bindparam, select
from sqlalchemy.orm import Session

from recengine.storage.db import read_core
from recengine.storage.models import Article, ArticleFeatures
from recengine.storage.rows.articles import in_chunks
from recengine.storage.rows.index_rows import features_join

# id, external_id, title, url, category, tags, fingerprint, vector, published_at
QueryRow = Row[int, str, str, str | None, str | None, list[str], int, bytes, datetime | None]


# Statements of the per-request reads are built once (SQLAlchemy's statement construction
# costs more than SQLite's execution here); values come in as bound parameters.


# What a list shows of an article (and filters explanations by).
_SHOWN = (
    Article.id,
    Article.external_id,
    Article.title,
    Article.url,
    Article.category,
    Article.tags,
)


@cache
def _query_article_statement() -> Select[*tuple[Any, ...]]:
    return (
        select(*_SHOWN, ArticleFeatures.fingerprint, ArticleFeatures.vector, Article.published_at)
        .outerjoin(ArticleFeatures, features_join(bindparam("version", type_=Integer)))
        .where(Article.external_id == bindparam("external_id"), Article.deleted_at.is_(None))
    )


def query_article(*, session: Session, external_id: str, version: int | None) -> QueryRow | None:
    """The live article with this caller id and its features under ``version`` (or None).

    Row: ``id, external_id, title, url, category, tags, fingerprint, vector, published_at``
    (fingerprint and vector None when the article has no features of that version).
    """
    params = {"external_id": external_id, "version": -1 if version is None else version}
    row: Any = read_core(session, _query_article_statement(), params).one_or_none()
    found: QueryRow | None = row
    return found


@cache
def _features_statement() -> Select[*tuple[Any, ...]]:
    return select(
        Article.id, ArticleFeatures.fingerprint, ArticleFeatures.vector, Article.published_at
    ).join(ArticleFeatures, features_join(bindparam("version", type_=Integer)))


def features_by_id(*, session: Session, version: int, ids: Sequence[int]) -> dict[int, Row[Any]]:
    """Live articles' ``(id, fingerprint, vector, published_at)`` under ``version``, by id."""
    return _live_by_id(session, _features_statement(), ids, {"version": version})


@cache
def _briefs_statement() -> Select[*tuple[Any, ...]]:
    return select(
        *_SHOWN, Article.published_at, Article.card_image, Article.card_summary, Article.seq
    )


def briefs(*, session: Session, ids: Sequence[int]) -> dict[int, Row[Any]]:
    """Live articles' ``(id, external_id, title, url, category, tags, published_at,
    card_image, card_summary, seq)``, by id (the card: ``pipeline.cards``)."""
    return _live_by_id(session, _briefs_statement(), ids, {})


def _live_by_id(
    session: Session,
    query: Select[*tuple[Any, ...]],
    ids: Sequence[int],
    params: dict[str, Any],
) -> dict[int, Row[Any]]:
    """Rows of ``query`` (its first column ``Article.id``) for the live articles among ``ids``."""
    statement = _live_among(query)
    out: dict[int, Row[Any]] = {}
    for chunk in in_chunks(ids):
        rows = read_core(session, statement, {**params, "ids": chunk}).all()
        out.update({r[0]: r for r in rows})
    return out


@cache
def _live_among(query: Select[*tuple[Any, ...]]) -> Select[*tuple[Any, ...]]:
    return query.where(
        Article.id.in_(bindparam("ids", expanding=True)), Article.deleted_at.is_(None)
    )


def internal_ids(*, session: Session, external_ids: Sequence[str]) -> dict[str, int]:
    """Caller id -> internal id, for the ids that exist (deleted ones included)."""
    out: dict[str, int] = {}
    for chunk in in_chunks(external_ids):
        rows = session.execute(
            select(Article.external_id, Article.id).where(Article.external_id.in_(chunk))
        ).all()
        out.update({r.external_id: r.id for r in rows})
    return out


def fingerprints_and_seqs(
    *, session: Session, version: int, ids: Sequence[int]
) -> dict[int, tuple[int, int]]:
    """``id -> (fingerprint under version, seq)`` of the given articles that have features
    under ``version`` (deleted ones included). ``seq`` is the article's last change: what was
    computed of its text at one ``seq`` holds until it changes."""
    out: dict[int, tuple[int, int]] = {}
    for chunk in in_chunks(ids):
        rows = session.execute(
            select(Article.id, ArticleFeatures.fingerprint, Article.seq)
            .join(ArticleFeatures, features_join(version))
            .where(Article.id.in_(chunk))
        ).all()
        out.update({r.id: (r.fingerprint, r.seq) for r in rows})
    return out


def fingerprints_by_id(*, session: Session, version: int, ids: Sequence[int]) -> dict[int, int]:
    """Fingerprints under ``version`` of the given articles (deleted ones included)."""
    out: dict[int, int] = {}
    for chunk in in_chunks(ids):
        rows = session.execute(
            select(ArticleFeatures.article_id, ArticleFeatures.fingerprint).where(
                ArticleFeatures.model_version == version,
                ArticleFeatures.article_id.in_(chunk),
            )
        ).all()
        out.update({r.article_id: r.fingerprint for r in rows})
    return out
