"""reader events by time: ix_reader_events_at, for the retention of readers' data

Revision ID: 0009
Revises: 0008
Create Date: 2026-12-06

Servers delete reader events older than ``events.retention_days`` (``recommend.feeds.retention``),
in batches of the oldest: without an index on the time alone each batch would read the whole
table.
"""

from __future__ import annotations

from collections.abc import Sequence

from alembic import op

revision: str = "0009"
down_revision: str | None = "0008"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("reader_events", schema=None) as batch_op:
        batch_op.create_index("ix_reader_events_at", ["at"], unique=False)


def downgrade() -> None:
    with op.batch_alter_table("reader_events", schema=None) as batch_op:
        batch_op.drop_index("ix_reader_events_at")
