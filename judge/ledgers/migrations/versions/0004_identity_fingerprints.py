"""Attribution as the spec's eleven leaves; judge-version fingerprints.

* ``runs``: ``body_dof`` and ``body_mount_h_mm`` become columns (copied from
  ``attribution_extra`` where earlier rows kept them there); ``env`` and ``seed`` become
  optional (NULL when the run did not give them).
* ``judgments``: ``fingerprint`` (of the judge version that wrote the row) and
  ``instruction_sha256`` (of the task-catalog instruction the questions used); NULL on
  rows written before this revision.
* ``judge_versions``: each version's fingerprint and its parts, registered on first use.

SQLite cannot drop NOT NULL in place: ``runs`` is rebuilt (batch mode). The views read
``runs``, so they are dropped first and created again with the same SQL as 0002; foreign
keys are off during the upgrade (``judge.ledgers.store.upgrade``) and checked after it.

Revision ID: 0004
Revises: 0003
Create Date: 2026-12-01
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects.postgresql import JSONB

revision = "0004"
down_revision = "0003"
branch_labels = None
depends_on = None

JSON = sa.JSON().with_variant(JSONB(), "postgresql")
TIMESTAMP = sa.DateTime(timezone=True)

# frozen copies of revision 0002's views
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


def _drop_views() -> None:
    op.execute("DROP VIEW calibration_set")
    op.execute("DROP VIEW current_operator_labels")


def _create_views() -> None:
    op.execute(CURRENT_OPERATOR_LABELS)
    op.execute(CALIBRATION_SET)


def upgrade() -> None:
    _drop_views()
    with op.batch_alter_table("runs") as t:
        t.add_column(sa.Column("body_dof", sa.Integer, nullable=True))
        t.add_column(sa.Column("body_mount_h_mm", sa.Float, nullable=True))
        t.alter_column("env", existing_type=JSON, nullable=True)
        t.alter_column("seed", existing_type=sa.Text, nullable=True)
    runs = sa.table("runs", sa.column("run_id", sa.Text), sa.column("attribution_extra", JSON),
                    sa.column("body_dof", sa.Integer), sa.column("body_mount_h_mm", sa.Float))
    conn = op.get_bind()
    for run_id, extra in conn.execute(sa.select(runs.c.run_id, runs.c.attribution_extra)
                                      .where(runs.c.attribution_extra.is_not(None))).all():
        if not isinstance(extra, dict):
            continue
        rest = {k: v for k, v in extra.items() if k not in ("body.dof", "body.mount_h_mm")}
        conn.execute(runs.update().where(runs.c.run_id == run_id).values(
            body_dof=extra.get("body.dof"), body_mount_h_mm=extra.get("body.mount_h_mm"),
            attribution_extra=rest or None))
    with op.batch_alter_table("judgments") as t:
        t.add_column(sa.Column("fingerprint", sa.String(64), nullable=True))
        t.add_column(sa.Column("instruction_sha256", sa.String(64), nullable=True))
    op.create_table(
        "judge_versions",
        sa.Column("judge_version", sa.Text, nullable=False),
        sa.Column("fingerprint", sa.String(64), nullable=False),
        sa.Column("parts", JSON, nullable=False),
        sa.Column("registered_at", TIMESTAMP, nullable=False),
        sa.PrimaryKeyConstraint("judge_version", name="pk_judge_versions"),
    )
    _create_views()


def downgrade() -> None:
    _drop_views()
    op.drop_table("judge_versions")
    with op.batch_alter_table("judgments") as t:
        t.drop_column("instruction_sha256")
        t.drop_column("fingerprint")
    with op.batch_alter_table("runs") as t:
        t.drop_column("body_mount_h_mm")
        t.drop_column("body_dof")
    _create_views()
