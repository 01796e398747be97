"""What the sequence-outcome routes answer (spec/outcomes.md), as pydantic models.

Shapes only, for the contract's schema (``/api/v1/openapi.json``): the routes answer the
store's documents as they are (:meth:`judge.outcomes.store.OutcomeStore.get_label`),
and schemathesis checks every answer against these models.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, RootModel

from judge.outcomes.labels import AUTONOMY_LEVELS, MEMBERSHIPS, OUTCOMES, SOURCES

Outcome = Literal[OUTCOMES]  # type: ignore[valid-type]
Blank = Literal[""]


class _Out(BaseModel):
    model_config = ConfigDict(extra="forbid")


class Subtask(_Out):
    """One stored subtask span."""

    label: str
    start_ts: float = Field(ge=0)
    end_ts: float = Field(ge=0)
    outcome: Outcome | None


class HandAction(_Out):
    """One stored hand action."""

    start_ts: float = Field(ge=0)
    end_ts: float = Field(ge=0)
    action: str
    object: str | None
    verb: str | None
    contact: bool | None


class HandActions(_Out):
    """Both hands' actions (an unset hand is an empty list)."""

    left: list[HandAction]
    right: list[HandAction]


class OutcomeLabel(_Out):
    """One version of a sequence's outcome label: every field present, unset ones empty."""

    uid: str = Field(description="``out_…``: this version's id.")
    sequence_uid: str
    version: int = Field(ge=1)
    is_current: bool
    outcome: Outcome
    progress: float | None = Field(ge=0, le=1)
    quality: int | None = Field(ge=1, le=5)
    speed: int | None = Field(ge=1, le=5)
    subtasks: list[Subtask]
    hand_actions: HandActions
    mistake_type: str
    recovery_type: str
    failure_stage: str
    autonomy_level: Literal[AUTONOMY_LEVELS] | Blank  # type: ignore[valid-type]
    model_version: str
    evaluation_membership: Literal[MEMBERSHIPS] | Blank  # type: ignore[valid-type]
    leakage_groups: dict[str, str]
    source: Literal[SOURCES]  # type: ignore[valid-type]
    source_metadata: dict[str, str | float | bool]
    labeled_by: str | None = Field(None, description="Who wrote it: shown to a key that "
                                   "may edit the dataset only.")
    confidence: float | None = Field(ge=0, le=1)
    created_at: str
    updated_at: str
    unencodable_fields: list[str] | None = Field(
        None, description="Present only on a row stored before the text rules: these "
        "fields' bad characters are served as U+FFFD (``rcjudge db check`` lists them).")


class OutcomeHistory(RootModel[list[OutcomeLabel]]):
    """Every version of a label, newest first (a plain array)."""


class OutcomeLabelPage(_Out):
    """A page of current labels by sequence uid; ``next``/``previous`` carry ``cursor``."""

    results: list[OutcomeLabel]
    next: str | None = Field(description="URL of the next page; null on the last.")
    previous: str | None = Field(description="URL of the page before; null on the first.")
