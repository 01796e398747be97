"""Request and response shapes of the Judge API (spec/judge_api.md), as pydantic models.

Only shapes live here; the logic that serves them is callable without HTTP.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field

_NonEmpty = Field(min_length=1)


class _Shape(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Policy(_Shape):
    """Who made the policy under test. Never enters a judge prompt."""

    vendor: str = _NonEmpty
    name: str = _NonEmpty
    version: str = _NonEmpty
    checkpoint: str = Field(min_length=1, description="Content hash of the weights, e.g. sha256:…")


class Body(_Shape):
    """The robot body the run was recorded on."""

    arm: str = _NonEmpty
    hand: str = _NonEmpty
    calibrated_at: str = Field(min_length=1, description="Date of the last calibration.")
    dof: int | None = Field(None, ge=0, description="Degrees of freedom of arm + hand "
                            "(required by intake: configs/attribution.yaml).")
    mount_h_mm: float | None = Field(None, description="Mount height in millimetres "
                                     "(required by intake).")


class Task(_Shape):
    """The task: its catalog id and tier."""

    id: str = _NonEmpty
    tier: str = _NonEmpty


class Reset(_Shape):
    """How the scene was reset before the run (optional)."""

    type: str = _NonEmpty
    seconds: float | None = Field(None, ge=0)
    operator_min: float | None = Field(None, ge=0)


class Attribution(_Shape):
    """One run's attribution: 11 required fields (configs/attribution.yaml); env, seed, reset."""

    policy: Policy
    body: Body
    task: Task
    env: dict[str, Any] | None = Field(
        None, description="Scene conditions (lighting, clutter, friction…); optional, kept.")
    seed: str | int | None = Field(None, description="Seed of the run; optional, kept.")
    reset: Reset | None = None


EnvValue = float | int | str | bool


class JudgmentRequest(Attribution):
    """``POST /v1/judgments`` body: the bundle by URI, its attribution, the judge version."""

    bundle_uri: str = Field(min_length=1, max_length=2048,
                            description="Bundle folder: local path or fsspec URI.")
    judge: str = Field("rc-judge-v1", min_length=1, max_length=200,
                       description="Judge version to apply.")
    env: dict[str, EnvValue] | None = Field(
        None, description="Scene conditions (lighting, clutter, friction…); optional, kept.")


# --- answers ---------------------------------------------------------------------------
class _Out(BaseModel):
    model_config = ConfigDict(extra="forbid")


class ChargedTo(_Out):
    """Who pays for a judged call."""

    rcsn: str | None = Field(description="Contract serial number; null when billed per key.")
    cell_id: str | None = Field(description="Test cell the run was recorded in; null if unknown.")
    key_id: str = Field(description="The API key charged (its public id).")


class JudgmentResponse(_Out):
    """``200`` of ``POST /v1/judgments`` and ``GET /v1/judgments/{judgment_id}``."""

    judgment_id: str = Field(description="``jd_<n>``.")
    run_id: str
    attempt: bool = Field(description="Did the policy try the task (its own question).")
    success: bool = Field(description="Did it complete the task (its own question).")
    failure_class: str | None = Field(description="Taxonomy class on a failure; null otherwise.")
    counts_against_policy: bool = Field(description="From the taxonomy; an empty class counts.")
    attempt_confidence: float = Field(ge=0, le=1)
    success_confidence: float = Field(ge=0, le=1)
    charged_to: ChargedTo | None = Field(description="Null when read back, not judged now.")
    judge_version: str
    table_row_id: str | None = Field(description="``cf_<n>``: this run's coefficients row.")


class JudgmentList(_Out):
    """A page of judgments, newest first."""

    data: list[JudgmentResponse]
    next_cursor: str | None = Field(description="Pass as ``cursor`` for the next page.")


class JobResult(_Out):
    """The outcome of a finished judging job."""

    judgment: JudgmentResponse | None = None
    error: Problem | None = None


class Problem(_Out):
    """RFC 9457 problem details (``application/problem+json``)."""

    type: str = Field("about:blank", description="URI of the problem type.")
    title: str
    status: int = Field(ge=400, le=599, description="Equals the HTTP status.")
    detail: str
    instance: str | None = None
    missing: list[str] | None = Field(None, description="Attribution fields missing (422).")


class Job(_Out):
    """An asynchronous judging job (``Prefer: respond-async``)."""

    job_id: str
    status: str = Field(description="queued | running | succeeded | failed")
    created_at: str
    finished_at: str | None
    result: JobResult | None


class Usage(_Out):
    """What the calling key was charged: $0.60 per judged call; replays and errors are free."""

    key_id: str
    calls: int = Field(ge=0, description="Judged calls charged.")
    amount_cents: int = Field(ge=0)
    amount_usd: str = Field(description="Exact decimal, e.g. ``1.20``.")
    price_per_call_usd: str


class KeyInfo(_Out):
    """The calling key: its id, mode and rights (never the key itself)."""

    key_id: str
    name: str
    mode: str = Field(description="live | test")
    rights_granted: list[str]
    created_at: str


JobResult.model_rebuild()
