"""The three ledgers: runs, judgments, operator_labels.

Revision ID: 0001
Revises:
Create Date: 2026-11-20
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects.postgresql import JSONB

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None

JSON = sa.JSON().with_variant(JSONB(), "postgresql")
TIMESTAMP = sa.DateTime(timezone=True)  # UTC; judge.ledgers.schema.UTCDateTime binds it


def upgrade() -> None:
    op.create_table(
        "runs",
        sa.Column("run_id", sa.Text, nullable=False),
        sa.Column("bundle_uri", sa.Text, nullable=False),
        sa.Column("bundle_hash", sa.String(64), nullable=False),
        sa.Column("policy_vendor", sa.Text, nullable=False),
        sa.Column("policy_name", sa.Text, nullable=False),
        sa.Column("policy_version", sa.Text, nullable=False),
        sa.Column("policy_checkpoint", sa.Text, nullable=False),
        sa.Column("body_arm", sa.Text, nullable=False),
        sa.Column("body_hand", sa.Text, nullable=False),
        sa.Column("body_calibrated_at", sa.Text, nullable=False),
        sa.Column("task_id", sa.Text, nullable=False),
        sa.Column("task_tier", sa.Text, nullable=False),
        sa.Column("env", JSON, nullable=False),
        sa.Column("seed", sa.Text, nullable=False),
        sa.Column("attribution_extra", JSON, nullable=True),
        sa.Column("duration_s", sa.Float, nullable=False),
        sa.Column("cycle_sec", sa.Float, nullable=False),
        sa.Column("recorded_at", TIMESTAMP, nullable=False),
        sa.PrimaryKeyConstraint("run_id", name="pk_runs"),
        sa.UniqueConstraint("bundle_hash", name="uq_runs_bundle_hash"),
        sa.CheckConstraint("duration_s >= 0", name="ck_runs_duration_s_nonneg"),
        sa.CheckConstraint("cycle_sec > 0", name="ck_runs_cycle_sec_pos"),
    )
    op.create_index("ix_runs_task_id", "runs", ["task_id"])
    op.create_table(
        "judgments",
        sa.Column("judgment_id", sa.Integer, autoincrement=True, nullable=False),
        sa.Column("run_id", sa.Text, nullable=False),
        sa.Column("judge_version", sa.Text, nullable=False),
        sa.Column("attempt", sa.Boolean, nullable=False),
        sa.Column("success", sa.Boolean, nullable=False),
        sa.Column("failure_class", sa.Text, nullable=True),
        sa.Column("counts_against_policy", sa.Boolean, nullable=False),
        sa.Column("attempt_confidence", sa.Float, nullable=False),
        sa.Column("success_confidence", sa.Float, nullable=False),
        sa.Column("answers", JSON, nullable=False),
        sa.Column("timings", JSON, nullable=False),
        sa.Column("cost_usd", sa.Float, nullable=False),
        sa.Column("gpu_s", sa.Float, nullable=False),
        sa.Column("cpu_s", sa.Float, nullable=False),
        sa.Column("frames", sa.Integer, nullable=False),
        sa.Column("judged_at", TIMESTAMP, nullable=False),
        sa.PrimaryKeyConstraint("judgment_id", name="pk_judgments"),
        sa.ForeignKeyConstraint(["run_id"], ["runs.run_id"], name="fk_judgments_run_id_runs"),
        sa.UniqueConstraint("run_id", "judge_version", name="uq_judgments_run_id_judge_version"),
        sa.CheckConstraint("attempt_confidence >= 0 AND attempt_confidence <= 1",
                           name="ck_judgments_attempt_confidence_range"),
        sa.CheckConstraint("success_confidence >= 0 AND success_confidence <= 1",
                           name="ck_judgments_success_confidence_range"),
    )
    op.create_index("ix_judgments_judge_version", "judgments", ["judge_version"])
    op.create_table(
        "operator_labels",
        sa.Column("label_id", sa.Integer, autoincrement=True, nullable=False),
        sa.Column("run_id", sa.Text, nullable=False),
        sa.Column("attempt", sa.Boolean, nullable=False),
        sa.Column("success", sa.Boolean, nullable=False),
        sa.Column("failure_class", sa.Text, nullable=True),
        sa.Column("labeled_by", sa.Text, nullable=False),
        sa.Column("labeled_at", TIMESTAMP, nullable=False),
        sa.PrimaryKeyConstraint("label_id", name="pk_operator_labels"),
        sa.ForeignKeyConstraint(["run_id"], ["runs.run_id"],
                                name="fk_operator_labels_run_id_runs"),
        sa.UniqueConstraint("run_id", "labeled_by", "labeled_at",
                            name="uq_operator_labels_run_id_labeled_by_labeled_at"),
    )


def downgrade() -> None:
    op.drop_table("operator_labels")
    op.drop_index("ix_judgments_judge_version", table_name="judgments")
    op.drop_table("judgments")
    op.drop_index("ix_runs_task_id", table_name="runs")
    op.drop_table("runs")
