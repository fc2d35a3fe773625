"""models fitted with an IDF model version: model_parts

Revision ID: 0006
Revises: 0005
Create Date: 2026-12-01

A reindex fits more than document frequencies: the dense semantic part of related lists is an
LSA model (``features.lsa``) fitted on the new version's stored vectors. It belongs to that
version exactly as the vectors do (a vector of version 3 projected with version 2's model means
nothing), so it is stored beside the IDF model, one row per (version, name), removed with the
version by cascade, and written before the version becomes active.
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

import recengine.storage.types

revision: str = "0006"
down_revision: str | None = "0005"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "model_parts",
        sa.Column("model_version", sa.Integer(), nullable=False),
        sa.Column("name", sa.String(length=64), nullable=False),
        sa.Column("created_at", recengine.storage.types.UTCDateTime(timezone=True), nullable=False),
        sa.Column(
            "params", sa.JSON().with_variant(postgresql.JSONB(), "postgresql"), nullable=False
        ),
        sa.Column("payload", sa.LargeBinary(), nullable=False),
        sa.ForeignKeyConstraint(
            ["model_version"],
            ["idf_models.version"],
            name=op.f("fk_model_parts_model_version_idf_models"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("model_version", "name", name=op.f("pk_model_parts")),
    )


def downgrade() -> None:
    op.drop_table("model_parts")
