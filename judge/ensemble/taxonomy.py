"""The failure taxonomy (configs/taxonomy.yaml): classes, families, who a failure counts against.

Whether a failure counts against the policy is looked up here, never in a list in
code. An empty or unknown class on a failure counts against the policy:
otherwise "don't label it" would be a free way to raise a success rate.

Errors toward exempt classes are not symmetric with other errors: a failure filed under one
leaves the policy's account. So a judge files a failure under an exempt class only when
its vote for that class reaches ``exempt_evidence`` (per class, else per family, else the
default); below it the failure is unclassified and counts (``judge.ensemble.vote``).
"""

from __future__ import annotations

from functools import cache
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from judge.config import configs_dir, load_model, load_yaml


class FailureClass(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    counts_against_policy: bool
    description: str = ""


class ExemptEvidence(BaseModel):
    """How sure the vote must be before a failure is filed under an exempt class."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    default: float = Field(0.5, ge=0, le=1, description="Class-vote confidence an exempt "
                           "class needs when neither its class nor its family sets one.")
    families: dict[str, float] = Field(default_factory=dict, description="Family -> the "
                                       "confidence its exempt classes need.")
    classes: dict[str, float] = Field(default_factory=dict, description="Exempt class -> "
                                      "the confidence it needs (before its family's).")

    @field_validator("families", "classes")
    @classmethod
    def _probabilities(cls, v: dict[str, float]) -> dict[str, float]:
        bad = {k: x for k, x in v.items() if not 0.0 <= x <= 1.0}
        if bad:
            raise ValueError(f"confidences must be in [0, 1], got {bad}")
        return v


class Taxonomy(BaseModel):
    """Families (prefix before the dot) and their classes, in file order."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    families: dict[str, str] = Field(min_length=1)
    classes: dict[str, FailureClass] = Field(min_length=1)
    exempt_evidence: ExemptEvidence = Field(default_factory=ExemptEvidence, description=(
        "The class-vote confidence a failure needs to be filed under an exempt class."))

    @model_validator(mode="after")
    def _dotted(self) -> Taxonomy:
        for name in self.classes:
            family, dot, leaf = name.partition(".")
            if not dot or not leaf or family not in self.families:
                raise ValueError(f"class {name!r} must be '<family>.<name>' with a listed family")
        ev = self.exempt_evidence
        for name in ev.classes:
            if name not in self.classes:
                raise ValueError(f"exempt_evidence.classes: {name} is not a class")
            if self.classes[name].counts_against_policy:
                raise ValueError(f"exempt_evidence.classes: {name} counts against the policy; "
                                 "only exempt classes need evidence")
        exempt_families = {c.partition(".")[0] for c in self.exempt}
        for fam in ev.families:
            if fam not in exempt_families:
                raise ValueError(f"exempt_evidence.families: {fam} has no exempt class "
                                 f"(families with one: {', '.join(sorted(exempt_families))})")
        return self

    def exempt_threshold(self, failure_class: str | None) -> float | None:
        """The class-vote confidence an exempt class needs; None for a class that counts
        against the policy (or an unknown one, which counts too)."""
        entry = self.classes.get(failure_class or "")
        if entry is None or entry.counts_against_policy:
            return None
        ev = self.exempt_evidence
        return ev.classes.get(failure_class, ev.families.get(failure_class.partition(".")[0],
                                                               ev.default))

    def file_class(self, failure_class: str | None, confidence: float | None) -> str | None:
        """The class a failure is filed under: ``failure_class``, unless it is exempt and
        ``confidence`` (the class vote's) is below :meth:`exempt_threshold` — then None."""
        need = self.exempt_threshold(failure_class)
        if need is None or (confidence is not None and confidence >= need):
            return failure_class
        return None

    def in_family(self, family: str) -> list[str]:
        return [c for c in self.classes if c.partition(".")[0] == family]

    def counts_against_policy(self, failure_class: str | None) -> bool:
        """True unless the class is listed and marked exempt; empty/unknown counts."""
        entry = self.classes.get(failure_class or "")
        return True if entry is None else entry.counts_against_policy

    @property
    def exempt(self) -> list[str]:
        return [c for c, v in self.classes.items() if not v.counts_against_policy]


@cache
def load_taxonomy(path: str | None = None) -> Taxonomy:
    p = Path(path) if path else configs_dir() / "taxonomy.yaml"
    return load_model(Taxonomy, load_yaml(p), str(p))
