"""what a related-articles card shows: articles.image, summary and the card columns

Revision ID: 0010
Revises: 0009
Create Date: 2026-12-10

An article record may give an ``image`` (URL) and a ``summary``; lists show, for each item,
the card derived from them (``pipeline.cards``): the given image when a page may load it,
else the first such image of the content; the given summary, else one cut from the text. The
card is stored (``card_image``, ``card_summary``, ``card_rule``: the rule and summary length it
was derived by) so a list never parses HTML per request. Rows stored before keep NULL cards
until the next ingest of the article or the next reindex derives them (``card_rule`` tells a
reindex which rows to derive again).
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0010"
down_revision: str | None = "0009"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

COLUMNS = ("image", "summary", "card_image", "card_summary")


def upgrade() -> None:
    with op.batch_alter_table("articles", schema=None) as batch_op:
        for name in COLUMNS:
            batch_op.add_column(sa.Column(name, sa.Text(), nullable=True))
        batch_op.add_column(sa.Column("card_rule", sa.String(length=32), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("articles", schema=None) as batch_op:
        for name in ("card_rule", *reversed(COLUMNS)):
            batch_op.drop_column(name)
