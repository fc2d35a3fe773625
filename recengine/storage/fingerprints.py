"""Fingerprints as the near-duplicate index reads them: all of them, or what changed since a seq.

:class:`SqlFingerprints` reads inside the caller's session (its transaction decides what is
visible) and has the shape of ``recengine.index.synced.FingerprintSource``. Articles whose text
has no terms (``n_tokens = 0``) are left out: their fingerprint is 0 and says nothing.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence

from sqlalchemy import and_, func, select
from sqlalchemy.orm import Session

from recengine.storage.models import Article, ArticleFeatures
from recengine.storage.state import read_state

PAGE = 50_000


class SqlFingerprints:
    """The fingerprint source of one database session.

    Args:
        session: an open session; every read happens in its transaction.
        page: rows per query (keyset pagination).
    """

    def __init__(self, session: Session, page: int = PAGE) -> None:
        self.session = session
        self.page = page

    def position(self) -> tuple[int, int | None, str]:
        """``(seq, active model version, database identity)``; the identity never holds a
        password."""
        state = read_state(session=self.session)
        bind = self.session.get_bind()
        return state.seq, state.active_model_version, bind.engine.url.render_as_string(True)

    def scan(self, version: int) -> Iterator[tuple[Sequence[int], Sequence[int]]]:
        """Pages of ``(ids, fingerprints)`` of live articles with terms, by id."""
        last = -1
        while True:
            rows = self.session.execute(
                select(ArticleFeatures.article_id, ArticleFeatures.fingerprint)
                .join(Article, Article.id == ArticleFeatures.article_id)
                .where(
                    ArticleFeatures.model_version == version,
                    ArticleFeatures.n_tokens > 0,
                    Article.deleted_at.is_(None),
                    ArticleFeatures.article_id > last,
                )
                .order_by(ArticleFeatures.article_id)
                .limit(self.page)
            ).all()
            if not rows:
                return
            yield [r[0] for r in rows], [r[1] for r in rows]
            last = rows[-1][0]

    def changes_since(
        self, seq: int, version: int
    ) -> Iterator[tuple[Sequence[int], Sequence[int | None]]]:
        """Pages of ``(ids, fingerprint or None)`` of articles changed after ``seq``."""
        position = (seq + 1, -1)  # every row with a larger seq
        while True:
            s, last = position
            rows = self.session.execute(
                select(
                    Article.id,
                    Article.seq,
                    Article.deleted_at,
                    ArticleFeatures.fingerprint,
                    ArticleFeatures.n_tokens,
                )
                .outerjoin(
                    ArticleFeatures,
                    and_(
                        ArticleFeatures.article_id == Article.id,
                        ArticleFeatures.model_version == version,
                    ),
                )
                .where((Article.seq > s) | ((Article.seq == s) & (Article.id > last)))
                .order_by(Article.seq, Article.id)
                .limit(self.page)
            ).all()
            if not rows:
                return
            yield (
                [r.id for r in rows],
                [r.fingerprint if r.deleted_at is None and r.n_tokens else None for r in rows],
            )
            position = (rows[-1].seq, rows[-1].id)

    def count(self, version: int) -> int:
        """How many articles :meth:`scan` yields."""
        return (
            self.session.scalar(
                select(func.count())
                .select_from(ArticleFeatures)
                .join(Article, Article.id == ArticleFeatures.article_id)
                .where(
                    ArticleFeatures.model_version == version,
                    ArticleFeatures.n_tokens > 0,
                    Article.deleted_at.is_(None),
                )
            )
            or 0
        )
