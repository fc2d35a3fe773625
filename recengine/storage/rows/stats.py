"""Read-only corpus statistics for the editors' report: counts, fingerprints, clusters."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from sqlalchemy import Row, func, select
from sqlalchemy.orm import Session, aliased

from recengine.storage.models import Article, ArticleFeatures, ClusterMember, IdfModelRow
from recengine.storage.rows.articles import in_chunks
from recengine.storage.rows.clusters import active_rows


@dataclass(frozen=True)
class Counts:
    live: int
    deleted: int
    with_features: int


def corpus_counts(*, session: Session, version: int | None) -> Counts:
    live = session.scalar(select(func.count()).where(Article.deleted_at.is_(None))) or 0
    deleted = session.scalar(select(func.count()).where(Article.deleted_at.is_not(None))) or 0
    featured = 0
    if version is not None:
        featured = (
            session.scalar(
                select(func.count())
                .select_from(ArticleFeatures)
                .join(Article, Article.id == ArticleFeatures.article_id)
                .where(ArticleFeatures.model_version == version, Article.deleted_at.is_(None))
            )
            or 0
        )
    return Counts(live, deleted, featured)


def live_fingerprints(*, session: Session, version: int) -> Sequence[Row[int, int]]:
    """``(article_id, fingerprint)`` of every live article under ``version``, by id."""
    return session.execute(
        select(ArticleFeatures.article_id, ArticleFeatures.fingerprint)
        .join(Article, Article.id == ArticleFeatures.article_id)
        .where(ArticleFeatures.model_version == version, Article.deleted_at.is_(None))
        .order_by(ArticleFeatures.article_id)
    ).all()


def cluster_sizes(*, session: Session) -> dict[int, int]:
    """canonical id -> members other than the canonical itself (live articles only)."""
    rows = session.execute(
        select(ClusterMember.canonical_id, func.count())
        .join(Article, Article.id == ClusterMember.article_id)
        .where(active_rows(), ClusterMember.article_id != ClusterMember.canonical_id)
        .where(Article.deleted_at.is_(None))
        .group_by(ClusterMember.canonical_id)
    ).all()
    return {int(canonical): int(n) for canonical, n in rows}


def cluster_members_of(
    *, session: Session, canonical_ids: Sequence[int]
) -> Sequence[Row[int, int, str, int]]:
    """``(canonical_id, article_id, title, distance)`` of the members of these clusters."""
    out: list[Row[int, int, str, int]] = []
    for chunk in in_chunks(canonical_ids):
        out.extend(
            session.execute(
                select(
                    ClusterMember.canonical_id,
                    ClusterMember.article_id,
                    Article.title,
                    ClusterMember.distance,
                )
                .join(Article, Article.id == ClusterMember.article_id)
                .where(active_rows(), ClusterMember.canonical_id.in_(chunk))
                .where(ClusterMember.article_id != ClusterMember.canonical_id)
                .where(Article.deleted_at.is_(None))
                .order_by(ClusterMember.canonical_id, ClusterMember.distance, Article.id)
            ).all()
        )
    return out


def titles(*, session: Session, article_ids: Sequence[int]) -> dict[int, tuple[str, str]]:
    """article id -> ``(external id, title)``."""
    canonical = aliased(Article)
    out: dict[int, tuple[str, str]] = {}
    for chunk in in_chunks(article_ids):
        rows = session.execute(
            select(canonical.id, canonical.external_id, canonical.title).where(
                canonical.id.in_(chunk)
            )
        )
        out.update({r.id: (r.external_id, r.title) for r in rows})
    return out


def urls_of(*, session: Session, article_ids: Sequence[int]) -> dict[int, str]:
    """article id -> stored url, for those of ``article_ids`` that have one."""
    out: dict[int, str] = {}
    for chunk in in_chunks(article_ids):
        rows = session.execute(
            select(Article.id, Article.url).where(Article.id.in_(chunk), Article.url.is_not(None))
        )
        out.update({r.id: r.url for r in rows if r.url})
    return out


def member_distances(*, session: Session) -> list[int]:
    """The stored distance of every live cluster member to its canonical (canonicals left out)."""
    return list(
        session.scalars(
            select(ClusterMember.distance)
            .join(Article, Article.id == ClusterMember.article_id)
            .where(active_rows(), ClusterMember.article_id != ClusterMember.canonical_id)
            .where(Article.deleted_at.is_(None))
        )
    )


def latest_titles(*, session: Session, limit: int) -> list[str]:
    """Titles of the ``limit`` most recently stored live articles (a sample of the corpus)."""
    return list(
        session.scalars(
            select(Article.title)
            .where(Article.deleted_at.is_(None))
            .order_by(Article.id.desc())
            .limit(limit)
        )
    )


@dataclass(frozen=True)
class ReindexProgress:
    """A reindex seen from SQL: the newest IDF model that is not active yet, if any.

    Pass 1 (tokenizing, document frequencies) leaves nothing in SQL; the new model row appears
    when it ends, and pass 2 writes the new version's features in id order, so ``written`` out
    of ``live`` is how far pass 2 is. A reindex interrupted after pass 1 shows as pending until
    it is resumed (or its model is deleted).
    """

    version: int | None
    written: int
    live: int


def reindex_progress(*, session: Session, active: int | None) -> ReindexProgress:
    newest = session.scalar(select(func.max(IdfModelRow.version)))
    if newest is None or (active is not None and newest <= active):
        return ReindexProgress(None, 0, 0)
    written = session.scalar(
        select(func.count())
        .select_from(ArticleFeatures)
        .where(ArticleFeatures.model_version == newest)
    )
    live = session.scalar(select(func.count()).where(Article.deleted_at.is_(None)))
    return ReindexProgress(int(newest), int(written or 0), int(live or 0))
