"""a reader event is stored once: unique (user_id, at, article_id, kind) on reader_events

Revision ID: 0008
Revises: 0007
Create Date: 2026-12-06

A client that retries a request (a timeout, a lost answer) sent the same reads again and they
were stored twice, weighing twice in the reader's feed. Events are now idempotent on reader,
time, article and kind: the rows repeated so far are removed (the first of each is kept), and
the unique index replaces ``ix_reader_events_user_at``, which it serves as well (its first
columns are the same: a reader's events by time). Inserts skip rows that exist
(``storage.rows.events.add_events``, ``ON CONFLICT DO NOTHING`` on both databases).
"""

from __future__ import annotations

from collections.abc import Sequence

from alembic import op

revision: str = "0008"
down_revision: str | None = "0007"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

COLUMNS = ["user_id", "at", "article_id", "kind"]


def upgrade() -> None:
    op.execute(
        "DELETE FROM reader_events WHERE id NOT IN "
        "(SELECT MIN(id) FROM reader_events GROUP BY user_id, at, article_id, kind)"
    )
    with op.batch_alter_table("reader_events", schema=None) as batch_op:
        batch_op.drop_index("ix_reader_events_user_at")
        batch_op.create_index("uq_reader_events_once", COLUMNS, unique=True)


def downgrade() -> None:
    with op.batch_alter_table("reader_events", schema=None) as batch_op:
        batch_op.drop_index("uq_reader_events_once")
        batch_op.create_index("ix_reader_events_user_at", ["user_id", "at"], unique=False)
