"""Alembic environment: the engine comes from recengine (settings or the caller), never from ini."""

from __future__ import annotations

from alembic import context
from sqlalchemy import Engine

from recengine.storage.models import Base


def _engine() -> Engine:
    engine = context.config.attributes.get("engine")
    if engine is not None:
        return engine  # type: ignore[no-any-return]
    # Plain `alembic` command line: read the URL from recengine's settings.
    from recengine.config import load_settings
    from recengine.storage.db import make_engine

    return make_engine(load_settings().resolved_database_url)


def run_migrations_online() -> None:
    engine = _engine()
    with engine.connect() as connection:
        context.configure(
            connection=connection,
            target_metadata=Base.metadata,
            render_as_batch=connection.dialect.name == "sqlite",
            compare_type=True,
        )
        with context.begin_transaction():
            context.run_migrations()
        connection.commit()


if context.is_offline_mode():
    raise SystemExit("offline (SQL script) migrations are not supported; run them online")
run_migrations_online()
