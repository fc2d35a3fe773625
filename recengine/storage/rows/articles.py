"""Article rows: look-ups by the caller's id, bulk insert / update, soft delete, streaming."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, TypeVar

from sqlalchemy import Row, bindparam, func, insert, or_, select, update
from sqlalchemy.orm import Session

from recengine.storage.models import Article

# Bound parameters per IN (...) list: well under SQLite's 32766 and PostgreSQL's 65535.
IN_CHUNK = 5_000

T = TypeVar("T")


def in_chunks(values: Sequence[T]) -> Iterator[list[T]]:
    """``values`` in lists of at most ``IN_CHUNK``: one ``IN (...)`` statement each."""
    for start in range(0, len(values), IN_CHUNK):
        yield list(values[start : start + IN_CHUNK])


@dataclass(frozen=True)
class ExistingArticle:
    id: int
    external_id: str
    record_hash: str
    text_hash: str
    deleted: bool


def find_existing(*, session: Session, external_ids: Sequence[str]) -> dict[str, ExistingArticle]:
    """Rows (deleted ones included) for the given caller ids, keyed by caller id."""
    found: dict[str, ExistingArticle] = {}
    for chunk in in_chunks(external_ids):
        rows = session.execute(
            select(
                Article.id,
                Article.external_id,
                Article.record_hash,
                Article.text_hash,
                Article.deleted_at,
            ).where(Article.external_id.in_(chunk))
        )
        for row in rows:
            found[row.external_id] = ExistingArticle(
                row.id, row.external_id, row.record_hash, row.text_hash, row.deleted_at is not None
            )
    return found


def insert_articles(*, session: Session, rows: Sequence[dict[str, Any]]) -> dict[str, int]:
    """Insert new articles; returns caller id -> internal id."""
    if not rows:
        return {}
    result = session.execute(
        insert(Article).returning(Article.id, Article.external_id, sort_by_parameter_order=True),
        list(rows),
    )
    return {row.external_id: row.id for row in result}


def update_articles(*, session: Session, rows: Sequence[dict[str, Any]]) -> None:
    """Bulk update by primary key: each row holds ``id`` and the columns to set."""
    if rows:
        session.execute(update(Article), list(rows))


def get_article(*, session: Session, external_id: str) -> Article | None:
    """The live (not deleted) article with this caller id."""
    return session.scalars(
        select(Article).where(Article.external_id == external_id, Article.deleted_at.is_(None))
    ).one_or_none()


def soft_delete(*, session: Session, article_id: int, seq: int, now: datetime) -> None:
    session.execute(
        update(Article)
        .where(Article.id == article_id)
        .values(deleted_at=now, updated_at=now, seq=seq)
    )


def texts_after(
    *, session: Session, after_id: int, limit: int
) -> Sequence[Row[int, str, str, int]]:
    """Up to ``limit`` live articles' ``(id, title, content, seq)`` with ``id > after_id``, by
    id (``seq``: their last change).

    Keyset pagination: the millionth row costs what the first does, and each page can be read
    in its own short transaction.
    """
    return session.execute(
        select(Article.id, Article.title, Article.content, Article.seq)
        .where(Article.id > after_id, Article.deleted_at.is_(None))
        .order_by(Article.id)
        .limit(limit)
    ).all()


def changed_since(
    *, session: Session, after: tuple[int, int], limit: int
) -> Sequence[Row[int, str, str, int]]:
    """Live articles changed after position ``after = (seq, id)``, in ``(seq, id)`` order.

    Returns ``(id, title, content, seq)`` rows; the next page starts after the last row's
    ``(seq, id)``, so a page boundary inside one transaction's many rows loses nothing.
    """
    seq, last_id = after
    return session.execute(
        select(Article.id, Article.title, Article.content, Article.seq)
        .where(
            Article.deleted_at.is_(None),
            (Article.seq > seq) | ((Article.seq == seq) & (Article.id > last_id)),
        )
        .order_by(Article.seq, Article.id)
        .limit(limit)
    ).all()


def live_ids_after(*, session: Session, after_id: int, limit: int) -> list[int]:
    """Up to ``limit`` live articles' ids greater than ``after_id``, ascending (keyset pages
    of ids alone: for drawing a sample without reading texts)."""
    return list(
        session.scalars(
            select(Article.id)
            .where(Article.id > after_id, Article.deleted_at.is_(None))
            .order_by(Article.id)
            .limit(limit)
        )
    )


BriefRow = Row[int, str, str, str | None, str | None, datetime | None, datetime]


def live_articles_after(*, session: Session, after_id: int, limit: int) -> Sequence[BriefRow]:
    """Up to ``limit`` live articles with ids greater than ``after_id``, ascending (keyset
    pages for a listing): ``id, external_id, title, url, category, published_at, updated_at``,
    no text."""
    return session.execute(
        select(
            Article.id,
            Article.external_id,
            Article.title,
            Article.url,
            Article.category,
            Article.published_at,
            Article.updated_at,
        )
        .where(Article.id > after_id, Article.deleted_at.is_(None))
        .order_by(Article.id)
        .limit(limit)
    ).all()


def count_live(*, session: Session) -> int:
    return session.scalar(select(func.count()).where(Article.deleted_at.is_(None))) or 0


def titles_and_contents(
    *, session: Session, article_ids: Sequence[int]
) -> dict[int, tuple[str, str]]:
    """``id -> (title, content)`` of the given articles (deleted ones included)."""
    found = stored_texts(session=session, article_ids=article_ids)
    return {i: (title, content) for i, (title, content, _) in found.items()}


def stored_texts(
    *, session: Session, article_ids: Sequence[int]
) -> dict[int, tuple[str, str, int]]:
    """``id -> (title, content, seq)`` of the given articles (deleted ones included): the
    ``seq`` of the change that wrote the text keys what is kept of it (``text.neardup.kept``)."""
    out: dict[int, tuple[str, str, int]] = {}
    ids = list(article_ids)
    for chunk in in_chunks(ids):
        rows = session.execute(
            select(Article.id, Article.title, Article.content, Article.seq).where(
                Article.id.in_(chunk)
            )
        )
        out.update({r.id: (r.title, r.content, r.seq) for r in rows})
    return out


def live_seqs(*, session: Session, article_ids: Sequence[int]) -> dict[int, int]:
    """``id -> seq`` of the given articles that are live (deleted ones are left out)."""
    out: dict[int, int] = {}
    for chunk in in_chunks(article_ids):
        rows = session.execute(
            select(Article.id, Article.seq).where(
                Article.id.in_(chunk),
                Article.deleted_at.is_(None),
            )
        )
        out.update({row.id: row.seq for row in rows})
    return out


def count_changed(*, session: Session, after_seq: int) -> int:
    """Articles (deleted ones included) whose last change is newer than ``after_seq``."""
    return session.scalar(select(func.count()).where(Article.seq > after_seq)) or 0


def ids_changed_since(*, session: Session, after_seq: int) -> list[int]:
    """Ids of articles (deleted ones included) whose last change is newer than ``after_seq``."""
    return list(session.scalars(select(Article.id).where(Article.seq > after_seq)))


def ids_changed_between(*, session: Session, after_seq: int, upto_seq: int) -> list[int]:
    """Ids of articles (deleted ones included) whose last change is in ``(after, upto]``."""
    return list(
        session.scalars(select(Article.id).where(Article.seq > after_seq, Article.seq <= upto_seq))
    )


def latest_articles(*, session: Session, limit: int) -> Sequence[Row[str, str]]:
    """``(external_id, title)`` of the most recently stored live articles, newest first."""
    return session.execute(
        select(Article.external_id, Article.title)
        .where(Article.deleted_at.is_(None))
        .order_by(Article.id.desc())
        .limit(limit)
    ).all()


def titles_of(*, session: Session, external_ids: Sequence[str]) -> dict[str, str]:
    """Titles of the live articles among ``external_ids``, by caller id."""
    found: dict[str, str] = {}
    for chunk in in_chunks(external_ids):
        rows = session.execute(
            select(Article.external_id, Article.title).where(
                Article.external_id.in_(chunk),
                Article.deleted_at.is_(None),
            )
        )
        found.update({r.external_id: r.title for r in rows})
    return found


CardSource = Row[int, str, str | None, str | None, str | None, int]


def stale_cards(
    *, session: Session, rule: str, after_id: int, before_id: int | None, limit: int
) -> Sequence[CardSource]:
    """Up to ``limit`` live articles whose card was not derived by ``rule`` (never derived,
    or by another rule), with ``after_id < id < before_id``, by id: ``(id, content, url,
    image, summary, seq)`` (``pipeline.cards``)."""
    where = [
        Article.id > after_id,
        Article.deleted_at.is_(None),
        or_(Article.card_rule.is_(None), Article.card_rule != rule),
    ]
    if before_id is not None:
        where.append(Article.id < before_id)
    return session.execute(
        select(
            Article.id, Article.content, Article.url, Article.image, Article.summary, Article.seq
        )
        .where(*where)
        .order_by(Article.id)
        .limit(limit)
    ).all()


def write_cards(*, session: Session, rows: Sequence[dict[str, Any]]) -> None:
    """Set the card columns of articles that have not changed since they were read: each row
    holds ``id``, ``seq`` (as read) and ``card_image``, ``card_summary``, ``card_rule``. An
    article written meanwhile keeps the card its writer derived from its new text."""
    if not rows:
        return
    statement = (
        update(Article)
        .where(Article.id == bindparam("b_id"), Article.seq == bindparam("b_seq"))
        .values(
            card_image=bindparam("b_image"),
            card_summary=bindparam("b_summary"),
            card_rule=bindparam("b_rule"),
        )
        .execution_options(synchronize_session=False)
    )
    session.connection().execute(
        statement,
        [
            {
                "b_id": r["id"],
                "b_seq": r["seq"],
                "b_image": r["card_image"],
                "b_summary": r["card_summary"],
                "b_rule": r["card_rule"],
            }
            for r in rows
        ],
    )


def articles_changed(*, session: Session, after_seq: int) -> list[tuple[str, bool]]:
    """``(caller id, live)`` of the articles whose last change is newer than ``after_seq``
    (deleted ones included: ``live`` False), by caller id."""
    rows = session.execute(
        select(Article.external_id, Article.deleted_at)
        .where(Article.seq > after_seq)
        .order_by(Article.external_id)
    )
    return [(r.external_id, r.deleted_at is None) for r in rows]
