"""Tables of the three ledgers (SQLAlchemy Core), after the vote and before export.

``runs`` records only what happened (bundle, attribution, durations) and whose run it
is (``owner``: :data:`LOCAL_OWNER` for the ledger's own operator, an API key's id for a
run judged through the Judge API; a bundle is recorded once per owner, revision 0010);
``judgments`` records what one judge version said about one run (unique per
run and version); ``operator_labels`` records what people said (several per
run, the latest by ``labeled_at`` is current). Two views, created by migration
0002, read across them: ``current_operator_labels`` and ``calibration_set``.

The migrations under ``migrations/versions`` create exactly these tables; a
test compares them with :data:`metadata` so the two cannot drift apart.
"""

from __future__ import annotations

from datetime import UTC, datetime

import sqlalchemy as sa
from sqlalchemy.dialects.postgresql import JSONB

#: JSON documents; JSONB on PostgreSQL so they can be queried and indexed.
JSON = sa.JSON().with_variant(JSONB(), "postgresql")


class UTCDateTime(sa.TypeDecorator):
    """A timestamp stored in UTC and always read back timezone-aware (UTC).

    PostgreSQL keeps ``timestamptz``; SQLite keeps a naive UTC ISO string, which
    sorts correctly as text (the ``current_operator_labels`` view relies on it).
    A naive ``datetime`` given on write is taken to be UTC.
    """

    impl = sa.DateTime(timezone=True)
    cache_ok = True

    def process_bind_param(self, value: datetime | None, dialect: sa.Dialect) -> datetime | None:
        if value is None:
            return None
        value = value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)
        return value.replace(tzinfo=None) if dialect.name == "sqlite" else value

    def process_result_value(self, value: datetime | None,
                             dialect: sa.Dialect) -> datetime | None:
        if value is None:
            return None
        return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)


metadata = sa.MetaData(naming_convention={
    "pk": "pk_%(table_name)s",
    "uq": "uq_%(table_name)s_%(column_0_N_name)s",
    "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s",
    "ck": "ck_%(table_name)s_%(constraint_name)s",
    "ix": "ix_%(table_name)s_%(column_0_N_name)s",
})

#: The owner of the runs the ledger's own operator records (the CLI): every run that no
#: API key judged. An API key's runs are owned by its key id (``key_…``).
LOCAL_OWNER = "local"

runs = sa.Table(
    "runs", metadata,
    sa.Column("run_id", sa.Text, primary_key=True),
    sa.Column("bundle_uri", sa.Text, nullable=False),
    sa.Column("bundle_hash", sa.String(64), nullable=False),
    sa.Column("policy_vendor", sa.Text, nullable=False),
    sa.Column("policy_name", sa.Text, nullable=False),
    sa.Column("policy_version", sa.Text, nullable=False),
    sa.Column("policy_checkpoint", sa.Text, nullable=False),
    sa.Column("body_arm", sa.Text, nullable=False),
    sa.Column("body_hand", sa.Text, nullable=False),
    sa.Column("body_calibrated_at", sa.Text, nullable=False),
    sa.Column("task_id", sa.Text, nullable=False, index=True),
    sa.Column("task_tier", sa.Text, nullable=False),
    sa.Column("env", JSON, nullable=True),  # optional attribution, kept when given
    sa.Column("seed", sa.Text, nullable=True),
    sa.Column("attribution_extra", JSON, nullable=True),  # reset
    sa.Column("body_dof", sa.Integer, nullable=True),  # required since 0004; NULL on older rows
    sa.Column("body_mount_h_mm", sa.Float, nullable=True),
    sa.Column("duration_s", sa.Float, nullable=False),
    sa.Column("cycle_sec", sa.Float, nullable=False),
    sa.Column("recorded_at", UTCDateTime, nullable=False),
    # the task id when it may be shown: NULL for a tier-B run (revision 0006). The Judge
    # API's role reads this column and has no privilege on ``task_id`` (docs/api.md).
    sa.Column("public_task_id", sa.Text, nullable=True),
    # whose run (revision 0010): the same bytes from two owners are two runs
    sa.Column("owner", sa.Text, nullable=False, server_default=LOCAL_OWNER),
    sa.UniqueConstraint("owner", "bundle_hash"),
    sa.CheckConstraint("duration_s >= 0", name="duration_s_nonneg"),
    sa.CheckConstraint("cycle_sec > 0", name="cycle_sec_pos"),
)

