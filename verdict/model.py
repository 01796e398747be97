"""Records of the verdict engine: the card, its evidence rows and the enums.

The Korean enum values are the output contract of ``spec/verdict.md`` and stay
Korean everywhere (data, code, screen). Cards are frozen dataclasses (cheap to
build 10,000 at a time); :func:`card_to_dict` gives the JSON shape of
``verdict_card.schema.json``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

ENGINE_VERSION = "0.1.0"

CANDIDATE = "배포 후보"
RATE_BELOW = "성공률 미달"
SKEWED = "실패 유형 쏠림"
CYCLE_OVER = "작업 주기 초과"
NOT_TRAINED = "학습에 없는 조건"
#: The five verdicts in the spec's order (also the screen's group order).
VERDICTS: tuple[str, ...] = (CANDIDATE, RATE_BELOW, SKEWED, CYCLE_OVER, NOT_TRAINED)

MISMATCH = "능력 불일치"
NOT_EVALUATED = "평가 미실시"
#: ``blocked_cause`` values, only with ``학습에 없는 조건``.
CAUSES: tuple[str, ...] = (MISMATCH, NOT_EVALUATED)

AGGS: tuple[str, ...] = ("count", "sum", "avg", "median", "min", "max")
SOURCES: tuple[str, ...] = ("evaluation_run", "task_spec", "dataset_index")

#: Metric fields that are all null when a task has no evaluation rows.
METRIC_FIELDS: tuple[str, ...] = (
    "success_rate", "failure_total", "top_failure_reason",
    "top_failure_count", "top_failure_share", "cycle_sec_median",
)
#: Summary provenance: the rules' sentence, an accepted model sentence, or a
#: rejected model sentence replaced by the rules' one.
SUMMARY_SOURCES: tuple[str, ...] = ("rules", "model", "fallback")

Scalar = str | int | float | bool | None


@dataclass(frozen=True, slots=True)
class Evidence:
    """One evidence row: a value read from ``source.field``.

    Attributes:
        source: ``evaluation_run``, ``task_spec`` or ``dataset_index``.
        field: a real column of that table.
        value: the verbatim cell value (``agg`` None) or the aggregate.
        agg: ``count``/``sum``/``avg``/``median``/``min``/``max`` for a value
            counted over several rows, else None.
    """

    source: str
    field: str
    value: Scalar
    agg: str | None = None


@dataclass(frozen=True, slots=True)
class Card:
    """One task's "what to collect next" card (``verdict_card.schema.json``).

    ``summary_source``/``summary_note`` record whether a model sentence was
    used or rejected; ``missing`` maps an empty card field to the input that
    was empty and stopped it (shown in place on the screen).
    """

    task_id: str
    model_artifact: str
    verdict: str
    evidence: tuple[Evidence, ...]
    summary: str
    blocked_cause: str | None = None
    success_rate: float | None = None
    failure_total: int | None = None
    top_failure_reason: str | None = None
    top_failure_count: int | None = None
    top_failure_share: float | None = None
    cycle_sec_median: float | None = None
    more_episode_count: int | None = None
    recapture_site: str | None = None
    recapture_hand: str | None = None
    hedge: str | None = None
    summary_source: str = "rules"
    summary_note: str | None = None
    missing: dict[str, str] = field(default_factory=dict)


_ORDER = (
    "task_id", "model_artifact", "verdict", "blocked_cause", "success_rate",
    "failure_total", "top_failure_reason", "top_failure_count", "top_failure_share",
    "cycle_sec_median", "more_episode_count", "recapture_site", "recapture_hand",
    "evidence", "summary", "hedge", "summary_source", "summary_note", "missing",
)


def evidence_to_dict(ev: Evidence) -> dict[str, Any]:
    """JSON shape of one evidence row (``agg`` always present, null when verbatim)."""
    return {"source": ev.source, "field": ev.field, "agg": ev.agg, "value": ev.value}


def card_to_dict(card: Card) -> dict[str, Any]:
    """JSON shape of a card, keys in the schema's order."""
    out: dict[str, Any] = {}
    for key in _ORDER:
        value = getattr(card, key)
        if key == "evidence":
            value = [evidence_to_dict(ev) for ev in value]
        elif key == "missing":
            value = dict(value)
        out[key] = value
    return out


def card_from_dict(data: dict[str, Any]) -> Card:
    """Rebuild a :class:`Card` from its JSON shape (extra keys are ignored)."""
    evidence = tuple(
        Evidence(source=e.get("source"), field=e.get("field"), value=e.get("value"),
                 agg=e.get("agg"))
        for e in data.get("evidence") or ()
    )
    known = {k: data[k] for k in _ORDER if k in data and k not in ("evidence", "missing")}
    known.setdefault("summary", "")
    known.setdefault("verdict", "")
    known.setdefault("model_artifact", "")
    known.setdefault("task_id", "")
    return Card(**known, evidence=evidence, missing=dict(data.get("missing") or {}))
