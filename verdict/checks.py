"""The 14 automatic checks of ``spec/verdict.md``, on any cards file.

Each check returns pass/fail per card with a reason. Values are recomputed by
:mod:`verdict.reference` from the three tables (a second implementation), so
the checks judge our own cards and anyone else's the same way. File-level
findings (a task of task_spec without a card, a card twice) are reported
beside them: a missing input must never drop a task.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from verdict.model import (
    CANDIDATE,
    CAUSES,
    CYCLE_OVER,
    METRIC_FIELDS,
    NOT_TRAINED,
    RATE_BELOW,
    SKEWED,
    SOURCES,
    VERDICTS,
)
from verdict.reference import Reference, TaskRef
from verdict.summary import card_words, identifiers, polite_sentence_problem
from verdict.values import agg_problem, same_value, verbatim_problem

CHECKS: dict[int, str] = {
    1: "verdict 는 다섯 값 가운데 하나",
    2: "task_id·model_artifact·verdict·evidence·summary 가 다 차 있음",
    3: "success_rate 재계산, 성공률 미달은 반올림 값 < 목표일 때만",
    4: "top_failure_reason(빈 사유 제외, 동률은 이름순)·top_failure_share(빈 사유도 분모) 재계산",
    5: "실패 유형 쏠림은 실패 3회 이상이고 비율 > 문턱일 때만",
    6: "cycle_sec_median 재계산, 작업 주기 초과는 중앙값 > 최대일 때만",
    7: "more_episode_count 재계산(0 아래는 0, 수집 줄·회차 없으면 비움)",
    8: "평가 행이 없으면 여섯 지표가 모두 비어 있음",
    9: "blocked_cause 는 학습에 없는 조건일 때만, 원인이 규칙과 같음",
    10: "recapture_site·recapture_hand 는 배포 후보·수집 줄 없음이면 비움, 아니면 그대로 옮김",
    11: "success_rate·top_failure_share 는 0~1, cycle_sec_median > 0",
    12: "evidence field 가 출처 표의 실제 컬럼, 요약도 없는 필드를 인용하지 않음",
    13: "agg 없는 evidence 는 인용한 줄 값 그대로, 여러 줄에서 센 값은 agg 를 붙임",
    14: "summary 는 존댓말 한 문장",
}


@dataclass(frozen=True)
class CheckResult:
    """One check on one card."""

    number: int
    passed: bool
    reason: str


@dataclass(frozen=True)
class CardChecks:
    """The 14 results of one card."""

    task_id: str
    results: tuple[CheckResult, ...]

    @property
    def passed(self) -> bool:
        return all(r.passed for r in self.results)


@dataclass(frozen=True)
class Report:
    """Every card's checks plus file-level findings."""

    cards: tuple[CardChecks, ...]
    file_findings: tuple[str, ...]

    @property
    def passed(self) -> bool:
        return not self.file_findings and all(c.passed for c in self.cards)

    def failures(self) -> list[tuple[str, CheckResult]]:
        """``(task_id, result)`` of every failed check."""
        return [(c.task_id, r) for c in self.cards for r in c.results if not r.passed]

    def to_dict(self) -> dict[str, Any]:
        """JSON shape for ``--json`` and the screen."""
        return {"passed": self.passed, "file_findings": list(self.file_findings),
                "checks": {str(k): v for k, v in CHECKS.items()},
                "cards": [{"task_id": c.task_id, "passed": c.passed,
                           "results": [{"number": r.number, "passed": r.passed,
                                        "reason": r.reason} for r in c.results]}
                          for c in self.cards]}


def _same(a: Any, b: Any) -> bool:
    return same_value(a, b)


def _field_check(card: dict, ref: TaskRef, names: tuple[str, ...]) -> str | None:
    diffs = [f"{k}={card.get(k)!r}, expected {ref.metrics.get(k)!r}" for k in names
             if not _same(card.get(k), ref.metrics.get(k))]
    return "; ".join(diffs) or None


def _fires(card: dict, verdict: str, should: bool, why: str) -> str | None:
    has = card.get("verdict") == verdict
    if has == should:
        return None
    return f"{verdict} {'missing' if should else 'given'} but {why}"


def check_1(card: dict, ref: TaskRef, rf: Reference) -> str | None:
    v = card.get("verdict")
    return None if v in VERDICTS else f"verdict {v!r} is not one of {', '.join(VERDICTS)}"


def check_2(card: dict, ref: TaskRef, rf: Reference) -> str | None:
    bad = [k for k in ("task_id", "model_artifact", "verdict", "summary")
           if not isinstance(card.get(k), str) or not card[k].strip()]
    ev = card.get("evidence")
    if not isinstance(ev, list) or not ev:
        bad.append("evidence")
    return "missing or empty: " + ", ".join(bad) if bad else None


def check_3(card: dict, ref: TaskRef, rf: Reference) -> str | None:
    diff = _field_check(card, ref, ("success_rate",))
    rate, target = ref.metrics["success_rate"], ref.spec["target_success_rate"]
    should = ref.reached >= 3 and rate is not None and target is not None and rate < target
    return diff or _fires(card, RATE_BELOW, should, f"rate {rate} vs target {target}")


def check_4(card: dict, ref: TaskRef, rf: Reference) -> str | None:
    return _field_check(card, ref, ("failure_total", "top_failure_reason",
                                    "top_failure_count", "top_failure_share"))


def check_5(card: dict, ref: TaskRef, rf: Reference) -> str | None:
    m, limit = ref.metrics, ref.spec["top_reason_share_limit"]
    share = m["top_failure_share"]
    should = ref.reached >= 4 and ref.verdict == SKEWED
    why = f"{m['failure_total']} failure(s), share {share} vs limit {limit}"
    return _fires(card, SKEWED, should, why)


