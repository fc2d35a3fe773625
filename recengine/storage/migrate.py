"""Schema migrations with Alembic: upgrade, and a check that the schema is current."""

from __future__ import annotations

from functools import cache
from pathlib import Path

from alembic import command
from alembic.config import Config
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlalchemy import Engine
from sqlalchemy.orm import Session

from recengine.errors import SchemaOutOfDate
from recengine.storage.db import describe_url


def migrations_path() -> Path:
    """``migrations/`` of a source checkout, or its copy inside the installed package."""
    packaged = Path(__file__).resolve().parents[1] / "migrations"
    if (packaged / "env.py").exists():
        return packaged
    return Path(__file__).resolve().parents[2] / "migrations"


def alembic_config(engine: Engine) -> Config:
    config = Config()
    config.set_main_option("script_location", str(migrations_path()))
    config.attributes["engine"] = engine
    return config


def upgrade(engine: Engine, revision: str = "head") -> None:
    """Create or migrate the schema (idempotent)."""
    command.upgrade(alembic_config(engine), revision)


def head_revision(engine: Engine) -> str | None:
    return _head_at(str(migrations_path()))


@cache
def _head_at(path: str) -> str | None:
    """The newest revision of the migrations at ``path`` (read once: the code does not change)."""
    config = Config()
    config.set_main_option("script_location", path)
    return ScriptDirectory.from_config(config).get_current_head()


def schema_revisions(*, session: Session) -> tuple[str | None, str | None]:
    """``(current, head)``: the database's revision (in the session's transaction) and the
    code's; equal when the schema is current."""
    current = MigrationContext.configure(session.connection()).get_current_revision()
    return current, _head_at(str(migrations_path()))


def current_revision(engine: Engine) -> str | None:
    with engine.connect() as connection:
        return MigrationContext.configure(connection).get_current_revision()


def check_schema(engine: Engine) -> None:
    """Raise :class:`SchemaOutOfDate` unless the database is at the code's head revision."""
    current, head = current_revision(engine), head_revision(engine)
    if current != head:
        state = "has no schema" if current is None else f"is at revision {current}"
        raise SchemaOutOfDate(
            f"the database {describe_url(engine.url)} {state}, this code needs {head}: "
            "run `recengine db upgrade`"
        )