judgments = sa.Table(
    "judgments", metadata,
    sa.Column("judgment_id", sa.Integer, primary_key=True, autoincrement=True),
    sa.Column("run_id", sa.Text, sa.ForeignKey("runs.run_id"), nullable=False),
    sa.Column("judge_version", sa.Text, nullable=False, index=True),
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
    sa.Column("judged_at", UTCDateTime, nullable=False),
    sa.Column("fingerprint", sa.String(64), nullable=True),  # NULL before revision 0004
    sa.Column("instruction_sha256", sa.String(64), nullable=True),
    sa.UniqueConstraint("run_id", "judge_version"),
    sa.CheckConstraint("attempt_confidence >= 0 AND attempt_confidence <= 1",
                       name="attempt_confidence_range"),
    sa.CheckConstraint("success_confidence >= 0 AND success_confidence <= 1",
                       name="success_confidence_range"),
)

operator_labels = sa.Table(
    "operator_labels", metadata,
    sa.Column("label_id", sa.Integer, primary_key=True, autoincrement=True),
    sa.Column("run_id", sa.Text, sa.ForeignKey("runs.run_id"), nullable=False),
    sa.Column("attempt", sa.Boolean, nullable=False),
    sa.Column("success", sa.Boolean, nullable=False),
    sa.Column("failure_class", sa.Text, nullable=True),
    sa.Column("labeled_by", sa.Text, nullable=False),
    sa.Column("labeled_at", UTCDateTime, nullable=False),
    sa.UniqueConstraint("run_id", "labeled_by", "labeled_at"),
)

#: What the review queue knew when a label was made through it (migration 0009,
#: judge.ledgers.review): one row per such label; imported labels have none.
review_labels = sa.Table(
    "review_labels", metadata,
    sa.Column("label_id", sa.Integer, sa.ForeignKey("operator_labels.label_id"),
              primary_key=True, autoincrement=False),
    sa.Column("judge_version", sa.Text, nullable=False, index=True),
    sa.Column("strategy", sa.Text, nullable=False),
    sa.Column("rank", sa.Integer, nullable=False),
    sa.Column("score", sa.Float, nullable=False),
    sa.Column("reason", sa.Text, nullable=False),
    sa.Column("note", sa.Text, nullable=True),
    # a label made from a sampling pick (migration 0011): its round and inclusion probability
    sa.Column("round_id", sa.Integer, sa.ForeignKey("sampling_rounds.round_id"), nullable=True),
    sa.Column("pi", sa.Float, nullable=True),
    sa.CheckConstraint("rank >= 1", name="rank_pos"),
    sa.CheckConstraint("pi IS NULL OR (pi > 0 AND pi <= 1)", name="pi_range"),
)

#: Sampling rounds of the review queue (migration 0011, judge.ledgers.rounds): a version's
#: Poisson draw over its candidates, or a label file a lab asserted was a random sample.
sampling_rounds = sa.Table(
    "sampling_rounds", metadata,
    sa.Column("round_id", sa.Integer, primary_key=True, autoincrement=True),
    sa.Column("round_key", sa.String(64), nullable=False, unique=True),
    sa.Column("judge_version", sa.Text, nullable=True, index=True),  # NULL: asserted
    sa.Column("strategy", sa.Text, nullable=False),
    sa.Column("budget", sa.Float, nullable=False),  # the expected draws, the sum of pi
    sa.Column("floor", sa.Float, nullable=True),
    sa.Column("seed", sa.Integer, nullable=True),
    sa.Column("candidates", sa.Integer, nullable=False),
    sa.Column("drawn", sa.Integer, nullable=False),
    sa.Column("options", JSON, nullable=False),  # what the frame left out; an assertion's source
    sa.Column("created_at", UTCDateTime, nullable=False),
    sa.CheckConstraint("strategy IN ('sample', 'sample-uniform', 'asserted')",
                       name="strategy_kind"),
)

#: Every candidate of a round, drawn or not, with its inclusion probability.
sampling_frames = sa.Table(
    "sampling_frames", metadata,
    sa.Column("round_id", sa.Integer, sa.ForeignKey("sampling_rounds.round_id"),
              primary_key=True, autoincrement=False),
    sa.Column("run_id", sa.Text, sa.ForeignKey("runs.run_id"), primary_key=True, index=True),
    sa.Column("pi", sa.Float, nullable=False),
    sa.Column("p", sa.Float, nullable=True),  # the P(success) pi came from; NULL: asserted
    sa.Column("drawn", sa.Boolean, nullable=False),
    sa.CheckConstraint("pi > 0 AND pi <= 1", name="pi_range"),
)

