"""Stored articles as callers see them: one article, and the live articles page by page.

The bodies of ``GET /api/v1/articles/<id>`` and ``GET /api/v1/articles`` and of ``recengine
article show`` / ``recengine article list``, built here once for both edges. Times are UTC in
ISO 8601 with ``Z``, as the HTTP API writes them.

A listing pages by a cursor: the articles' storage order (an internal id that only grows), so a
page after ``next_after`` never repeats or skips an article whatever is written meanwhile;
``next_after`` is None on the last page.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy.orm import Session

from recengine.errors import NotFound
from recengine.recommend.lists.params import check_id, check_int
from recengine.storage.models import Article
from recengine.storage.rows.articles import get_article, live_articles_after
from recengine.times import utc_text as utc_text

MAX_LIMIT = 1_000  # articles per page
MAX_CURSOR = 2**63 - 1  # ids are SQL BIGINT


def show_article(*, session: Session, external_id: str) -> dict[str, Any]:
    """The stored article: ``{"id", "title", "content", "url", "tags", "category", "author",
    "published_at", "image", "summary", "created_at", "updated_at"}`` (image and summary as
    the record gave them, null when it did not).

    Raises:
        NotFound: no live article has that id (a deleted one included).
    """
    article = get_article(session=session, external_id=check_id(external_id))
    if article is None:
        raise NotFound.article(external_id)
    return article_body(article)


def article_body(article: Article) -> dict[str, Any]:
    return {
        "id": article.external_id,
        "title": article.title,
        "content": article.content,
        "url": article.url,
        "tags": list(article.tags),
        "category": article.category,
        "author": article.author,
        "published_at": utc_text(article.published_at),
        "image": article.image,
        "summary": article.summary,
        "created_at": utc_text(article.created_at),
        "updated_at": utc_text(article.updated_at),
    }


def list_articles(
    *, session: Session, after: int | str = 0, limit: int | str = 100
) -> dict[str, Any]:
    """A page of live articles in storage order: ``{"articles": [{"id", "title", "url",
    "category", "published_at", "updated_at"}], "next_after": cursor or None}``.

    Args:
        after: the cursor: ``next_after`` of the page before (0: the first page).
        limit: articles per page, 1 to :data:`MAX_LIMIT`.

    Raises:
        InvalidRequest: a bad cursor or limit.
    """
    after = check_int(after, "after", 0, MAX_CURSOR)
    limit = check_int(limit, "limit", 1, MAX_LIMIT)
    rows = live_articles_after(session=session, after_id=after, limit=limit)
    articles = [
        {
            "id": r.external_id,
            "title": r.title,
            "url": r.url,
            "category": r.category,
            "published_at": utc_text(r.published_at),
            "updated_at": utc_text(r.updated_at),
        }
        for r in rows
    ]
    full = len(rows) == limit
    return {"articles": articles, "next_after": int(rows[-1].id) if rows and full else None}
