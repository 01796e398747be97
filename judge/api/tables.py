"""Tables the Judge API keeps beside the three ledgers (SQLAlchemy Core).

``api_keys`` lives in the live database only (a key is looked up before its mode is
known); everything else exists once per mode: a test key's judgments, usage, jobs and
webhooks are written to the test database (:class:`judge.api.service.JudgeService`), so a
test key cannot touch live data by construction.

Created with ``create_all`` when the API opens a database (``CREATE … IF NOT EXISTS``);
the ledgers' own tables stay under the ledger migrations.
"""

from __future__ import annotations

import sqlalchemy as sa

from judge.ledgers.schema import JSON, UTCDateTime

metadata = sa.MetaData()

api_keys = sa.Table(
    "api_keys", metadata,
    sa.Column("key_id", sa.Text, primary_key=True),
    sa.Column("mode", sa.Text, nullable=False),
    sa.Column("name", sa.Text, nullable=False),
    sa.Column("secret_hash", sa.String(64), nullable=False, unique=True),
    sa.Column("rights_granted", JSON, nullable=False),  # sorted list of rights
    sa.Column("created_at", UTCDateTime, nullable=False),
    sa.Column("revoked_at", UTCDateTime, nullable=True),
)

key_datasets = sa.Table(
    "api_key_datasets", metadata,  # live database: a key whose judgments land in a dataset
    sa.Column("key_id", sa.Text, primary_key=True),
    sa.Column("dataset", sa.Text, nullable=False),  # owner/slug, in the key's mode database
)

idempotency = sa.Table(
    "api_idempotency", metadata,
    sa.Column("key_id", sa.Text, primary_key=True),
    sa.Column("idempotency_key", sa.Text, primary_key=True),
    sa.Column("request_sha256", sa.String(64), nullable=False),
    sa.Column("state", sa.Text, nullable=False),  # in_flight | done
    sa.Column("status", sa.Integer, nullable=True),
    sa.Column("headers", JSON, nullable=True),
    sa.Column("body", sa.LargeBinary, nullable=True),
    sa.Column("created_at", UTCDateTime, nullable=False),
    sa.Column("expires_at", UTCDateTime, nullable=False),
)

usage = sa.Table(
    "api_usage", metadata,
    sa.Column("usage_id", sa.Integer, primary_key=True, autoincrement=True),
    sa.Column("key_id", sa.Text, nullable=False, index=True),
    sa.Column("judgment_id", sa.Integer, nullable=False, unique=True),
    sa.Column("amount_cents", sa.Integer, nullable=False),
    sa.Column("rights_granted", JSON, nullable=False),
    sa.Column("recorded_at", UTCDateTime, nullable=False),
)

jobs = sa.Table(
    "api_jobs", metadata,
    sa.Column("job_id", sa.Text, primary_key=True),
    sa.Column("key_id", sa.Text, nullable=False, index=True),
    sa.Column("kind", sa.Text, nullable=False),  # judgment | rejudge
    sa.Column("status", sa.Text, nullable=False),  # queued | running | succeeded | failed
    sa.Column("request", JSON, nullable=False),
    sa.Column("result", JSON, nullable=True),
    sa.Column("error", JSON, nullable=True),
    sa.Column("created_at", UTCDateTime, nullable=False),
    sa.Column("finished_at", UTCDateTime, nullable=True),
)

coefficients = sa.Table(
    "coefficients", metadata,
    sa.Column("row_id", sa.Integer, primary_key=True, autoincrement=True),
    sa.Column("judgment_id", sa.Integer, nullable=False, unique=True),
    sa.Column("policy", sa.Text, nullable=False),  # vendor/name@version
    sa.Column("body", sa.Text, nullable=False),  # arm+hand
    sa.Column("task_family", sa.Text, nullable=False),
    sa.Column("tier", sa.Text, nullable=False),
    sa.Column("judge_version", sa.Text, nullable=False),
    sa.Column("success", sa.Boolean, nullable=False),
    sa.Column("failure_class", sa.Text, nullable=True),
    sa.Column("counts_against_policy", sa.Boolean, nullable=False),
    sa.Column("task_key", sa.String(32), nullable=False),  # keyed hash: counts tasks, names none
    sa.Column("added_at", UTCDateTime, nullable=False),
    # the published cell (judge.api.coefficients.release); NULL while pending (tier B)
    sa.Column("block", sa.Integer, nullable=True),
    sa.Column("cell_policy", sa.Text, nullable=True),
    sa.Column("cell_body", sa.Text, nullable=True),
    sa.Column("cell_family", sa.Text, nullable=True),
)

tier_b_designations = sa.Table(
    "api_tier_b_designations", metadata,  # the operator's tier-B tasks (never a caller's)
    sa.Column("task_key", sa.String(32), primary_key=True),  # keyed hash, as coefficients
    sa.Column("designated_at", UTCDateTime, nullable=False),
)

tier_b_grants = sa.Table(
    "api_tier_b_grants", metadata,  # the keys that may judge a designated task (issue 36)
    sa.Column("task_key", sa.String(32), primary_key=True),
    sa.Column("key_id", sa.Text, primary_key=True),
    sa.Column("granted_at", UTCDateTime, nullable=False),
)

settings = sa.Table(
    "api_settings", metadata,  # e.g. the secret of the coefficients' task keys
    sa.Column("name", sa.Text, primary_key=True),
    sa.Column("value", sa.Text, nullable=False),
)

webhook_endpoints = sa.Table(
    "webhook_endpoints", metadata,
    sa.Column("endpoint_id", sa.Text, primary_key=True),
    sa.Column("key_id", sa.Text, nullable=False, index=True),
    sa.Column("url", sa.Text, nullable=False),
    sa.Column("events", JSON, nullable=False),
    sa.Column("secret", sa.Text, nullable=False),  # whsec_…, needed to sign
    sa.Column("enabled", sa.Boolean, nullable=False),
    sa.Column("disabled_reason", sa.Text, nullable=True),
    sa.Column("created_at", UTCDateTime, nullable=False),
)

webhook_deliveries = sa.Table(
    "webhook_deliveries", metadata,
    sa.Column("delivery_id", sa.Integer, primary_key=True, autoincrement=True),
    sa.Column("endpoint_id", sa.Text, nullable=False, index=True),
    sa.Column("message_id", sa.Text, nullable=False),
    sa.Column("event_type", sa.Text, nullable=False),
    sa.Column("attempt", sa.Integer, nullable=False),
    sa.Column("status", sa.Integer, nullable=True),  # HTTP status; NULL: no answer
    sa.Column("error", sa.Text, nullable=True),
    sa.Column("delivered_at", UTCDateTime, nullable=False),
)

attestations = sa.Table(
    "attestations", metadata,
    sa.Column("attestation_id", sa.Text, primary_key=True),
    sa.Column("subject", sa.Text, nullable=False),
    sa.Column("statement", sa.Text, nullable=False),
    sa.Column("issued_by", sa.Text, nullable=False),
    sa.Column("issued_at", UTCDateTime, nullable=False),
)

owned = sa.Table(
    "api_owned", metadata,  # which key's call wrote which judgment (of its own run, runs.owner)
    sa.Column("key_id", sa.Text, primary_key=True),
    sa.Column("judgment_id", sa.Integer, primary_key=True),
    sa.Column("first_at", UTCDateTime, nullable=False),
)
