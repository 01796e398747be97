"""batch_failures: bundles a batch could not judge, with the error (what happened, kept).

A failure is recorded per attempt (bundle URI, judge version, error class, message,
time); a later successful judgment does not delete it — the history of what failed
and why stays queryable.

Revision ID: 0003
Revises: 0002
Create Date: 2026-11-30
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None

TIMESTAMP = sa.DateTime(timezone=True)  # UTC; judge.ledgers.schema.UTCDateTime binds it


def upgrade() -> None:
    op.create_table(
        "batch_failures",
        sa.Column("failure_id", sa.Integer, autoincrement=True, nullable=False),
        sa.Column("bundle_uri", sa.Text, nullable=False),
        sa.Column("judge_version", sa.Text, nullable=False),
        sa.Column("error", sa.Text, nullable=False),
        sa.Column("message", sa.Text, nullable=False),
        sa.Column("failed_at", TIMESTAMP, nullable=False),
        sa.PrimaryKeyConstraint("failure_id", name="pk_batch_failures"),
    )
    op.create_index("ix_batch_failures_judge_version", "batch_failures", ["judge_version"])


def downgrade() -> None:
    op.drop_index("ix_batch_failures_judge_version", table_name="batch_failures")
    op.drop_table("batch_failures")
