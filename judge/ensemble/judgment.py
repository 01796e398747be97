"""The Judgment record: what one judge version said about one run.

Produced by ``judge.ensemble.judge.judge_bundle``; stored by the ledgers; returned
(in part) by the Judge API. Field names are the spec's words.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field


class _Record(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class ModelAnswer(_Record):
    """One model's raw answers (after calibration, when the judge version has it)."""

    model: str = Field(description="Model entry name in the judge version.")
    p_attempt: float = Field(ge=0, le=1, description="P(yes) to the attempt question.")
    p_success: float = Field(ge=0, le=1, description="P(yes) to the success question.")
    p_attempt_raw: float = Field(ge=0, le=1, description="P(yes) before calibration.")
    p_success_raw: float = Field(ge=0, le=1, description="P(yes) before calibration.")
    failure_class: str | None = Field(None, description="Its class if it judged a failure.")
    p_failure_class: float | None = Field(None, ge=0, le=1,
                                          description="P(family) × P(class | family).")


class StageTimings(_Record):
    """Wall-clock seconds per stage of one call."""

    intake_s: float = Field(ge=0)
    frames_s: float = Field(ge=0, description="MCAP read, contacts, sampling and decode.")
    models_s: float = Field(ge=0)
    vote_s: float = Field(ge=0)

    @property
    def total_s(self) -> float:
        return self.intake_s + self.frames_s + self.models_s + self.vote_s


class Cost(_Record):
    """Estimated cost of one call from configs/pricing.yaml."""

    gpu_s: float = Field(ge=0)
    cpu_s: float = Field(ge=0)
    usd: float = Field(ge=0)


class Judgment(_Record):
    """One judge version's verdict on one run."""

    run_id: str = Field(description="Bundle folder name or request id.")
    bundle_uri: str
    bundle_hash: str = Field(pattern=r"^[0-9a-f]{64}$")
    task_id: str
    judge_version: str
    attempt: bool
    success: bool
    failure_class: str | None = Field(description="Taxonomy class; None on success.")
    counts_against_policy: bool = Field(description="From the taxonomy; unknown/empty counts.")
    attempt_confidence: float = Field(ge=0, le=1)
    success_confidence: float = Field(ge=0, le=1)
    answers: tuple[ModelAnswer, ...]
    frames: int = Field(ge=0, description="Images shown to each model per question.")
    timings: StageTimings
    cost: Cost
    fingerprint: str | None = Field(None, pattern=r"^[0-9a-f]{64}$",
                                    description="The judge version's fingerprint "
                                    "(judge.ensemble.fingerprint); None on rows before it.")
    instruction_sha256: str | None = Field(None, pattern=r"^[0-9a-f]{64}$",
                                           description="sha256 of the task-catalog entry the "
                                           "questions used.")
