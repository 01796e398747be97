"""Records going into and coming out of the ledgers (``judge.ledgers.store``).

:class:`Run` is what happened (written once per run); :class:`Label` is what a
person said; :class:`CalibrationRow` is one row of the ``calibration_set`` view.
What a judge said is :class:`judge.ensemble.judgment.Judgment`, used as it is.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime

from pydantic import BaseModel, ConfigDict, Field, field_validator

from judge.api.protocol import Attribution


def utc(value: datetime) -> datetime:
    """``value`` as an aware UTC datetime; a naive value is taken to be UTC."""
    return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)


class _Record(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Run(_Record):
    """One recorded run: bundle identity, attribution and what was measured from the data."""

    run_id: str = Field(min_length=1, description="Bundle folder name or request id.")
    bundle_uri: str = Field(min_length=1, description="Where the bundle was read from.")
    bundle_hash: str = Field(pattern=r"^[0-9a-f]{64}$", description="Manifest bundle hash.")
    attribution: Attribution = Field(description="The 11 attribution fields (+ optional ones).")
    duration_s: float = Field(ge=0, description="Length of the recording (s).")
    cycle_sec: float = Field(gt=0, description="Cycle time measured from the data (s).")
    recorded_at: datetime | None = Field(None, description="Write time (UTC) when None.")

    @field_validator("recorded_at")
    @classmethod
    def _utc(cls, v: datetime | None) -> datetime | None:
        return None if v is None else utc(v)


class Label(_Record):
    """One operator label: what a person said about a run, and when."""

    run_id: str = Field(min_length=1)
    attempt: bool
    success: bool
    failure_class: str | None = Field(None, description="Taxonomy class; None when not given.")
    labeled_by: str = Field(min_length=1, description="Who labelled (name or id).")
    labeled_at: datetime = Field(description="When; naive values are taken as UTC.")

    @field_validator("labeled_at")
    @classmethod
    def _utc(cls, v: datetime) -> datetime:
        return utc(v)


@dataclass(frozen=True)
class StoredLabel:
    """A label as stored, with its id (ids grow with insertion order)."""

    label_id: int
    label: Label


@dataclass(frozen=True)
class CalibrationRow:
    """A judgment that disagrees with its run's current operator label."""

    judgment_id: int
    run_id: str
    judge_version: str
    task_id: str | None  # None for a tier-B run read through a blind ledger
    attempt: bool
    success: bool
    failure_class: str | None
    attempt_confidence: float
    success_confidence: float
    label_id: int
    label_attempt: bool
    label_success: bool
    label_failure_class: str | None
    labeled_by: str
    labeled_at: datetime
    attempt_disagrees: bool
    success_disagrees: bool
    class_disagrees: bool


@dataclass(frozen=True)
class Written:
    """What one ``record`` call wrote (False: the row was already there) and the run's id."""

    run: bool
    judgment: bool
    run_id: str = ""
