"""the sentence encoder's vector of each article: article_features.embedding

Revision ID: 0011
Revises: 0010
Create Date: 2026-12-06

With ``dense.encoder = "use"`` each article's title and lead are encoded by a multilingual
sentence encoder (``features.encoder``) when its features are computed, by a reindex's workers or
an ingest. Unlike the LSA part, whose vectors are projections of the stored TF-IDF vectors, the
encoder's vector cannot be recomputed from what SQL holds without the text and ~10 ms of CPU, so
it is stored beside them, under the same model version (a new encoder is a new version).
Nullable: NULL where the encoder is off.
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0011"
down_revision: str | None = "0010"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("article_features", schema=None) as batch_op:
        batch_op.add_column(sa.Column("embedding", sa.LargeBinary(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("article_features", schema=None) as batch_op:
        batch_op.drop_column("embedding")
