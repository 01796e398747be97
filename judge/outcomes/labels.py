"""Validation of one outcome label write (spec/outcomes.md): pure, no I/O.

:func:`validate_label` takes the JSON document of a write (``PUT …/outcome/``, the SDK,
the CLI, a judgment's mapping) and returns the **whole** label as stored: every field
present, omitted optional fields unset (``null``, ``""``, ``[]`` or ``{}`` as the spec
says), never copied from an earlier version. The first broken rule raises
:class:`OutcomeLabelError`, whose message names the field (a JSON path such as
``subtasks[2].end_ts``) and the rule.
"""

from __future__ import annotations

import math
from typing import Any

from judge.errors import JudgeError
from judge.outcomes.text import problem
from rcjudge.errors import shown

OUTCOMES = ("expert_success", "slow_success", "partial_success", "mistake_and_recovery",
            "intervention", "unsafe", "aborted", "failure", "novel_strategy",
            "inefficient_strategy")
AUTONOMY_LEVELS = ("human_demonstration", "teleoperation", "autonomous", "shared_autonomy",
                   "intervention")
MEMBERSHIPS = ("train", "held_out_eval", "none")
SOURCES = ("human", "model", "imported")
LEAKAGE_KEYS = ("location", "object", "mechanism", "operator", "environment_family")
HANDS = ("left", "right")
READ_ONLY = ("uid", "sequence_uid", "version", "is_current", "labeled_by", "created_at",
             "updated_at")
WRITABLE = ("outcome", "progress", "quality", "speed", "subtasks", "hand_actions",
            "mistake_type", "recovery_type", "failure_stage", "autonomy_level",
            "model_version", "evaluation_membership", "leakage_groups", "source",
            "source_metadata", "confidence")
MAX_SUBTASKS = 256
MAX_HAND_ACTIONS = 3600
MAX_METADATA_KEYS = 20
LENGTH_SLACK_S = 1.0  # every end_ts <= sequence length + 1 s


class OutcomeLabelError(JudgeError, ValueError):
    """A label write breaks a rule; ``field`` is the JSON path, ``rule`` what it must be."""

    def __init__(self, field: str, rule: str) -> None:
        self.field, self.rule = field, rule
        super().__init__(f"{field}: {rule}")


class TextError(OutcomeLabelError):
    """A stored string is not storable text (a lone surrogate, a NUL): the API's 422."""


def check_text(v: str, field: str) -> str:
    """``v`` when it may be stored (:func:`judge.outcomes.text.problem`); else TextError."""
    why = problem(v)
    if why:
        raise TextError(field, why)
    return v


def _is_number(v: Any) -> bool:
    return isinstance(v, int | float) and not isinstance(v, bool)


def _number(v: Any, field: str, lo: float, hi: float | None = None) -> float:
    what = f"a finite number from {lo:g} to {hi:g}" if hi is not None else \
        f"a finite number >= {lo:g}"
    if not _is_number(v) or not math.isfinite(v) or v < lo or (hi is not None and v > hi):
        raise OutcomeLabelError(field, f"must be {what} (got {shown(v)})")
    return float(v)


def _text(v: Any, field: str, lo: int, hi: int) -> str:
    if not isinstance(v, str):
        raise OutcomeLabelError(field, f"must be a string (got {type(v).__name__})")
    if not lo <= len(v) <= hi:
        span = f"{lo}-{hi}" if lo else f"at most {hi}"
        raise OutcomeLabelError(field, f"must be {span} characters (got {len(v)})")
    return check_text(v, field)


def _choice(v: Any, field: str, values: tuple[str, ...], *, blank: bool) -> str:
    if blank and v in (None, ""):
        return ""
    if not isinstance(v, str) or v not in values:
        raise OutcomeLabelError(field, f"must be one of {', '.join(values)} (got {shown(v)})")
    return v


def _optional_text(v: Any, field: str, hi: int) -> str:
    return "" if v is None else _text(v, field, 0, hi)


def _span(item: Any, field: str, length_s: float | None) -> tuple[float, float]:
    if not isinstance(item, dict):
        raise OutcomeLabelError(field, f"must be an object (got {type(item).__name__})")
    for key in ("start_ts", "end_ts"):
        if key not in item:
            raise OutcomeLabelError(f"{field}.{key}", "is required")
    start = _number(item["start_ts"], f"{field}.start_ts", 0)
    end = _number(item["end_ts"], f"{field}.end_ts", 0)
    if end < start:
        raise OutcomeLabelError(f"{field}.end_ts", f"must be >= start_ts {start:g} (got {end:g})")
    if length_s is not None and end > length_s + LENGTH_SLACK_S:
        raise OutcomeLabelError(f"{field}.end_ts", f"must be <= the sequence length {length_s:g} "
                                f"s + 1 s = {length_s + LENGTH_SLACK_S:g} (got {end:g})")
    return start, end