#: Versions ``rcjudge train`` / ``average`` / ``calibrate`` made (migration 0011,
#: judge.ledgers.seen), and each labelled run they used, by part.
trained_versions = sa.Table(
    "trained_versions", metadata,
    sa.Column("judge_version", sa.Text, primary_key=True),
    sa.Column("parent", sa.Text, nullable=False),
    sa.Column("labels_from", sa.Text, nullable=False),  # "ledger", or the label file
    sa.Column("recorded_at", UTCDateTime, nullable=False),
)

training_labels = sa.Table(
    "training_labels", metadata,
    sa.Column("judge_version", sa.Text, sa.ForeignKey("trained_versions.judge_version"),
              primary_key=True),
    sa.Column("run_id", sa.Text, sa.ForeignKey("runs.run_id"), primary_key=True, index=True),
    sa.Column("label_id", sa.Integer, nullable=True),  # no FK: an undone label leaves its id
    sa.Column("part", sa.Text, nullable=False),
    sa.CheckConstraint("part IN ('train', 'validation', 'calibration')", name="part_kind"),
)

judge_versions = sa.Table(
    "judge_versions", metadata,
    sa.Column("judge_version", sa.Text, primary_key=True),
    sa.Column("fingerprint", sa.String(64), nullable=False),
    sa.Column("parts", JSON, nullable=False),  # part name -> sha256 (judge.ensemble.fingerprint)
    sa.Column("registered_at", UTCDateTime, nullable=False),
)

batch_failures = sa.Table(
    "batch_failures", metadata,
    sa.Column("failure_id", sa.Integer, primary_key=True, autoincrement=True),
    sa.Column("bundle_uri", sa.Text, nullable=False),
    sa.Column("judge_version", sa.Text, nullable=False, index=True),
    sa.Column("error", sa.Text, nullable=False),
    sa.Column("message", sa.Text, nullable=False),
    sa.Column("failed_at", UTCDateTime, nullable=False),
)

#: Content of each tier-B (held-out) task (migration 0005). The API's database role
#: (``rcjudge_api``) has no privilege on the four content columns ``task_id``,
#: ``instruction``, ``scene_spec``, ``success_criteria``, nor on ``runs.task_id``, which
#: carries the first of them for every run (migration 0006; docs/api.md).
tier_b_tasks = sa.Table(
    "tier_b_tasks", metadata,
    sa.Column("task_key", sa.Text, primary_key=True),
    sa.Column("tier", sa.Text, nullable=False),
    sa.Column("family", sa.Text, nullable=False),
    sa.Column("task_id", sa.Text, nullable=False, unique=True),
    sa.Column("instruction", sa.Text, nullable=False),
    sa.Column("scene_spec", sa.Text, nullable=True),
    sa.Column("success_criteria", sa.Text, nullable=True),
)

# --- views (created by migration 0002; described here for typed reads) -------------
#: Kept out of :data:`metadata` so nothing ever tries to CREATE TABLE them. Their SQL
#: lives in migration 0002 (frozen, like every migration).
view_metadata = sa.MetaData()

current_operator_labels = sa.Table(
    "current_operator_labels", view_metadata,
    *(sa.Column(c.name, c.type) for c in operator_labels.columns),
)

calibration_set = sa.Table(
    "calibration_set", view_metadata,
    sa.Column("judgment_id", sa.Integer),
    sa.Column("run_id", sa.Text),
    sa.Column("judge_version", sa.Text),
    sa.Column("task_id", sa.Text),
    sa.Column("attempt", sa.Boolean),
    sa.Column("success", sa.Boolean),
    sa.Column("failure_class", sa.Text),
    sa.Column("attempt_confidence", sa.Float),
    sa.Column("success_confidence", sa.Float),
    sa.Column("label_id", sa.Integer),
    sa.Column("label_attempt", sa.Boolean),
    sa.Column("label_success", sa.Boolean),
    sa.Column("label_failure_class", sa.Text),
    sa.Column("labeled_by", sa.Text),
    sa.Column("labeled_at", UTCDateTime),
    sa.Column("attempt_disagrees", sa.Boolean),
    sa.Column("success_disagrees", sa.Boolean),
    sa.Column("class_disagrees", sa.Boolean),
)

# --- sequence outcomes (migration 0007; judge.outcomes, spec/outcomes.md) ------------
#: A dataset ``owner/slug`` groups sequences; ``public`` ones are readable by every key.
datasets = sa.Table(
    "datasets", metadata,
    sa.Column("dataset_id", sa.Integer, primary_key=True, autoincrement=True),
    sa.Column("owner", sa.Text, nullable=False),
    sa.Column("slug", sa.Text, nullable=False),
    sa.Column("public", sa.Boolean, nullable=False),
    sa.Column("created_by", sa.Text, nullable=True),  # API key id; NULL from the CLI
    sa.Column("created_at", UTCDateTime, nullable=False),
    sa.UniqueConstraint("owner", "slug"),
)

