"""Schema and column types on real SQLite and PostgreSQL databases."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

import pytest
from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sqlalchemy import Engine, select, text
from sqlalchemy.orm import Session, sessionmaker

from recengine.errors import SchemaOutOfDate
from recengine.storage.db import make_engine
from recengine.storage.migrate import (
    SCHEMA_HEAD,
    check_schema,
    migrations_head,
    upgrade,
)
from recengine.storage.models import Article, ArticleFeatures, Base, IdfModelRow
from recengine.storage.state import begin_write, new_identity, read_state
from recengine.storage.types import i64_to_u64, u64_to_i64
from tests.templates import migrate_cloned, schema_template


def test_migrations_yield_exactly_the_models(database_url: str) -> None:
    """Migrated for real here (the ``engine`` fixture copies a migrated template)."""
    engine = make_engine(database_url)
    upgrade(engine)
    with engine.connect() as conn:
        diff = compare_metadata(
            MigrationContext.configure(conn, opts={"compare_type": True}), Base.metadata
        )
    assert diff == []
    check_schema(engine)
    engine.dispose()


def _database_id(engine: Engine) -> str:
    with Session(engine) as session:
        return read_state(session=session).database_id


def test_a_new_identity_replaces_the_one_the_migration_gave(database_url: str) -> None:
    engine = make_engine(database_url)
    upgrade(engine)
    first = _database_id(engine)
    with engine.begin() as connection:
        given = new_identity(connection)
    assert len(first) == len(given) == 32 and given != first
    assert _database_id(engine) == given
    engine.dispose()


def test_each_copy_of_the_migrated_template_has_an_identity_of_its_own(engine: Engine) -> None:
    """``engine``'s database is a copy of the process's migrated template (``tests/
    templates.py``): every copy is a database of its own, as a migrated one is, so that index
    files built for one are never taken for another's."""
    first = _database_id(engine)
    migrate_cloned(engine)  # another copy, in its place
    second = _database_id(engine)
    template = make_engine(schema_template(engine))
    assert len(first) == len(second) == 32
    assert len({first, second, _database_id(template)}) == 3
    template.dispose()
    check_schema(engine)


def test_upgrade_is_idempotent_and_schema_check_fails_on_empty(database_url: str) -> None:
    eng = make_engine(database_url)
    with pytest.raises(SchemaOutOfDate, match="recengine db upgrade"):
        check_schema(eng)
    upgrade(eng)
    upgrade(eng)
    check_schema(eng)
    with eng.connect() as conn:
        assert conn.execute(text("SELECT version_num FROM alembic_version")).scalar() == (
            SCHEMA_HEAD
        )
    eng.dispose()


def test_the_schema_the_code_needs_is_the_newest_migration() -> None:
    """``SCHEMA_HEAD`` follows ``migrations/versions``: a new migration updates it."""
    assert migrations_head() == SCHEMA_HEAD


EDGES = [0, 1, (1 << 63) - 1, 1 << 63, (1 << 63) + 1, (1 << 64) - 1, 0xDEADBEEFCAFEBABE]


def _article(session: Session, n: int) -> int:
    now = datetime.now(UTC)
    row = Article(
        external_id=f"a{n}",
        title="t",
        content="c",
        tags=[],
        record_hash="h",
        text_hash="h",
        created_at=now,
        updated_at=now,
        seq=1,
    )
    session.add(row)
    session.flush()
    return row.id


def test_u64_fingerprints_round_trip_exactly(factory: sessionmaker[Session]) -> None:
    now = datetime.now(UTC)
    with factory.begin() as session:
        model = IdfModelRow(created_at=now, n_docs=0, n_terms=0, params={}, payload=b"")
        session.add(model)
        session.flush()
        for n, value in enumerate(EDGES):
            session.add(
                ArticleFeatures(
                    article_id=_article(session, n),
                    model_version=model.version,
                    fingerprint=value,
                    vector=b"",
                    n_tokens=0,
                )
            )
    with factory() as session:
        stored = session.scalars(
            select(ArticleFeatures.fingerprint).order_by(ArticleFeatures.article_id)
        ).all()
        assert stored == EDGES
        # The stored form is the signed two's complement, so equality queries use it.
        found = session.scalar(
            select(ArticleFeatures.fingerprint).where(ArticleFeatures.fingerprint == (1 << 64) - 1)
        )
        assert found == (1 << 64) - 1


@settings(
    suppress_health_check=[HealthCheck.function_scoped_fixture], max_examples=50, deadline=None
)
@given(st.integers(min_value=0, max_value=(1 << 64) - 1))
def test_u64_conversion_is_a_bijection(value: int) -> None:
    signed = u64_to_i64(value)
    assert -(1 << 63) <= signed < 1 << 63
    assert i64_to_u64(signed) == value


def test_u64_conversion_refuses_out_of_range() -> None:
    for bad in (-1, 1 << 64):
        with pytest.raises(ValueError):
            u64_to_i64(bad)


def test_datetimes_come_back_aware_in_utc(factory: sessionmaker[Session]) -> None:
    shanghai = datetime(2024, 5, 1, 8, 0, tzinfo=timezone(timedelta(hours=8)))
    with factory.begin() as session:
        aid = _article(session, 1)
        session.get_one(Article, aid).published_at = shanghai
    with factory() as session:
        got = session.get_one(Article, aid).published_at
    assert got == shanghai and got is not None and got.utcoffset() == timedelta(0)


def test_naive_datetimes_are_refused(factory: sessionmaker[Session]) -> None:
    from sqlalchemy.exc import StatementError

    with pytest.raises(StatementError, match="naive"), factory.begin() as session:
        aid = _article(session, 1)
        session.get_one(Article, aid).published_at = datetime(2024, 1, 1)
        session.flush()


def test_sequence_numbers_increase_per_write_transaction(factory: sessionmaker[Session]) -> None:
    with factory.begin() as session:
        assert read_state(session=session).seq == 0
    seqs = []
    for _ in range(3):
        with factory.begin() as session:
            seqs.append(begin_write(session=session).seq)
    assert seqs == [1, 2, 3]
    with factory() as session:
        session.begin()
        begin_write(session=session)
        session.rollback()
    with factory.begin() as session:
        assert read_state(session=session).seq == 3  # a rolled-back write takes no number
