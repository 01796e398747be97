"""Views: current_operator_labels and calibration_set.

The current label of a run is its latest by ``labeled_at`` (ties: the higher
``label_id``, i.e. imported later). A judgment is in the calibration set when
its attempt or success differs from the run's current label, or the label names
a failure class and the judgment's class differs from it (a label that leaves
the class empty says nothing about the class). Portable SQL: SQLite and
PostgreSQL; the three ``*_disagrees`` columns are booleans (0/1 on SQLite).

Revision ID: 0002
Revises: 0001
Create Date: 2026-11-20
"""

from __future__ import annotations

from alembic import op

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None

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


def upgrade() -> None:
    op.execute(CURRENT_OPERATOR_LABELS)
    op.execute(CALIBRATION_SET)


def downgrade() -> None:
    op.execute("DROP VIEW calibration_set")
    op.execute("DROP VIEW current_operator_labels")