#: What an API key may do with a dataset: ``read`` or ``edit`` (edit includes read).
dataset_grants = sa.Table(
    "dataset_grants", metadata,
    sa.Column("dataset_id", sa.Integer, sa.ForeignKey("datasets.dataset_id"),
              primary_key=True),
    sa.Column("key_id", sa.Text, primary_key=True),
    sa.Column("access", sa.Text, nullable=False),
    sa.CheckConstraint("access IN ('read', 'edit')", name="access_kind"),
)

#: A sequence is one run (one bundle) in a dataset; its uid is derived from the bundle hash.
sequences = sa.Table(
    "sequences", metadata,
    sa.Column("dataset_id", sa.Integer, sa.ForeignKey("datasets.dataset_id"),
              primary_key=True),
    sa.Column("sequence_uid", sa.Text, primary_key=True),
    sa.Column("bundle_hash", sa.String(64), nullable=False),
    sa.Column("bundle_uri", sa.Text, nullable=False),
    sa.Column("length_s", sa.Float, nullable=True),  # known from exactly one MCAP, else NULL
    sa.Column("added_at", UTCDateTime, nullable=False),
)

#: Every version of every sequence's outcome label; one ``is_current`` per sequence.
sequence_outcomes = sa.Table(
    "sequence_outcomes", metadata,
    sa.Column("outcome_id", sa.Integer, primary_key=True, autoincrement=True),
    sa.Column("uid", sa.Text, nullable=False, unique=True),
    sa.Column("dataset_id", sa.Integer, nullable=False),
    sa.Column("sequence_uid", sa.Text, nullable=False),
    sa.Column("version", sa.Integer, nullable=False),
    sa.Column("is_current", sa.Boolean, nullable=False),
    sa.Column("outcome", sa.Text, nullable=False),
    sa.Column("evaluation_membership", sa.Text, nullable=False),
    sa.Column("source", sa.Text, nullable=False),
    sa.Column("autonomy_level", sa.Text, nullable=False),
    sa.Column("model_version", sa.Text, nullable=False),
    sa.Column("label", JSON, nullable=False),  # the whole stored label (judge.outcomes.labels)
    sa.Column("labeled_by", sa.Text, nullable=True),
    sa.Column("created_at", UTCDateTime, nullable=False),
    sa.ForeignKeyConstraint(["dataset_id", "sequence_uid"],
                            ["sequences.dataset_id", "sequences.sequence_uid"],
                            name="fk_sequence_outcomes_sequence"),
    sa.UniqueConstraint("dataset_id", "sequence_uid", "version"),
    sa.CheckConstraint("version >= 1", name="version_pos"),
)

#: Technical validity of each sequence's capture (judge.outcomes.acceptance): the machine
#: verdict and criteria, and a reviewer's override with who and when. Apart from labels.
acceptance = sa.Table(
    "acceptance", metadata,
    sa.Column("dataset_id", sa.Integer, primary_key=True),
    sa.Column("sequence_uid", sa.Text, primary_key=True),
    sa.Column("verdict", sa.Text, nullable=False),  # accept | quarantine | reject
    sa.Column("criteria", JSON, nullable=False),
    sa.Column("checked_at", UTCDateTime, nullable=False),
    sa.Column("review_verdict", sa.Text, nullable=True),
    sa.Column("reviewed_by", sa.Text, nullable=True),
    sa.Column("reviewed_at", UTCDateTime, nullable=True),
    sa.Column("review_note", sa.Text, nullable=True),
    sa.ForeignKeyConstraint(["dataset_id", "sequence_uid"],
                            ["sequences.dataset_id", "sequences.sequence_uid"],
                            name="fk_acceptance_sequence"),
)

#: Quality targets of a dataset (judge.outcomes.targets): the limit, the campaign file that
#: set it, and — while it stands crossed — when that crossing was alerted, at what value.
quality_targets = sa.Table(
    "quality_targets", metadata,
    sa.Column("dataset_id", sa.Integer, sa.ForeignKey("datasets.dataset_id"),
              primary_key=True),
    sa.Column("target", sa.Text, primary_key=True),
    sa.Column("limit_value", sa.Float, nullable=False),
    sa.Column("campaign", sa.Text, nullable=True),
    sa.Column("set_at", UTCDateTime, nullable=False),
    sa.Column("crossed_at", UTCDateTime, nullable=True),
    sa.Column("crossed_value", sa.Float, nullable=True),
)
