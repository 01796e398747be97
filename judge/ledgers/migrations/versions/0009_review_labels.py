"""What the review queue knew when a label was made through it (judge.ledgers.review).

One row per operator label made from the queue (``rcjudge review``'s page): the label it
belongs to, the judge version whose queue picked the run, the strategy, the run's rank and
score there, the pick's reason, and the labeller's note. A label imported from a file or
posted one at a time has no row. ``operator_labels`` and its two views are not altered.
On PostgreSQL the API role of 0005 may read and insert rows (the page labels with its keys).

Revision ID: 0009
Revises: 0008
Create Date: 2026-12-04
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0009"
down_revision = "0008"
branch_labels = None
depends_on = None

ROLE = "rcjudge_api"


def upgrade() -> None:
    op.create_table(
        "review_labels",
        sa.Column("label_id", sa.Integer, nullable=False),
        sa.Column("judge_version", sa.Text, nullable=False),
        sa.Column("strategy", sa.Text, nullable=False),
        sa.Column("rank", sa.Integer, nullable=False),
        sa.Column("score", sa.Float, nullable=False),
        sa.Column("reason", sa.Text, nullable=False),
        sa.Column("note", sa.Text, nullable=True),
        sa.PrimaryKeyConstraint("label_id", name="pk_review_labels"),
        sa.ForeignKeyConstraint(["label_id"], ["operator_labels.label_id"],
                                name="fk_review_labels_label_id_operator_labels"),
        sa.CheckConstraint("rank >= 1", name="ck_review_labels_rank_pos"),
    )
    op.create_index("ix_review_labels_judge_version", "review_labels", ["judge_version"])
    if op.get_bind().dialect.name == "postgresql":
        op.execute(f"""
DO $$ BEGIN
  IF EXISTS (SELECT 1 FROM pg_roles WHERE rolname = '{ROLE}') THEN
    GRANT SELECT, INSERT ON review_labels TO {ROLE};
  END IF;
END $$""")


def downgrade() -> None:
    op.drop_index("ix_review_labels_judge_version", "review_labels")
    op.drop_table("review_labels")
