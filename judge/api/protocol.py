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


class JudgmentRequest(Attribution):
    """``POST /v1/judgments`` body."""

    bundle_uri: str = Field(min_length=1, description="Bundle folder: local path or fsspec URI.")
    judge: str = Field("rc-judge-v1", min_length=1, description="Judge version to apply.")
