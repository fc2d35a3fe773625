"""Overrides keep their meaning: ids are never reused, contradictions are refused, a pin that
could never show is refused, and storing what is stored already changes nothing (not even the
change sequence every cache is keyed by); on SQLite and PostgreSQL, on real JavaGuide text."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import delete, select
from sqlalchemy.orm import Session, sessionmaker

from recengine.config import Settings
from recengine.errors import NotFound
from recengine.pipeline.featurize import Featurizer
from recengine.recommend.related import RelatedArticles
from recengine.storage.db import make_engine, make_session_factory
from recengine.storage.migrate import upgrade
from recengine.storage.models import Article, Override
from tests.factories import javaguide_records
from tests.overrides_helpers import add, listing, remove
from tests.test_related import loaded_service, repost


@pytest.fixture
def corpus(data_dir: Path) -> list[dict[str, Any]]:
    records = javaguide_records(data_dir, 30)
    for i, r in enumerate(records):
        r["published_at"] = f"2024-01-{1 + i % 28:02d}T08:00:00+00:00"
    return [*records, repost(records[0], 1)]


@pytest.fixture
def service(
    settings: Settings,
    factory: sessionmaker[Session],
    featurizer: Featurizer,
    corpus: list[dict[str, Any]],
) -> RelatedArticles:
    return loaded_service(settings, factory, featurizer, corpus)


def test_override_ids_are_never_reused(
    service: RelatedArticles, factory: sessionmaker[Session], corpus: list[dict[str, Any]]
) -> None:
    """Removing the newest override and adding another gives a new id: a retried delete or a
    listing cursor never lands on another decision."""
    first = add(factory, "exclude", corpus[1]["id"])["override"]["id"]
    newest = add(factory, "exclude", corpus[2]["id"])["override"]["id"]
    remove(factory, newest)
    again = add(factory, "exclude", corpus[3]["id"])["override"]["id"]
    assert again > newest > first
    with pytest.raises(NotFound):
        remove(factory, newest)  # the retried delete: gone, and nothing else is removed
    assert [o["id"] for o in listing(factory, after_id=newest)] == [again]


def test_the_migration_keeps_every_override_and_its_id(database_url: str) -> None:
    """0007 rebuilds SQLite's table: rows keep their ids, and new ids continue above them."""
    engine = make_engine(database_url)
    upgrade(engine, "0006")
    now = datetime.now(UTC)
    with make_session_factory(engine)() as session, session.begin():
        article = Article(
            external_id="a", record_hash="", text_hash="", created_at=now, updated_at=now, seq=1
        )
        session.add(article)
        session.flush()
        for i in (1, 2, 3):
            session.add(
                Override(
                    kind="exclude",
                    article_id=article.id,
                    created_by="ed",
                    created_at=now,
                    reason=f"r{i}",
                )
            )
    upgrade(engine)
    with make_session_factory(engine)() as session, session.begin():
        kept = session.execute(select(Override.id, Override.reason).order_by(Override.id)).all()
        assert [tuple(r) for r in kept] == [(1, "r1"), (2, "r2"), (3, "r3")]
        session.execute(delete(Override).where(Override.id == 3))
        new = Override(kind="exclude", article_id=article.id, created_by="ed", created_at=now)
        session.add(new)
        session.flush()
        assert new.id == 4
    engine.dispose()
