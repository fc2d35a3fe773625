"""the rule that joined a cluster member: cluster_members.rule

Revision ID: 0005
Revises: 0004
Create Date: 2026-12-01

Near-duplicates are decided by one of two rules (features.neardup: resemblance of the texts, or
containment of the smaller in the larger with a floor on coverage); an editor reviewing a
cluster needs to know which one joined each member (``score`` is its figure). Rows written
before keep NULL (shown as unknown) until the next reindex or write rewrites them.
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0005"
down_revision: str | None = "0004"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("cluster_members", schema=None) as batch_op:
        batch_op.add_column(sa.Column("rule", sa.String(length=16), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("cluster_members", schema=None) as batch_op:
        batch_op.drop_column("rule")