def check_6(card: dict, ref: TaskRef, rf: Reference) -> str | None:
    diff = _field_check(card, ref, ("cycle_sec_median",))
    should = ref.verdict == CYCLE_OVER
    why = f"median {ref.metrics['cycle_sec_median']} vs max {ref.spec['max_cycle_sec']}"
    return diff or _fires(card, CYCLE_OVER, should, why)


def check_7(card: dict, ref: TaskRef, rf: Reference) -> str | None:
    return _field_check(card, ref, ("more_episode_count",))


def check_8(card: dict, ref: TaskRef, rf: Reference) -> str | None:
    if ref.evaluated:
        return None
    filled = [k for k in METRIC_FIELDS if card.get(k) is not None]
    return "no evaluation rows but filled: " + ", ".join(filled) if filled else None


def check_9(card: dict, ref: TaskRef, rf: Reference) -> str | None:
    cause, verdict = card.get("blocked_cause"), card.get("verdict")
    if cause is not None and cause not in CAUSES:
        return f"blocked_cause {cause!r} is not one of {', '.join(CAUSES)}"
    if verdict != NOT_TRAINED and cause is not None:
        return f"blocked_cause {cause!r} given with verdict {verdict}"
    if (verdict == NOT_TRAINED) != (ref.verdict == NOT_TRAINED):
        return f"rules give {ref.verdict}/{ref.cause}, card says {verdict}/{cause}"
    if verdict == NOT_TRAINED and cause != ref.cause:
        return f"blocked_cause {cause!r}, rules give {ref.cause!r}"
    return None


def check_10(card: dict, ref: TaskRef, rf: Reference) -> str | None:
    copy = card.get("verdict") != CANDIDATE and ref.ds is not None
    want = {"recapture_site": ref.ds["capture_site"] if copy else None,
            "recapture_hand": ref.ds["robot_hand_type"] if copy else None}
    diffs = [f"{k}={card.get(k)!r}, expected {v!r}" for k, v in want.items()
             if card.get(k) != v]
    return "; ".join(diffs) or None


def check_11(card: dict, ref: TaskRef | None, rf: Reference) -> str | None:
    bad = []
    for key in ("success_rate", "top_failure_share"):
        v = card.get(key)
        if v is not None and (not isinstance(v, int | float) or not 0 <= v <= 1):
            bad.append(f"{key}={v!r} outside [0, 1]")
    v = card.get("cycle_sec_median")
    if v is not None and (not isinstance(v, int | float) or v <= 0):
        bad.append(f"cycle_sec_median={v!r} not > 0")
    return "; ".join(bad) or None


def check_12(card: dict, ref: TaskRef | None, rf: Reference) -> str | None:
    bad = []
    for ev in card.get("evidence") or ():
        src, fld = ev.get("source"), ev.get("field")
        if src not in SOURCES:
            bad.append(f"source {src!r} is not one of the three tables")
        elif fld not in rf.columns[src]:
            bad.append(f"{src}.{fld} is not a column of {src}")
    allowed = set().union(*rf.columns.values()) | card_words(card)
    if ref is not None:
        for row in [*ref.rows, ref.spec or {}, ref.ds or {}]:
            allowed.update(v for v in row.values() if isinstance(v, str))
    invented = sorted({w for w in identifiers(card.get("summary", "")) if w not in allowed})
    if invented:
        bad.append("summary cites fields that exist in no table: " + ", ".join(invented))
    return "; ".join(bad) or None


def check_13(card: dict, ref: TaskRef, rf: Reference) -> str | None:
    bad = []
    for ev in card.get("evidence") or ():
        src, fld = ev.get("source"), ev.get("field")
        if src not in SOURCES or fld not in rf.columns[src]:
            continue  # reported by check 12
        rows = ref.rows if src == "evaluation_run" else [
            r for r in ((ref.spec if src == "task_spec" else ref.ds),) if r is not None]
        agg = ev.get("agg")
        problem = (verbatim_problem(ev.get("value"), rows, fld) if agg is None
                   else agg_problem(agg, ev.get("value"), rows, fld))
        if problem:
            bad.append(f"{src}.{fld}: {problem}")
    return "; ".join(bad) or None


def check_14(card: dict, ref: TaskRef | None, rf: Reference) -> str | None:
    return polite_sentence_problem(card.get("summary", ""))


_CHECKS: dict[int, Callable[..., str | None]] = {
    n: globals()[f"check_{n}"] for n in CHECKS}
_NEED_SPEC = {3, 4, 5, 6, 7, 8, 9, 10, 13}


def check_card(card: dict, rf: Reference) -> CardChecks:
    """Run the 14 checks on one card (JSON shape)."""
    task_id = str(card.get("task_id"))
    ref = rf.task(task_id, str(card.get("model_artifact")))
    results = []
    for n, fn in _CHECKS.items():
        if n in _NEED_SPEC and ref.spec is None:
            results.append(CheckResult(n, False, f"task_id {task_id!r} is not in task_spec"))
            continue
        reason = fn(card, ref, rf)
        results.append(CheckResult(n, reason is None, reason or "ok"))
    return CardChecks(task_id, tuple(results))


def run_checks(cards: list[dict[str, Any]], rf: Reference) -> Report:
    """Check every card and the file as a whole (one card per task of task_spec)."""
    seen = Counter(str(c.get("task_id")) for c in cards)
    findings = [f"task {t} has {n} cards" for t, n in seen.items() if n > 1]
    findings += [f"task {t} of task_spec has no card" for t in rf.task_ids if t not in seen]
    return Report(tuple(check_card(c, rf) for c in cards), tuple(findings))
