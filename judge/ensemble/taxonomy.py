"""The failure taxonomy (configs/taxonomy.yaml): classes, families, who a failure counts against.

Whether a failure counts against the policy is looked up here, never in a list in
code. An empty or unknown class on a failure counts against the policy:
otherwise "don't label it" would be a free way to raise a success rate.
"""

from __future__ import annotations

from functools import cache
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, model_validator

from judge.config import configs_dir, load_model, load_yaml


class FailureClass(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    counts_against_policy: bool
    description: str = ""


class Taxonomy(BaseModel):
    """Families (prefix before the dot) and their classes, in file order."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    families: dict[str, str] = Field(min_length=1)
    classes: dict[str, FailureClass] = Field(min_length=1)

    @model_validator(mode="after")
    def _dotted(self) -> Taxonomy:
        for name in self.classes:
            family, dot, leaf = name.partition(".")
            if not dot or not leaf or family not in self.families:
                raise ValueError(f"class {name!r} must be '<family>.<name>' with a listed family")
        return self

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
