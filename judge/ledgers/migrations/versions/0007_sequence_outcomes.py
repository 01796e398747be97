"""Datasets, sequences, per-key dataset rights and versioned sequence outcome labels.

Tables ``datasets``, ``dataset_grants``, ``sequences``, ``sequence_outcomes`` and
``acceptance`` (technical validity, kept apart from labels) (spec/outcomes.md;
``judge.outcomes``). Independent of every other table: nothing
earlier is altered. On PostgreSQL the API role of 0005 may read and write them.

Revision ID: 0007
Revises: 0006
Create Date: 2026-12-01
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects.postgresql import JSONB

revision = "0007"
down_revision = "0006"
branch_labels = None
depends_on = None

ROLE = "rcjudge_api"
JSON = sa.JSON().with_variant(JSONB(), "postgresql")
TIMESTAMP = sa.DateTime(timezone=True)  # UTC; judge.ledgers.schema.TIMESTAMP binds it
TABLES = ("datasets", "dataset_grants", "sequences", "sequence_outcomes", "acceptance")


def upgrade() -> None:
    op.create_table(
        "datasets",
        sa.Column("dataset_id", sa.Integer, autoincrement=True, nullable=False),
        sa.Column("owner", sa.Text, nullable=False),
        sa.Column("slug", sa.Text, nullable=False),
        sa.Column("public", sa.Boolean, nullable=False),
        sa.Column("created_by", sa.Text, nullable=True),
        sa.Column("created_at", TIMESTAMP, nullable=False),
        sa.PrimaryKeyConstraint("dataset_id", name="pk_datasets"),
        sa.UniqueConstraint("owner", "slug", name="uq_datasets_owner_slug"),
    )
    op.create_table(
        "dataset_grants",
        sa.Column("dataset_id", sa.Integer, nullable=False),
        sa.Column("key_id", sa.Text, nullable=False),
        sa.Column("access", sa.Text, nullable=False),
        sa.PrimaryKeyConstraint("dataset_id", "key_id", name="pk_dataset_grants"),
        sa.ForeignKeyConstraint(["dataset_id"], ["datasets.dataset_id"],
                                name="fk_dataset_grants_dataset_id_datasets"),
        sa.CheckConstraint("access IN ('read', 'edit')", name="ck_dataset_grants_access_kind"),
    )
    op.create_table(
        "sequences",
        sa.Column("dataset_id", sa.Integer, nullable=False),
        sa.Column("sequence_uid", sa.Text, nullable=False),
        sa.Column("bundle_hash", sa.String(64), nullable=False),
        sa.Column("bundle_uri", sa.Text, nullable=False),
        sa.Column("length_s", sa.Float, nullable=True),
        sa.Column("added_at", TIMESTAMP, nullable=False),
        sa.PrimaryKeyConstraint("dataset_id", "sequence_uid", name="pk_sequences"),
        sa.ForeignKeyConstraint(["dataset_id"], ["datasets.dataset_id"],
                                name="fk_sequences_dataset_id_datasets"),
    )
    op.create_table(
        "sequence_outcomes",
        sa.Column("outcome_id", sa.Integer, autoincrement=True, nullable=False),
        sa.Column("uid", sa.Text, nullable=False),
        sa.Column("dataset_id", sa.Integer, nullable=False),
        sa.Column("sequence_uid", sa.Text, nullable=False),
        sa.Column("version", sa.Integer, nullable=False),
        sa.Column("is_current", sa.Boolean, nullable=False),
        sa.Column("outcome", sa.Text, nullable=False),
        sa.Column("evaluation_membership", sa.Text, nullable=False),
        sa.Column("source", sa.Text, nullable=False),
        sa.Column("autonomy_level", sa.Text, nullable=False),
        sa.Column("model_version", sa.Text, nullable=False),
        sa.Column("label", JSON, nullable=False),
        sa.Column("labeled_by", sa.Text, nullable=True),
        sa.Column("created_at", TIMESTAMP, nullable=False),
        sa.PrimaryKeyConstraint("outcome_id", name="pk_sequence_outcomes"),
        sa.UniqueConstraint("uid", name="uq_sequence_outcomes_uid"),
        sa.UniqueConstraint("dataset_id", "sequence_uid", "version",
                            name="uq_sequence_outcomes_dataset_id_sequence_uid_version"),
        sa.ForeignKeyConstraint(["dataset_id", "sequence_uid"],
                                ["sequences.dataset_id", "sequences.sequence_uid"],
                                name="fk_sequence_outcomes_sequence"),
        sa.CheckConstraint("version >= 1", name="ck_sequence_outcomes_version_pos"),
    )
    op.create_table(
        "acceptance",
        sa.Column("dataset_id", sa.Integer, nullable=False),
        sa.Column("sequence_uid", sa.Text, nullable=False),
        sa.Column("verdict", sa.Text, nullable=False),
        sa.Column("criteria", JSON, nullable=False),
        sa.Column("checked_at", TIMESTAMP, nullable=False),
        sa.Column("review_verdict", sa.Text, nullable=True),
        sa.Column("reviewed_by", sa.Text, nullable=True),
        sa.Column("reviewed_at", TIMESTAMP, nullable=True),
        sa.Column("review_note", sa.Text, nullable=True),
        sa.PrimaryKeyConstraint("dataset_id", "sequence_uid", name="pk_acceptance"),
        sa.ForeignKeyConstraint(["dataset_id", "sequence_uid"],
                                ["sequences.dataset_id", "sequences.sequence_uid"],
                                name="fk_acceptance_sequence"),
    )
    if op.get_bind().dialect.name == "postgresql":
        op.execute(f"""
DO $$ BEGIN
  IF EXISTS (SELECT 1 FROM pg_roles WHERE rolname = '{ROLE}') THEN
    GRANT SELECT, INSERT, UPDATE ON {', '.join(TABLES)} TO {ROLE};
  END IF;
END $$""")


def downgrade() -> None:
    for table in reversed(TABLES):
        op.drop_table(table)
