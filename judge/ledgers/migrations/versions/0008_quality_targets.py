"""Quality targets of a dataset and which of them stand crossed (judge.outcomes.targets).

One row per dataset and target (``min_acceptance_rate``, ``max_reject_rate``,
``max_issue_rate``): its limit, the campaign file that set it and, while the target
stands crossed, when the crossing was alerted and at what value. A crossing is alerted
once; the row's ``crossed_at`` clears when the target recovers. Nothing earlier is
altered. On PostgreSQL the API role of 0005 may read and write it.

Revision ID: 0008
Revises: 0007
Create Date: 2026-12-01
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0008"
down_revision = "0007"
branch_labels = None
depends_on = None

ROLE = "rcjudge_api"
TIMESTAMP = sa.DateTime(timezone=True)  # UTC; judge.ledgers.schema.TIMESTAMP binds it


def upgrade() -> None:
    op.create_table(
        "quality_targets",
        sa.Column("dataset_id", sa.Integer, nullable=False),
        sa.Column("target", sa.Text, nullable=False),
        sa.Column("limit_value", sa.Float, nullable=False),
        sa.Column("campaign", sa.Text, nullable=True),
        sa.Column("set_at", TIMESTAMP, nullable=False),
        sa.Column("crossed_at", TIMESTAMP, nullable=True),
        sa.Column("crossed_value", sa.Float, nullable=True),
        sa.PrimaryKeyConstraint("dataset_id", "target", name="pk_quality_targets"),
        sa.ForeignKeyConstraint(["dataset_id"], ["datasets.dataset_id"],
                                name="fk_quality_targets_dataset_id_datasets"),
    )
    if op.get_bind().dialect.name == "postgresql":
        op.execute(f"""
DO $$ BEGIN
  IF EXISTS (SELECT 1 FROM pg_roles WHERE rolname = '{ROLE}') THEN
    GRANT SELECT, INSERT, UPDATE, DELETE ON quality_targets TO {ROLE};
  END IF;
END $$""")


def downgrade() -> None:
    op.drop_table("quality_targets")
