"""Runs belong to an owner: the same bundle from two owners is two runs (issue 36).

* ``runs.owner``: who recorded the run — ``local`` for the ledger's own operator (the
  CLI: ``batch``, ``judge``, ``rejudge``, imports), an API key's id for a run judged
  through the Judge API. NOT NULL, default ``local``.
* ``runs.bundle_hash`` is unique per owner (``uq_runs_owner_bundle_hash``) instead of
  across the ledger: a bundle hash is no longer a way to reach another owner's run.
* Backfill: a run every one of whose judgments was written through the API
  (``api_owned``, when the API has created that table here) belongs to the key that
  judged it first; every other run stays ``local``. Keys that were linked to such a run
  later (the defect this revision ends) no longer read it.
* PostgreSQL: the API role of 0005 may read the new column (it reads and writes its
  keys' runs); the two views are untouched. SQLite cannot change a unique constraint in
  place: ``runs`` is rebuilt (batch mode) with the views dropped and created again with
  0002's SQL, as 0004 does.

Downgrade needs at most one run per bundle hash.

Revision ID: 0010
Revises: 0009
Create Date: 2026-12-06
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0010"
down_revision = "0009"
branch_labels = None
depends_on = None

ROLE = "rcjudge_api"
LOCAL = "local"

# frozen copies of revision 0002's views (SQLite rebuilds ``runs`` under them)
CURRENT_OPERATOR_LABELS = """
CREATE VIEW current_operator_labels AS
SELECT l.label_id, l.run_id, l.attempt, l.success, l.failure_class, l.labeled_by, l.labeled_at
FROM operator_labels l
WHERE NOT EXISTS (
    SELECT 1 FROM operator_labels n
    WHERE n.run_id = l.run_id
      AND (n.labeled_at > l.labeled_at
           OR (n.labeled_at = l.labeled_at AND n.label_id > l.label_id))
)
"""
CLASS_DISAGREES = ("(c.failure_class IS NOT NULL"
                   " AND (j.failure_class IS NULL OR j.failure_class <> c.failure_class))")
CALIBRATION_SET = f"""
CREATE VIEW calibration_set AS
SELECT j.judgment_id, j.run_id, j.judge_version, r.task_id,
       j.attempt, j.success, j.failure_class, j.attempt_confidence, j.success_confidence,
       c.label_id, c.attempt AS label_attempt, c.success AS label_success,
       c.failure_class AS label_failure_class, c.labeled_by, c.labeled_at,
       (j.attempt <> c.attempt) AS attempt_disagrees,
       (j.success <> c.success) AS success_disagrees,
       {CLASS_DISAGREES} AS class_disagrees
FROM judgments j
JOIN runs r ON r.run_id = j.run_id
JOIN current_operator_labels c ON c.run_id = j.run_id
WHERE j.attempt <> c.attempt OR j.success <> c.success OR {CLASS_DISAGREES}
"""

#: The key that judged a run first, for a run all of whose judgments the API wrote.
BACKFILL = """
UPDATE runs SET owner = (
    SELECT o.key_id FROM api_owned o JOIN judgments j ON j.judgment_id = o.judgment_id
    WHERE j.run_id = runs.run_id ORDER BY o.first_at, o.key_id LIMIT 1)
WHERE EXISTS (SELECT 1 FROM judgments j WHERE j.run_id = runs.run_id)
  AND NOT EXISTS (SELECT 1 FROM judgments j WHERE j.run_id = runs.run_id
                  AND NOT EXISTS (SELECT 1 FROM api_owned o
                                  WHERE o.judgment_id = j.judgment_id))
"""


def _sqlite() -> bool:
    return op.get_bind().dialect.name == "sqlite"


def upgrade() -> None:
    owner = sa.Column("owner", sa.Text, nullable=False, server_default=LOCAL)
    if _sqlite():
        op.execute("DROP VIEW calibration_set")
        op.execute("DROP VIEW current_operator_labels")
        with op.batch_alter_table("runs") as t:
            t.add_column(owner)
            t.drop_constraint("uq_runs_bundle_hash", type_="unique")
            t.create_unique_constraint("uq_runs_owner_bundle_hash", ["owner", "bundle_hash"])
        op.execute(CURRENT_OPERATOR_LABELS)
        op.execute(CALIBRATION_SET)
    else:
        op.add_column("runs", owner)
        op.drop_constraint("uq_runs_bundle_hash", "runs", type_="unique")
        op.create_unique_constraint("uq_runs_owner_bundle_hash", "runs",
                                    ["owner", "bundle_hash"])
        op.execute(f"""
DO $$ BEGIN
  IF EXISTS (SELECT 1 FROM pg_roles WHERE rolname = '{ROLE}') THEN
    GRANT SELECT (owner) ON runs TO {ROLE};
  END IF;
END $$""")
    if sa.inspect(op.get_bind()).has_table("api_owned"):
        op.execute(BACKFILL)


def downgrade() -> None:
    if _sqlite():
        op.execute("DROP VIEW calibration_set")
        op.execute("DROP VIEW current_operator_labels")
        with op.batch_alter_table("runs") as t:
            t.drop_constraint("uq_runs_owner_bundle_hash", type_="unique")
            t.create_unique_constraint("uq_runs_bundle_hash", ["bundle_hash"])
            t.drop_column("owner")
        op.execute(CURRENT_OPERATOR_LABELS)
        op.execute(CALIBRATION_SET)
    else:
        op.drop_constraint("uq_runs_owner_bundle_hash", "runs", type_="unique")
        op.create_unique_constraint("uq_runs_bundle_hash", "runs", ["bundle_hash"])
        op.drop_column("runs", "owner")
