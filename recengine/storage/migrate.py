"""Schema migrations with Alembic: upgrade, and a check that the schema is current.

The check reads the revision Alembic records (its ``alembic_version`` table) with one query and
compares it with :data:`SCHEMA_HEAD`, without importing Alembic: every serving process and
command checks the schema at start (and ``/api/v1/health`` on every call), and importing
Alembic cost each ~0.1 s of start-up. Only an upgrade, and the test that keeps
:data:`SCHEMA_HEAD` equal to the newest migration, import it.
"""

from __future__ import annotations

from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING

from sqlalchemy import Connection, Engine, inspect, text
from sqlalchemy.orm import Session

from recengine.errors import SchemaOutOfDate
from recengine.storage.db import describe_url

if TYPE_CHECKING:
    from alembic.config import Config

SCHEMA_HEAD = "0012"
"""The revision of the newest migration in ``migrations/versions``: the schema this code needs
(``tests/storage/test_storage.py`` checks it is what Alembic finds there)."""
VERSION_TABLE = "alembic_version"


def migrations_path() -> Path:
    """``migrations/`` of a source checkout, or its copy inside the installed package."""
    packaged = Path(__file__).resolve().parents[1] / "migrations"
    if (packaged / "env.py").exists():
        return packaged
    return Path(__file__).resolve().parents[2] / "migrations"


def alembic_config(engine: Engine) -> Config:
    from alembic.config import Config

    config = Config()
    config.set_main_option("script_location", str(migrations_path()))
    config.attributes["engine"] = engine
    return config


def upgrade(engine: Engine, revision: str = "head") -> None:
    """Create or migrate the schema (idempotent)."""
    from alembic import command

    command.upgrade(alembic_config(engine), revision)


@cache
def migrations_head() -> str | None:
    """The newest revision Alembic finds in ``migrations/`` (read once)."""
    from alembic.config import Config
    from alembic.script import ScriptDirectory

    config = Config()
    config.set_main_option("script_location", str(migrations_path()))
    return ScriptDirectory.from_config(config).get_current_head()


def schema_revisions(*, session: Session) -> tuple[str | None, str]:
    """``(current, head)``: the database's revision (in the session's transaction) and the
    code's; equal when the schema is current."""
    return _revision_of(session.connection()), SCHEMA_HEAD


def current_revision(engine: Engine) -> str | None:
    with engine.connect() as connection:
        return _revision_of(connection)


def _revision_of(connection: Connection) -> str | None:
    """The revision recorded in ``alembic_version`` (None without the table or a row: no
    schema). The history is linear, so the table holds at most one row."""
    if not inspect(connection).has_table(VERSION_TABLE):
        return None
    revision = connection.execute(text(f"SELECT version_num FROM {VERSION_TABLE}")).scalar()
    return str(revision) if revision is not None else None


def check_schema(engine: Engine) -> None:
    """Raise :class:`SchemaOutOfDate` unless the database is at the code's head revision."""
    current, head = current_revision(engine), SCHEMA_HEAD
    if current != head:
        state = "has no schema" if current is None else f"is at revision {current}"
        raise SchemaOutOfDate(
            f"the database {describe_url(engine.url)} {state}, this code needs {head}: "
            "run `recengine db upgrade`"
        )
