"""editorial overrides and reader feedback counters

Revision ID: 0004
Revises: 0003
Create Date: 2026-12-02

``overrides``: editors' decisions (not duplicates, same article, pinned canonical, pinned and
blocked related articles, excluded articles), each with who, when and why; keyed by internal
article ids, so every reindex keeps them. ``feedback_counts``: impressions and clicks of
related lists per day, list article, variant and slot.
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

import recengine.storage.types

revision: str = "0004"
down_revision: str | None = "0003"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

ARTICLE_ID = sa.BigInteger().with_variant(sa.Integer(), "sqlite")


def upgrade() -> None:
    op.create_table(
        "overrides",
        sa.Column("id", ARTICLE_ID, autoincrement=True, nullable=False),
        sa.Column("kind", sa.String(length=32), nullable=False),
        sa.Column("article_id", ARTICLE_ID, nullable=False),
        sa.Column("other_id", ARTICLE_ID, nullable=True),
        sa.Column("position", sa.Integer(), nullable=True),
        sa.Column("reason", sa.Text(), nullable=False),
        sa.Column("created_by", sa.String(length=255), nullable=False),
        sa.Column("created_at", recengine.storage.types.UTCDateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["article_id"],
            ["articles.id"],
            name=op.f("fk_overrides_article_id_articles"),
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["other_id"],
            ["articles.id"],
            name=op.f("fk_overrides_other_id_articles"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_overrides")),
    )
    with op.batch_alter_table("overrides", schema=None) as batch_op:
        batch_op.create_index("ix_overrides_article_kind", ["article_id", "kind"], unique=False)
        batch_op.create_index("ix_overrides_other_kind", ["other_id", "kind"], unique=False)

    op.create_table(
        "feedback_counts",
        sa.Column("day", sa.Date(), nullable=False),
        sa.Column("article_id", ARTICLE_ID, nullable=False),
        sa.Column("variant", sa.String(length=64), nullable=False),
        sa.Column("slot", sa.SmallInteger(), nullable=False),
        sa.Column("impressions", sa.BigInteger(), nullable=False),
        sa.Column("clicks", sa.BigInteger(), nullable=False),
        sa.ForeignKeyConstraint(
            ["article_id"],
            ["articles.id"],
            name=op.f("fk_feedback_counts_article_id_articles"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint(
            "day", "article_id", "variant", "slot", name=op.f("pk_feedback_counts")
        ),
    )
    with op.batch_alter_table("feedback_counts", schema=None) as batch_op:
        batch_op.create_index(
            batch_op.f("ix_feedback_counts_article_id"), ["article_id"], unique=False
        )


def downgrade() -> None:
    with op.batch_alter_table("feedback_counts", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_feedback_counts_article_id"))
    op.drop_table("feedback_counts")
    with op.batch_alter_table("overrides", schema=None) as batch_op:
        batch_op.drop_index("ix_overrides_other_kind")
        batch_op.drop_index("ix_overrides_article_kind")
    op.drop_table("overrides")
