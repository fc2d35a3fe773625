"""clusters per IDF model version: cluster_members.model_version

Revision ID: 0003
Revises: 0002
Create Date: 2026-12-02

A reindex computes the near-duplicate clusters of its new model version before the switch,
beside the ones readers use, and the switch only makes the version active (as it already does
for features): replacing every cluster row inside the switch transaction held the writers' lock
for as long as the rows took to write. Existing rows belong to the active version; rows of a
database with no active version are dropped (there are none: clusters need features).
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0003"
down_revision: str | None = "0002"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

ARTICLE_ID = sa.BigInteger().with_variant(sa.Integer(), "sqlite")


def upgrade() -> None:
    with op.batch_alter_table("cluster_members", schema=None) as batch_op:
        batch_op.add_column(sa.Column("model_version", sa.Integer(), nullable=True))
    op.execute(
        "UPDATE cluster_members SET model_version = "
        "(SELECT active_model_version FROM engine_state WHERE id = 1)"
    )
    op.execute("DELETE FROM cluster_members WHERE model_version IS NULL")
    with op.batch_alter_table("cluster_members", schema=None, recreate="always") as batch_op:
        batch_op.drop_index(batch_op.f("ix_cluster_members_canonical_id"))
        batch_op.drop_constraint("pk_cluster_members", type_="primary")
        batch_op.alter_column("model_version", existing_type=sa.Integer(), nullable=False)
        batch_op.create_primary_key("pk_cluster_members", ["model_version", "article_id"])
        batch_op.create_foreign_key(
            batch_op.f("fk_cluster_members_model_version_idf_models"),
            "idf_models",
            ["model_version"],
            ["version"],
            ondelete="CASCADE",
        )
        batch_op.create_index(
            "ix_cluster_members_version_canonical", ["model_version", "canonical_id"]
        )


def downgrade() -> None:
    op.execute(
        "DELETE FROM cluster_members WHERE model_version IS DISTINCT FROM "
        "(SELECT active_model_version FROM engine_state WHERE id = 1)"
    )
    with op.batch_alter_table("cluster_members", schema=None, recreate="always") as batch_op:
        batch_op.drop_index("ix_cluster_members_version_canonical")
        batch_op.drop_constraint(
            batch_op.f("fk_cluster_members_model_version_idf_models"), type_="foreignkey"
        )
        batch_op.drop_constraint("pk_cluster_members", type_="primary")
        batch_op.create_primary_key("pk_cluster_members", ["article_id"])
        batch_op.drop_column("model_version")
        batch_op.create_index(
            batch_op.f("ix_cluster_members_canonical_id"), ["canonical_id"], unique=False
        )