def _keys(item: dict, field: str, allowed: tuple[str, ...]) -> None:
    extra = sorted(set(item) - set(allowed))
    if extra:
        raise OutcomeLabelError(f"{field}.{extra[0]}",
                                f"unknown key; allowed: {', '.join(allowed)}")


def validate_subtasks(value: Any, length_s: float | None = None) -> list[dict[str, Any]]:
    """Subtasks as stored: ≤ 256, sorted by start, nested or disjoint, enclosing first."""
    if value is None:
        return []
    if not isinstance(value, list):
        raise OutcomeLabelError("subtasks", f"must be a list (got {type(value).__name__})")
    if len(value) > MAX_SUBTASKS:
        raise OutcomeLabelError("subtasks", f"at most {MAX_SUBTASKS} subtasks (got {len(value)})")
    out: list[dict[str, Any]] = []
    for i, item in enumerate(value):
        field = f"subtasks[{i}]"
        start, end = _span(item, field, length_s)
        _keys(item, field, ("label", "start_ts", "end_ts", "outcome"))
        if "label" not in item:
            raise OutcomeLabelError(f"{field}.label", "is required")
        label = _text(item["label"], f"{field}.label", 1, 500)
        outcome = item.get("outcome")
        if outcome is not None:
            _choice(outcome, f"{field}.outcome", OUTCOMES, blank=False)
        out.append({"label": label, "start_ts": start, "end_ts": end, "outcome": outcome})
    for i in range(1, len(out)):
        prev, cur = out[i - 1], out[i]
        if cur["start_ts"] < prev["start_ts"]:
            raise OutcomeLabelError(f"subtasks[{i}].start_ts", f"must be sorted by start_ts: "
                                    f"{cur['start_ts']:g} comes after {prev['start_ts']:g}")
        if cur["start_ts"] == prev["start_ts"] and cur["end_ts"] > prev["end_ts"]:
            raise OutcomeLabelError(f"subtasks[{i}]", f"starts with subtasks[{i - 1}] and "
                                    "encloses it: list the enclosing subtask first")
    for i, cur in enumerate(out):  # nested or disjoint against every earlier one
        for j in range(i):
            prev = out[j]
            disjoint = cur["start_ts"] >= prev["end_ts"]
            nested = cur["end_ts"] <= prev["end_ts"]
            if not (disjoint or nested):
                raise OutcomeLabelError(
                    f"subtasks[{i}]", f"partially overlaps subtasks[{j}] "
                    f"([{cur['start_ts']:g}, {cur['end_ts']:g}] vs [{prev['start_ts']:g}, "
                    f"{prev['end_ts']:g}]): subtasks must be nested or disjoint")
    return out


def validate_hand_actions(value: Any,
                          length_s: float | None = None) -> dict[str, list[dict[str, Any]]]:
    """Hand actions as stored: both hands, each sorted without overlap, six fields an item."""
    if value is None:
        return {"left": [], "right": []}
    if not isinstance(value, dict):
        raise OutcomeLabelError("hand_actions",
                                f"must be an object (got {type(value).__name__})")
    extra = sorted(set(value) - set(HANDS))
    if extra:
        raise OutcomeLabelError(f"hand_actions.{extra[0]}", "unknown hand; only left and right")
    out: dict[str, list[dict[str, Any]]] = {}
    for hand in HANDS:
        items = value.get(hand)
        if items is None:
            out[hand] = []
            continue
        if not isinstance(items, list):
            raise OutcomeLabelError(f"hand_actions.{hand}",
                                    f"must be a list (got {type(items).__name__})")
        if len(items) > MAX_HAND_ACTIONS:
            raise OutcomeLabelError(f"hand_actions.{hand}", f"at most {MAX_HAND_ACTIONS} items "
                                    f"per hand (got {len(items)})")
        stored: list[dict[str, Any]] = []
        for i, item in enumerate(items):
            field = f"hand_actions.{hand}[{i}]"
            start, end = _span(item, field, length_s)
            _keys(item, field, ("start_ts", "end_ts", "action", "object", "verb", "contact"))
            if "action" not in item:
                raise OutcomeLabelError(f"{field}.action", "is required")
            action = _text(item["action"], f"{field}.action", 1, 500)
            obj = _optional_text(item.get("object"), f"{field}.object", 255) or None
            verb = _optional_text(item.get("verb"), f"{field}.verb", 64) or None
            contact = item.get("contact")
            if contact is not None and not isinstance(contact, bool):
                raise OutcomeLabelError(f"{field}.contact",
                                        f"must be true, false or null (got {shown(contact)})")
            if stored:
                prev = stored[-1]
                if start < prev["start_ts"]:
                    raise OutcomeLabelError(f"{field}.start_ts", f"must be sorted by start_ts: "
                                            f"{start:g} comes after {prev['start_ts']:g}")
                if start < prev["end_ts"]:
                    raise OutcomeLabelError(f"{field}.start_ts", f"overlaps {hand}[{i - 1}] "
                                            f"(which ends at {prev['end_ts']:g}): one hand's "
                                            "actions may touch but not overlap")
            stored.append({"start_ts": start, "end_ts": end, "action": action, "object": obj,
                           "verb": verb, "contact": contact})
        out[hand] = stored
    return out


