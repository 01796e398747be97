"""How ``rcjudge truth-labels`` reads a truth file: the project's ``truth.json`` layout by
default, another generator's through ``--mapping FILE.yaml`` (docs/sim.md).

A mapping names the truth file in each bundle folder, where each label field sits in it
(a dotted path), how that generator spells its values (``values``), its failure reasons
in the taxonomy's classes (``classes``), and constants for fields it does not record
(``defaults``)::

    file: outcome.json
    fields: {attempt: result.tried, success: result.status, failure_class: result.reason}
    values: {success: {ok: true, failed: false}}
    classes: {dropped: grasp.slip, bumped: motion.collision, none: null}
    defaults: {attempt: true}
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from judge.sim.errors import SimError
from rcjudge.errors import describe_validation

#: The label fields a truth file gives, in the order of the label file.
FIELDS = ("attempt", "success", "failure_class", "near_threshold")
REQUIRED = ("attempt", "success", "failure_class")


def spelt(value: Any) -> str:
    """One spelling of a JSON/YAML scalar for ``values``/``classes`` keys: true, 3, ok."""
    if isinstance(value, bool):
        return "true" if value else "false"
    return "null" if value is None else str(value)


class TruthMapping(BaseModel):
    """Where a generator's truth file keeps each label field, and how it spells them."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    file: str = Field("truth.json", min_length=1, description="The truth file's name in "
                      "each bundle folder (JSON).")
    fields: dict[str, str] = Field(default_factory=dict, description="Label field (attempt, "
                                   "success, failure_class, near_threshold) -> dotted path in "
                                   "the truth file; unlisted fields are read by their own name.")
    values: dict[str, dict[str, Any]] = Field(default_factory=dict, description="Label field "
                                              "-> {the file's value: ours}, e.g. success: "
                                              "{ok: true, failed: false}.")
    classes: dict[str, str | None] = Field(default_factory=dict, description="The file's "
                                           "failure reason -> taxonomy class (null: none); "
                                           "unlisted reasons are taken as classes.")
    defaults: dict[str, Any] = Field(default_factory=dict, description="Label field -> the "
                                     "value when the file does not have it (e.g. attempt: "
                                     "true for a generator that only records tried runs).")

    @field_validator("fields", "values", "defaults")
    @classmethod
    def _known_fields(cls, v: dict) -> dict:
        unknown = sorted(set(v) - set(FIELDS))
        if unknown:
            raise ValueError(f"unknown label field(s) {', '.join(unknown)}; expected "
                             f"{', '.join(FIELDS)}")
        return v

    @field_validator("values", mode="before")
    @classmethod
    def _spelt_values(cls, v: Any) -> Any:
        if not isinstance(v, dict):
            return v
        return {k: {spelt(a): b for a, b in m.items()} if isinstance(m, dict) else m
                for k, m in v.items()}

    @field_validator("classes", mode="before")
    @classmethod
    def _spelt_classes(cls, v: Any) -> Any:
        return {spelt(k): m for k, m in v.items()} if isinstance(v, dict) else v


def load_mapping(path: str | None) -> TruthMapping:
    """The mapping of ``--mapping FILE.yaml``, or the project's own layout without one."""
    if path is None:
        return TruthMapping()
    import yaml

    try:
        data = yaml.safe_load(Path(path).read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise SimError(f"--mapping {path}: file not found") from None
    except (UnicodeDecodeError, yaml.YAMLError) as exc:
        raise SimError(f"--mapping {path}: invalid YAML: {exc}") from None
    try:
        return TruthMapping.model_validate(data if data is not None else {})
    except ValidationError as exc:
        raise SimError(f"--mapping {path}: {describe_validation(exc)}") from None


_MISSING = object()


def _lookup(doc: Any, dotted: str) -> Any:
    for key in dotted.split("."):
        if not isinstance(doc, dict) or key not in doc:
            return _MISSING
        doc = doc[key]
    return doc


def read_truth(doc: dict, mapping: TruthMapping, source: str) -> dict[str, Any]:
    """The label fields of one truth document, in the project's spelling.

    Raises:
        SimError: naming ``source``, every missing field (and where it was looked for),
            or a value that is not true/false after ``values``.
    """
    out, missing = {}, []
    for name in FIELDS:
        where = mapping.fields.get(name, name)
        value = _lookup(doc, where)
        if value is _MISSING:
            value = mapping.defaults.get(name, _MISSING)
        if value is _MISSING:
            if name in REQUIRED:
                missing.append(name if where == name else f"{name} ({where})")
            continue
        value = mapping.values.get(name, {}).get(spelt(value), value)
        if name == "failure_class" and value is not None:
            value = mapping.classes.get(spelt(value), value)
        if name in ("attempt", "success") and not isinstance(value, bool):
            raise SimError(f"{source}: {where} = {value!r}; expected true or false (a "
                           f"--mapping values: {{{name}: {{{spelt(value)}: true|false}}}} entry "
                           "maps other spellings)")
        out[name] = value
    if missing:
        hint = "" if mapping.fields else " (--mapping FILE.yaml maps another layout's fields)"
        raise SimError(f"{source}: missing key(s) {', '.join(missing)}{hint}")
    return out
