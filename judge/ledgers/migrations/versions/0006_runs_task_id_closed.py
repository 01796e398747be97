"""Tier-B isolation reaches ``runs``: the API's role cannot read ``runs.task_id``.

Revision 0005 closed ``tier_b_tasks`` to ``rcjudge_api`` but left ``runs`` readable
whole, and ``runs.task_id`` holds the task id of every run, tier B included. Column
privileges are per column, not per row, so the column is closed for every tier and the
API reads what it may show from a new column instead:

* ``runs.public_task_id``: the task id when the run's tier is not ``B``, NULL for a tier-B
  run (backfilled here; written by :mod:`judge.ledgers.store` beside ``task_id``).
* PostgreSQL: ``rcjudge_api`` loses ``SELECT`` on ``runs`` and gets
  ``SELECT (<every column but task_id>)`` back; it keeps ``INSERT`` (it records runs, task
  id included: write-only). It loses its grant on the ``calibration_set`` view, whose
  select list reads ``runs.task_id`` (a ``security_invoker`` view checks every column it
  references, so no column of it could be read anyway); the API computes its calibration
  set from ``judgments`` and ``current_operator_labels``.

Revision ID: 0006
Revises: 0005
Create Date: 2026-12-01
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0006"
down_revision = "0005"
branch_labels = None
depends_on = None

ROLE = "rcjudge_api"
#: Every column of ``runs`` at this revision except ``task_id`` (frozen, like the migration).
RUNS_OPEN = ("run_id", "bundle_uri", "bundle_hash", "policy_vendor", "policy_name",
             "policy_version", "policy_checkpoint", "body_arm", "body_hand",
             "body_calibrated_at", "task_tier", "env", "seed", "attribution_extra",
             "body_dof", "body_mount_h_mm", "duration_s", "cycle_sec", "recorded_at",
             "public_task_id")


def upgrade() -> None:
    op.add_column("runs", sa.Column("public_task_id", sa.Text, nullable=True))
    op.execute("UPDATE runs SET public_task_id = task_id WHERE task_tier <> 'B'")
    if op.get_bind().dialect.name != "postgresql":
        return
    op.execute("REVOKE ALL ON runs FROM PUBLIC")
    op.execute(f"REVOKE ALL ON runs FROM {ROLE}")
    op.execute(f"GRANT INSERT ON runs TO {ROLE}")
    op.execute(f"GRANT SELECT ({', '.join(RUNS_OPEN)}) ON runs TO {ROLE}")
    op.execute(f"REVOKE ALL ON calibration_set FROM {ROLE}")


def downgrade() -> None:
    if op.get_bind().dialect.name == "postgresql":
        op.execute(f"REVOKE ALL ON runs FROM {ROLE}")
        op.execute(f"GRANT SELECT, INSERT ON runs TO {ROLE}")
        op.execute(f"GRANT SELECT ON calibration_set TO {ROLE}")
    op.execute("ALTER TABLE runs DROP COLUMN public_task_id")
