"""Real articles and lightly edited reposts of them, and the cluster state of a database."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session, sessionmaker

from recengine.features.neardup import NearDupCriterion
from recengine.features.tfidf import SparseVector
from recengine.pipeline.featurize import compared_of
from recengine.storage.models import Article, ArticleFeatures, ClusterMember
from recengine.storage.state import read_state
from tests.factories import javaguide_records


def repost(record: dict[str, Any], n: int, day: int) -> dict[str, Any]:
    """A repost: a header and a footer added, the last paragraph dropped, published later."""
    paragraphs = record["content"].split("\n\n")
    body = "\n\n".join(paragraphs[:-1]) if len(paragraphs) > 4 else record["content"]
    return {
        **record,
        "id": f"repost{n}-{record['id']}",
        "content": f"转载自某技术博客，原文链接：https://example.com/{n}\n\n{body}\n\n"
        "版权声明：本文为博主原创文章，转载请附上原文出处链接及本声明。",
        "published_at": f"2024-03-{day:02d}T08:00:00+00:00",
    }


def corpus(
    data: Path, n_bases: int, n_reposts: int
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Real JavaGuide articles (distinct publication days) and reposts of the first ones."""
    bases = [
        {**r, "published_at": f"2024-01-{1 + i % 28:02d}T{i // 28:02d}:00:00+00:00"}
        for i, r in enumerate(javaguide_records(data, n_bases))
    ]
    reposts = [repost(bases[i], i, 1 + i % 28) for i in range(n_reposts)]
    return bases, reposts


def clusters(factory: sessionmaker[Session]) -> dict[str, tuple[str, int]]:
    """member external id -> (canonical external id, distance)."""
    with factory() as session:
        names = {r[0]: r[1] for r in session.execute(select(Article.id, Article.external_id))}
        rows = session.scalars(select(ClusterMember)).all()
        return {names[r.article_id]: (names[r.canonical_id], r.distance) for r in rows}


def check_invariants(factory: sessionmaker[Session], criterion: NearDupCriterion) -> None:
    """Every member is within the criterion of its canonical, which ranks first and has no row;
    no member is deleted."""
    with factory() as session:
        version = read_state(session=session).active_model_version
        feats = {
            f.article_id: (f.fingerprint, SparseVector.from_bytes(f.vector))
            for f in session.scalars(
                select(ArticleFeatures).where(ArticleFeatures.model_version == version)
            )
        }
        articles = {a.id: a for a in session.scalars(select(Article))}
        rows = session.scalars(select(ClusterMember)).all()
        members = {r.article_id for r in rows}
        sh = {i: compared_of(a.title, a.content) for i, a in articles.items()}
        for r in rows:
            assert r.canonical_id not in members
            assert articles[r.article_id].deleted_at is None
            assert articles[r.canonical_id].deleted_at is None
            verdict = criterion.judge(
                *feats[r.canonical_id], *feats[r.article_id], sh[r.canonical_id], sh[r.article_id]
            )
            assert verdict.duplicate and verdict.distance == r.distance
            member, head = articles[r.article_id], articles[r.canonical_id]
            assert _rank(head) < _rank(member)


def _rank(article: Article) -> tuple[int, float, int]:
    if article.published_at is None:
        return (1, 0.0, article.id)
    return (0, article.published_at.timestamp(), article.id)
