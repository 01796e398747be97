"""Tier-B task content and the API's database role (tier-B isolation per connection).

* ``tier_b_tasks``: the content of each tier-B (held-out) task, keyed by an opaque
  ``task_key``. Its four **content columns** are ``task_id``, ``instruction``,
  ``scene_spec`` and ``success_criteria``; ``task_key``, ``tier`` and ``family`` are not
  content.
* PostgreSQL only: the role ``rcjudge_api`` (LOGIN, NOINHERIT, member of no role) that the
  Judge API connects as. It is granted ``SELECT (task_key, tier, family)`` on
  ``tier_b_tasks`` and nothing on the four content columns, so ``SELECT *``, a filter or
  sort on a content column, ``to_jsonb(row)`` and ``COPY`` all fail with 42501 through it.
  PUBLIC loses every privilege on ``tier_b_tasks``; the two ledger views become
  ``security_invoker`` (PostgreSQL 15+), so no view reads with its owner's rights.
  The role is granted what the API needs on the ledgers (read/insert runs, judgments,
  labels, judge versions).

SQLite has no roles: there the revision only creates the table.

Revision ID: 0005
Revises: 0004
Create Date: 2026-12-01
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0005"
down_revision = "0004"
branch_labels = None
depends_on = None

ROLE = "rcjudge_api"
CONTENT_COLUMNS = ("task_id", "instruction", "scene_spec", "success_criteria")
OPEN_COLUMNS = ("task_key", "tier", "family")
LEDGER_TABLES = ("runs", "judgments", "operator_labels", "judge_versions")


def upgrade() -> None:
    op.create_table(
        "tier_b_tasks",
        sa.Column("task_key", sa.Text, nullable=False),
        sa.Column("tier", sa.Text, nullable=False),
        sa.Column("family", sa.Text, nullable=False),
        sa.Column("task_id", sa.Text, nullable=False),
        sa.Column("instruction", sa.Text, nullable=False),
        sa.Column("scene_spec", sa.Text, nullable=True),
        sa.Column("success_criteria", sa.Text, nullable=True),
        sa.PrimaryKeyConstraint("task_key", name="pk_tier_b_tasks"),
        sa.UniqueConstraint("task_id", name="uq_tier_b_tasks_task_id"),
    )
    if op.get_bind().dialect.name != "postgresql":
        return
    op.execute(f"""
DO $$ BEGIN
  IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = '{ROLE}') THEN
    CREATE ROLE {ROLE} LOGIN NOINHERIT NOSUPERUSER NOCREATEDB NOCREATEROLE NOBYPASSRLS;
  END IF;
END $$""")
    op.execute(f"DO $$ BEGIN EXECUTE format('GRANT USAGE ON SCHEMA %I TO {ROLE}', "
               "current_schema()); END $$")
    op.execute("REVOKE ALL ON tier_b_tasks FROM PUBLIC")
    op.execute(f"REVOKE ALL ON tier_b_tasks FROM {ROLE}")
    op.execute(f"GRANT SELECT ({', '.join(OPEN_COLUMNS)}) ON tier_b_tasks TO {ROLE}")
    for table in LEDGER_TABLES:
        op.execute(f"GRANT SELECT, INSERT ON {table} TO {ROLE}")
    op.execute(f"GRANT SELECT ON alembic_version, current_operator_labels, calibration_set "
               f"TO {ROLE}")
    op.execute(f"DO $$ BEGIN EXECUTE format('GRANT USAGE ON ALL SEQUENCES IN SCHEMA %I TO "
               f"{ROLE}', current_schema()); END $$")
    for view in ("current_operator_labels", "calibration_set"):
        op.execute(f"ALTER VIEW {view} SET (security_invoker = true)")


def downgrade() -> None:
    if op.get_bind().dialect.name == "postgresql":
        for view in ("current_operator_labels", "calibration_set"):
            op.execute(f"ALTER VIEW {view} RESET (security_invoker)")
        op.execute(f"REVOKE ALL ON alembic_version, current_operator_labels, calibration_set "
                   f"FROM {ROLE}")
        for table in LEDGER_TABLES:
            op.execute(f"REVOKE ALL ON {table} FROM {ROLE}")
    op.drop_table("tier_b_tasks")
