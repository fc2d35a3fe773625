"""Per-article features (fingerprint + TF-IDF vector) and the IDF models they belong to."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

from sqlalchemy import Row, Select, delete, func, insert, select, update
from sqlalchemy.orm import Session

from recengine.storage.models import Article, ArticleFeatures, IdfModelRow, ModelPart
from recengine.storage.rows.articles import in_chunks


def replace_features(*, session: Session, version: int, rows: Sequence[dict[str, Any]]) -> None:
    """Write features of one model version, replacing what those articles had for it.

    Each row: ``article_id``, ``fingerprint`` (unsigned 64-bit int), ``vector`` (bytes),
    ``n_tokens``.
    """
    if not rows:
        return
    ids = [r["article_id"] for r in rows]
    for chunk in in_chunks(ids):
        session.execute(
            delete(ArticleFeatures).where(
                ArticleFeatures.model_version == version,
                ArticleFeatures.article_id.in_(chunk),
            )
        )
    session.execute(insert(ArticleFeatures), [{**r, "model_version": version} for r in rows])


def features_of(
    *, session: Session, version: int, article_ids: Sequence[int]
) -> list[Row[int, int, bytes, int]]:
    """``(article_id, fingerprint, vector, n_tokens)`` of the given articles under ``version``."""
    out: list[Row[int, int, bytes, int]] = []
    for chunk in in_chunks(article_ids):
        out.extend(
            session.execute(
                select(
                    ArticleFeatures.article_id,
                    ArticleFeatures.fingerprint,
                    ArticleFeatures.vector,
                    ArticleFeatures.n_tokens,
                ).where(
                    ArticleFeatures.model_version == version,
                    ArticleFeatures.article_id.in_(chunk),
                )
            ).all()
        )
    return out


def embeddings_after(
    *, session: Session, version: int, after_id: int, upto_id: int
) -> list[Row[int, str, bytes | None]]:
    """``(article_id, text_hash, embedding)`` of the live articles with ``after_id < id <=
    upto_id`` that have an encoder vector under ``version`` (the article's text hash is what
    the vector's text is checked against before a reindex reuses it)."""
    where = (Article.id > after_id, Article.id <= upto_id)
    return list(session.execute(_embeddings(version).where(*where)).all())


def embeddings_of(
    *, session: Session, version: int, article_ids: Sequence[int]
) -> list[Row[int, str, bytes | None]]:
    """:func:`embeddings_after` of the given articles (any order: a Spark partition's, which a
    repartition shuffles), by ``IN`` lists."""
    out: list[Row[int, str, bytes | None]] = []
    for chunk in in_chunks(article_ids):
        out.extend(session.execute(_embeddings(version).where(Article.id.in_(chunk))).all())
    return out


def _embeddings(version: int) -> Select[int, str, bytes | None]:
    """``(article_id, text_hash, embedding)`` of live articles with an encoder vector under
    ``version``."""
    return (
        select(Article.id, Article.text_hash, ArticleFeatures.embedding)
        .join(
            ArticleFeatures,
            (ArticleFeatures.article_id == Article.id) & (ArticleFeatures.model_version == version),
        )
        .where(Article.deleted_at.is_(None), ArticleFeatures.embedding.is_not(None))
    )


def save_model(
    *,
    session: Session,
    payload: bytes,
    n_docs: int,
    n_terms: int,
    params: dict[str, Any],
    now: datetime,
) -> int:
    """Store a fitted IDF model; returns its version (not yet active)."""
    row = IdfModelRow(
        created_at=now, n_docs=n_docs, n_terms=n_terms, params=params, payload=payload
    )
    session.add(row)
    session.flush()
    return row.version


def model_summary(*, session: Session, version: int) -> tuple[int, int, dict[str, Any]]:
    """``(n_docs, n_terms, params)`` of a stored model, without its payload."""
    row = session.execute(
        select(IdfModelRow.n_docs, IdfModelRow.n_terms, IdfModelRow.params).where(
            IdfModelRow.version == version
        )
    ).one()
    return row.n_docs, row.n_terms, row.params


def load_model_payload(*, session: Session, version: int) -> tuple[bytes, dict[str, Any]]:
    row = session.execute(
        select(IdfModelRow.payload, IdfModelRow.params).where(IdfModelRow.version == version)
    ).one()
    return row.payload, row.params


def save_model_part(
    *,
    session: Session,
    version: int,
    name: str,
    payload: bytes,
    params: dict[str, Any],
    now: datetime,
) -> None:
    """Store what was fitted for ``version`` under ``name`` (replacing an earlier fit)."""
    delete_model_part(session=session, version=version, name=name)
    session.add(
        ModelPart(model_version=version, name=name, created_at=now, params=params, payload=payload)
    )
    session.flush()


def delete_model_part(*, session: Session, version: int, name: str) -> None:
    session.execute(
        delete(ModelPart).where(ModelPart.model_version == version, ModelPart.name == name)
    )


def load_model_part(
    *, session: Session, version: int, name: str
) -> tuple[bytes, dict[str, Any]] | None:
    """``(payload, params)`` of ``version``'s part ``name``; None when none was fitted."""
    row = session.execute(
        select(ModelPart.payload, ModelPart.params).where(
            ModelPart.model_version == version, ModelPart.name == name
        )
    ).one_or_none()
    return None if row is None else (row.payload, row.params)


def delete_features(*, session: Session, version: int, limit: int) -> int:
    """Delete at most ``limit`` feature rows of ``version``; returns how many (0: none left).

    A version is removed a bounded chunk per transaction, so that removing the old version of
    a large corpus never holds the database's write lock for long.
    """
    some = (
        select(ArticleFeatures.article_id)
        .where(ArticleFeatures.model_version == version)
        .limit(limit)
        .scalar_subquery()
    )
    result = session.execute(
        delete(ArticleFeatures).where(
            ArticleFeatures.model_version == version, ArticleFeatures.article_id.in_(some)
        )
    )
    return int(getattr(result, "rowcount", 0) or 0)


def delete_model(*, session: Session, version: int) -> None:
    """Delete the model row of ``version`` (what still refers to it goes by cascade)."""
    session.execute(delete(IdfModelRow).where(IdfModelRow.version == version))


def max_article_id(*, session: Session, version: int) -> int:
    """The largest article id with features under ``version`` (0 when none)."""
    return (
        session.scalar(
            select(func.max(ArticleFeatures.article_id)).where(
                ArticleFeatures.model_version == version
            )
        )
        or 0
    )


def model_versions(*, session: Session) -> list[int]:
    return list(session.scalars(select(IdfModelRow.version).order_by(IdfModelRow.version)))


def update_model_params(*, session: Session, version: int, params: dict[str, Any]) -> None:
    """Replace the stored params of a model (its fit record; the feature settings stay)."""
    session.execute(update(IdfModelRow).where(IdfModelRow.version == version).values(params=params))


def texts_without_features(
    *, session: Session, version: int, after_id: int, limit: int
) -> Sequence[Row[int, str, str, int]]:
    """Live articles with no features under ``version``: ``(id, title, content, seq)``, by id.

    Keyset-paged like ``articles.texts_after``: the next page starts after the last id.
    """
    has = (
        select(ArticleFeatures.article_id)
        .where(ArticleFeatures.article_id == Article.id, ArticleFeatures.model_version == version)
        .exists()
    )
    return session.execute(
        select(Article.id, Article.title, Article.content, Article.seq)
        .where(Article.id > after_id, Article.deleted_at.is_(None), ~has)
        .order_by(Article.id)
        .limit(limit)
    ).all()
