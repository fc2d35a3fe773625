"""database identity: engine_state.database_id

Revision ID: 0002
Revises: 0001
Create Date: 2026-12-02

Index files (``index.container``) and the reindex job record name the database they belong to.
The identity was derived from the URL's spelling, which changes with a host alias or a driver
name and is the same for two databases behind one URL over time; a random id stored in the
database itself follows the data (a copy of the file, a dump restored elsewhere) instead.
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

from recengine.storage.state import new_identity

revision: str = "0002"
down_revision: str | None = "0001"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("engine_state", schema=None) as batch_op:
        batch_op.add_column(sa.Column("database_id", sa.String(length=32), nullable=True))
    new_identity(op.get_bind())
    with op.batch_alter_table("engine_state", schema=None) as batch_op:
        batch_op.alter_column("database_id", existing_type=sa.String(length=32), nullable=False)


def downgrade() -> None:
    with op.batch_alter_table("engine_state", schema=None) as batch_op:
        batch_op.drop_column("database_id")
