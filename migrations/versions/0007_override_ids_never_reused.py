"""override ids are never reused: overrides.id AUTOINCREMENT on SQLite

Revision ID: 0007
Revises: 0006
Create Date: 2026-12-06

An override's id is what editors and scripts act on (``DELETE /api/v1/overrides/<id>``,
``recengine override remove ID``, the ``--after`` / ``after`` cursor of listings). SQLite's
plain ``INTEGER PRIMARY KEY`` hands out ``max(id) + 1``, so after the newest override is
removed the next one got its id: a retried delete, or a cursor kept by a script, then acted on
another decision. ``AUTOINCREMENT`` makes SQLite remember the largest id ever used
(``sqlite_sequence``). The table is rebuilt with its rows and ids; the remembered id starts at
the largest id stored now (an id already reused before this migration cannot be told apart).
PostgreSQL's key is a sequence (``BIGSERIAL``), which never goes back: nothing to do there.
"""

from __future__ import annotations

from collections.abc import Sequence

from alembic import op

revision: str = "0007"
down_revision: str | None = "0006"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def _rebuild(autoincrement: bool) -> None:
    if op.get_bind().dialect.name != "sqlite":
        return
    with op.batch_alter_table(
        "overrides", recreate="always", table_kwargs={"sqlite_autoincrement": autoincrement}
    ):
        pass


def upgrade() -> None:
    _rebuild(True)


def downgrade() -> None:
    _rebuild(False)
