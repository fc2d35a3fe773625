"""engagement counts: impressions, clicks and examinations of an item in a list article's list

Revision ID: 0012
Revises: 0011
Create Date: 2026-12-06

Related lists rank with their readers' clicks (``recommend.signals.engagement``): the widget
names the item of each impression and click, and ``pipeline.feedback`` adds them up per day,
list article and item, with each impression weighed by the chance its slot was looked at.
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0012"
down_revision: str | None = "0011"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

ARTICLE_ID = sa.BigInteger().with_variant(sa.Integer(), "sqlite")


def upgrade() -> None:
    op.create_table(
        "engagement_counts",
        sa.Column("day", sa.Date(), nullable=False),
        sa.Column("source_id", ARTICLE_ID, nullable=False),
        sa.Column("item_id", ARTICLE_ID, nullable=False),
        sa.Column("impressions", sa.BigInteger(), nullable=False),
        sa.Column("clicks", sa.BigInteger(), nullable=False),
        sa.Column("examined", sa.Float(), nullable=False),
        sa.ForeignKeyConstraint(
            ["source_id"],
            ["articles.id"],
            name=op.f("fk_engagement_counts_source_id_articles"),
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["item_id"],
            ["articles.id"],
            name=op.f("fk_engagement_counts_item_id_articles"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("day", "source_id", "item_id", name=op.f("pk_engagement_counts")),
    )
    with op.batch_alter_table("engagement_counts", schema=None) as batch_op:
        batch_op.create_index(
            batch_op.f("ix_engagement_counts_source_id"), ["source_id"], unique=False
        )
        batch_op.create_index(batch_op.f("ix_engagement_counts_item_id"), ["item_id"], unique=False)


def downgrade() -> None:
    with op.batch_alter_table("engagement_counts", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_engagement_counts_item_id"))
        batch_op.drop_index(batch_op.f("ix_engagement_counts_source_id"))
    op.drop_table("engagement_counts")
