"""initial schema

Revision ID: 0001
Revises:
Create Date: 2026-11-30
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

import recengine.storage.types

revision: str = "0001"
down_revision: str | None = None
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "articles",
        sa.Column(
            "id",
            sa.BigInteger().with_variant(sa.Integer(), "sqlite"),
            autoincrement=True,
            nullable=False,
        ),
        sa.Column("external_id", sa.String(length=255), nullable=False),
        sa.Column("title", sa.Text(), nullable=False),
        sa.Column("content", sa.Text(), nullable=False),
        sa.Column("url", sa.Text(), nullable=True),
        sa.Column(
            "tags",
            sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), "postgresql"),
            nullable=False,
        ),
        sa.Column("category", sa.String(length=255), nullable=True),
        sa.Column("author", sa.String(length=255), nullable=True),
        sa.Column(
            "published_at", recengine.storage.types.UTCDateTime(timezone=True), nullable=True
        ),
        sa.Column("record_hash", sa.String(length=64), nullable=False),
        sa.Column("text_hash", sa.String(length=64), nullable=False),
        sa.Column("created_at", recengine.storage.types.UTCDateTime(timezone=True), nullable=False),
        sa.Column("updated_at", recengine.storage.types.UTCDateTime(timezone=True), nullable=False),
        sa.Column("deleted_at", recengine.storage.types.UTCDateTime(timezone=True), nullable=True),
        sa.Column("seq", sa.BigInteger(), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_articles")),
        sa.UniqueConstraint("external_id", name=op.f("uq_articles_external_id")),
    )
    with op.batch_alter_table("articles", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_articles_seq"), ["seq"], unique=False)

    op.create_table(
        "idf_models",
        sa.Column("version", sa.Integer(), autoincrement=True, nullable=False),
        sa.Column("created_at", recengine.storage.types.UTCDateTime(timezone=True), nullable=False),
        sa.Column("n_docs", sa.BigInteger(), nullable=False),
        sa.Column("n_terms", sa.BigInteger(), nullable=False),
        sa.Column(
            "params",
            sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), "postgresql"),
            nullable=False,
        ),
        sa.Column("payload", sa.LargeBinary(), nullable=False),
        sa.PrimaryKeyConstraint("version", name=op.f("pk_idf_models")),
    )
    op.create_table(
        "article_features",
        sa.Column(
            "article_id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=False
        ),
        sa.Column("model_version", sa.Integer(), nullable=False),
        sa.Column("fingerprint", recengine.storage.types.UInt64(), nullable=False),
        sa.Column("vector", sa.LargeBinary(), nullable=False),
        sa.Column("n_tokens", sa.Integer(), nullable=False),
        sa.ForeignKeyConstraint(
            ["article_id"],
            ["articles.id"],
            name=op.f("fk_article_features_article_id_articles"),
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["model_version"],
            ["idf_models.version"],
            name=op.f("fk_article_features_model_version_idf_models"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("article_id", "model_version", name=op.f("pk_article_features")),
    )
    with op.batch_alter_table("article_features", schema=None) as batch_op:
        batch_op.create_index(
            batch_op.f("ix_article_features_model_version"), ["model_version"], unique=False
        )

    op.create_table(
        "cluster_members",
        sa.Column(
            "article_id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=False
        ),
        sa.Column(
            "canonical_id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=False
        ),
        sa.Column("distance", sa.Integer(), nullable=False),
        sa.Column("score", sa.Float(), nullable=True),
        sa.ForeignKeyConstraint(
            ["article_id"],
            ["articles.id"],
            name=op.f("fk_cluster_members_article_id_articles"),
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["canonical_id"],
            ["articles.id"],
            name=op.f("fk_cluster_members_canonical_id_articles"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("article_id", name=op.f("pk_cluster_members")),
    )
    with op.batch_alter_table("cluster_members", schema=None) as batch_op:
        batch_op.create_index(
            batch_op.f("ix_cluster_members_canonical_id"), ["canonical_id"], unique=False
        )

    op.create_table(
        "engine_state",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("seq", sa.BigInteger(), nullable=False),
        sa.Column("active_model_version", sa.Integer(), nullable=True),
        sa.CheckConstraint("id = 1", name=op.f("ck_engine_state_single_row")),
        sa.ForeignKeyConstraint(
            ["active_model_version"],
            ["idf_models.version"],
            name=op.f("fk_engine_state_active_model_version_idf_models"),
            ondelete="SET NULL",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_engine_state")),
    )
    op.create_table(
        "reader_events",
        sa.Column(
            "id",
            sa.BigInteger().with_variant(sa.Integer(), "sqlite"),
            autoincrement=True,
            nullable=False,
        ),
        sa.Column("user_id", sa.String(length=255), nullable=False),
        sa.Column(
            "article_id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=False
        ),
        sa.Column("kind", sa.String(length=32), nullable=False),
        sa.Column("at", recengine.storage.types.UTCDateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["article_id"],
            ["articles.id"],
            name=op.f("fk_reader_events_article_id_articles"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_reader_events")),
    )
    with op.batch_alter_table("reader_events", schema=None) as batch_op:
        batch_op.create_index(
            batch_op.f("ix_reader_events_article_id"), ["article_id"], unique=False
        )
        batch_op.create_index("ix_reader_events_user_at", ["user_id", "at"], unique=False)

    # The single state row: the change sequence starts at 0 and no IDF model is active yet.
    op.execute("INSERT INTO engine_state (id, seq) VALUES (1, 0)")


def downgrade() -> None:
    with op.batch_alter_table("reader_events", schema=None) as batch_op:
        batch_op.drop_index("ix_reader_events_user_at")
        batch_op.drop_index(batch_op.f("ix_reader_events_article_id"))

    op.drop_table("reader_events")
    op.drop_table("engine_state")
    with op.batch_alter_table("cluster_members", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_cluster_members_canonical_id"))

    op.drop_table("cluster_members")
    with op.batch_alter_table("article_features", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_article_features_model_version"))

    op.drop_table("article_features")
    op.drop_table("idf_models")
    with op.batch_alter_table("articles", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_articles_seq"))

    op.drop_table("articles")