def validate_leakage_groups(value: Any) -> dict[str, str]:
    """Group ids by key (only the five keys; each a string of at most 255 characters)."""
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise OutcomeLabelError("leakage_groups",
                                f"must be an object (got {type(value).__name__})")
    out = {}
    for key, gid in value.items():
        if key not in LEAKAGE_KEYS:
            raise OutcomeLabelError(f"leakage_groups.{key}",
                                    f"unknown key; allowed: {', '.join(LEAKAGE_KEYS)}")
        out[key] = _text(gid, f"leakage_groups.{key}", 1, 255)
    return out


def validate_source_metadata(value: Any) -> dict[str, str | float | int | bool]:
    """A flat object: ≤ 20 keys of 1–64 chars; values strings ≤ 512, finite numbers, booleans."""
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise OutcomeLabelError("source_metadata",
                                f"must be an object (got {type(value).__name__})")
    if len(value) > MAX_METADATA_KEYS:
        raise OutcomeLabelError("source_metadata",
                                f"at most {MAX_METADATA_KEYS} keys (got {len(value)})")
    for key, v in value.items():
        if not isinstance(key, str):
            raise OutcomeLabelError(f"source_metadata.{shown(key, 100)}", "key must be a string")
        if problem(key):
            raise TextError(f"source_metadata.{shown(key, 100)}", f"key {problem(key)}")
        if not 1 <= len(key) <= 64:
            raise OutcomeLabelError(f"source_metadata.{shown(key, 100)}",
                                    f"key must be 1-64 characters (got {len(key)})")
        field = f"source_metadata.{key}"
        if isinstance(v, str):
            _text(v, field, 0, 512)
        elif isinstance(v, bool):
            pass
        elif _is_number(v):
            if not math.isfinite(v):
                raise OutcomeLabelError(field, f"must be a finite number (got {shown(v)})")
        else:
            kind = "null" if v is None else type(v).__name__
            raise OutcomeLabelError(field, "must be a string, a finite number or a boolean "
                                    f"(got {kind}; nested objects, lists and null are rejected)")
    return dict(value)


def _int_1_5(v: Any, field: str) -> int | None:
    if v is None:
        return None
    if not isinstance(v, int) or isinstance(v, bool) or not 1 <= v <= 5:
        raise OutcomeLabelError(field, f"must be an integer from 1 to 5 (got {shown(v)})")
    return v


def validate_label(doc: Any, length_s: float | None = None) -> dict[str, Any]:
    """The label a write stores: every writable field, unset ones empty. Raises on a bad rule.

    ``length_s`` is the sequence length when it is known from exactly one MCAP file
    (:func:`judge.outcomes.store.sequence_length`); ``None`` skips the end_ts check.
    """
    if not isinstance(doc, dict):
        raise OutcomeLabelError("body", f"must be a JSON object (got {type(doc).__name__})")
    for key in doc:
        if key in READ_ONLY:
            raise OutcomeLabelError(key, "is read-only")
        if key not in WRITABLE:
            raise OutcomeLabelError(key, "unknown field")
    if "outcome" not in doc:
        raise OutcomeLabelError("outcome", "is required")
    source = _choice(doc.get("source", "human"), "source", SOURCES, blank=False)
    confidence = doc.get("confidence")
    if confidence is not None:
        if source != "model":
            raise OutcomeLabelError("confidence", f"is allowed only with source 'model' "
                                    f"(source is {source!r})")
        confidence = _number(confidence, "confidence", 0, 1)
    progress = doc.get("progress")
    return {
        "outcome": _choice(doc["outcome"], "outcome", OUTCOMES, blank=False),
        "progress": None if progress is None else _number(progress, "progress", 0, 1),
        "quality": _int_1_5(doc.get("quality"), "quality"),
        "speed": _int_1_5(doc.get("speed"), "speed"),
        "subtasks": validate_subtasks(doc.get("subtasks"), length_s),
        "hand_actions": validate_hand_actions(doc.get("hand_actions"), length_s),
        "mistake_type": _optional_text(doc.get("mistake_type"), "mistake_type", 128),
        "recovery_type": _optional_text(doc.get("recovery_type"), "recovery_type", 128),
        "failure_stage": _optional_text(doc.get("failure_stage"), "failure_stage", 128),
        "autonomy_level": _choice(doc.get("autonomy_level"), "autonomy_level",
                                  AUTONOMY_LEVELS, blank=True),
        "model_version": _optional_text(doc.get("model_version"), "model_version", 255),
        "evaluation_membership": _choice(doc.get("evaluation_membership"),
                                         "evaluation_membership", MEMBERSHIPS, blank=True),
        "leakage_groups": validate_leakage_groups(doc.get("leakage_groups")),
        "source": source,
        "source_metadata": validate_source_metadata(doc.get("source_metadata")),
        "confidence": confidence,
    }
