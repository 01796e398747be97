"""Sampling rounds of the review queue, and the labels each trained version saw.

* ``sampling_rounds``: one row per round (``rcjudge review next --strategy sample``, or a
  label file a lab asserts was a random sample, ``labels import --random-sample``): the
  version whose P drew it (NULL for an asserted round), the strategy, the expected number
  of draws, the floor, the seed, how many runs were candidates and drawn, what the frame
  left out (``options``), and ``round_key``, unique, so that recording the same round twice
  writes it once.
* ``sampling_frames``: every candidate of a round, drawn or not, with its inclusion
  probability π (0 < π ≤ 1) and the P it came from: what a rectified rate covers.
* ``review_labels`` gains ``round_id`` and ``pi``: the round and π of a label made from a
  sampling pick (NULL for the other strategies).
* ``trained_versions`` / ``training_labels``: a version ``rcjudge train`` (``average``,
  ``calibrate``) made, its parent and where its labels came from, and each run it used with
  the label id (NULL: from a label file) and the part (train, validation, calibration).
  ``training_labels.label_id`` has no foreign key: undoing a label on the review page
  deletes it, and the record of what a version saw must outlive it.

On PostgreSQL the API role of 0005 may read the four new tables (no tier-B content in any).

Revision ID: 0011
Revises: 0010
Create Date: 2026-12-06
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects.postgresql import JSONB

revision = "0011"
down_revision = "0010"
branch_labels = None
depends_on = None

ROLE = "rcjudge_api"
JSON = sa.JSON().with_variant(JSONB(), "postgresql")
TZ = sa.DateTime(timezone=True)


def upgrade() -> None:
    op.create_table(
        "sampling_rounds",
        sa.Column("round_id", sa.Integer, autoincrement=True, nullable=False),
        sa.Column("round_key", sa.String(64), nullable=False),
        sa.Column("judge_version", sa.Text, nullable=True),
        sa.Column("strategy", sa.Text, nullable=False),
        sa.Column("budget", sa.Float, nullable=False),
        sa.Column("floor", sa.Float, nullable=True),
        sa.Column("seed", sa.Integer, nullable=True),
        sa.Column("candidates", sa.Integer, nullable=False),
        sa.Column("drawn", sa.Integer, nullable=False),
        sa.Column("options", JSON, nullable=False),
        sa.Column("created_at", TZ, nullable=False),
        sa.PrimaryKeyConstraint("round_id", name="pk_sampling_rounds"),
        sa.UniqueConstraint("round_key", name="uq_sampling_rounds_round_key"),
        sa.CheckConstraint("strategy IN ('sample', 'sample-uniform', 'asserted')",
                           name="ck_sampling_rounds_strategy_kind"),
    )
    op.create_index("ix_sampling_rounds_judge_version", "sampling_rounds", ["judge_version"])
    op.create_table(
        "sampling_frames",
        sa.Column("round_id", sa.Integer, nullable=False),
        sa.Column("run_id", sa.Text, nullable=False),
        sa.Column("pi", sa.Float, nullable=False),
        sa.Column("p", sa.Float, nullable=True),
        sa.Column("drawn", sa.Boolean, nullable=False),
        sa.PrimaryKeyConstraint("round_id", "run_id", name="pk_sampling_frames"),
        sa.ForeignKeyConstraint(["round_id"], ["sampling_rounds.round_id"],
                                name="fk_sampling_frames_round_id_sampling_rounds"),
        sa.ForeignKeyConstraint(["run_id"], ["runs.run_id"],
                                name="fk_sampling_frames_run_id_runs"),
        sa.CheckConstraint("pi > 0 AND pi <= 1", name="ck_sampling_frames_pi_range"),
    )
    op.create_index("ix_sampling_frames_run_id", "sampling_frames", ["run_id"])
    with op.batch_alter_table("review_labels") as t:
        t.add_column(sa.Column("round_id", sa.Integer, nullable=True))
        t.add_column(sa.Column("pi", sa.Float, nullable=True))
        t.create_foreign_key("fk_review_labels_round_id_sampling_rounds", "sampling_rounds",
                             ["round_id"], ["round_id"])
        t.create_check_constraint("ck_review_labels_pi_range",
                                  "pi IS NULL OR (pi > 0 AND pi <= 1)")
    op.create_table(
        "trained_versions",
        sa.Column("judge_version", sa.Text, nullable=False),
        sa.Column("parent", sa.Text, nullable=False),
        sa.Column("labels_from", sa.Text, nullable=False),
        sa.Column("recorded_at", TZ, nullable=False),
        sa.PrimaryKeyConstraint("judge_version", name="pk_trained_versions"),
    )
    op.create_table(
        "training_labels",
        sa.Column("judge_version", sa.Text, nullable=False),
        sa.Column("run_id", sa.Text, nullable=False),
        sa.Column("label_id", sa.Integer, nullable=True),
        sa.Column("part", sa.Text, nullable=False),
        sa.PrimaryKeyConstraint("judge_version", "run_id", name="pk_training_labels"),
        sa.ForeignKeyConstraint(["judge_version"], ["trained_versions.judge_version"],
                                name="fk_training_labels_judge_version_trained_versions"),
        sa.ForeignKeyConstraint(["run_id"], ["runs.run_id"],
                                name="fk_training_labels_run_id_runs"),
        sa.CheckConstraint("part IN ('train', 'validation', 'calibration')",
                           name="ck_training_labels_part_kind"),
    )
    op.create_index("ix_training_labels_run_id", "training_labels", ["run_id"])
    if op.get_bind().dialect.name == "postgresql":
        op.execute(f"""
DO $$ BEGIN
  IF EXISTS (SELECT 1 FROM pg_roles WHERE rolname = '{ROLE}') THEN
    GRANT SELECT ON sampling_rounds, sampling_frames, trained_versions, training_labels
      TO {ROLE};
  END IF;
END $$""")


def downgrade() -> None:
    op.drop_index("ix_training_labels_run_id", "training_labels")
    op.drop_table("training_labels")
    op.drop_table("trained_versions")
    with op.batch_alter_table("review_labels") as t:
        t.drop_constraint("ck_review_labels_pi_range", type_="check")
        t.drop_constraint("fk_review_labels_round_id_sampling_rounds", type_="foreignkey")
        t.drop_column("pi")
        t.drop_column("round_id")
    op.drop_index("ix_sampling_frames_run_id", "sampling_frames")
    op.drop_table("sampling_frames")
    op.drop_index("ix_sampling_rounds_judge_version", "sampling_rounds")
    op.drop_table("sampling_rounds")
