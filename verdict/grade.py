"""The self-grading runner: the engine against the 30 gold answers.

``grade(gold_dir)`` builds cards from the gold tables, compares each card's
decision (verdict and blocked_cause) with the expected one, groups the
disagreements by type (``expected → got``) and also lists field disagreements
(the expected numbers and recapture values). The result file carries the date
and the engine version; the screen shows the self-grading figure only from
such a file.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from verdict.checks import run_checks
from verdict.engine import build_from_inputs
from verdict.errors import VerdictInputError
from verdict.exact import to_decimal
from verdict.model import ENGINE_VERSION, Card, card_to_dict
from verdict.reference import Reference
from verdict.tables import Inputs, load_inputs

Engine = Callable[[Inputs], list[Card]]


@dataclass
class GradeResult:
    """What one grading run found; :meth:`to_dict` is the result file's content."""

    agreed: int
    total: int
    by_type: dict[str, int]
    disagreements: list[dict[str, Any]]
    field_disagreements: list[dict[str, Any]]
    checks_passed: bool
    engine_version: str = ENGINE_VERSION
    date: str = field(default_factory=lambda: datetime.now(UTC).isoformat(timespec="seconds"))
    gold_dir: str = ""

    @property
    def figure(self) -> str:
        return f"{self.agreed}/{self.total}"

    def to_dict(self) -> dict[str, Any]:
        return {"kind": "verdict-grade", "figure": self.figure, **asdict(self)}


def _decision(verdict: Any, cause: Any) -> str:
    return f"{verdict}/{cause}" if cause else str(verdict)


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, int | float) and isinstance(b, int | float):
        return to_decimal(a) == to_decimal(b)
    return a == b


def load_gold(gold_dir: str | Path) -> tuple[Inputs, list[dict[str, Any]]]:
    """The gold tables and answers under ``gold_dir`` (see ``manifest.json``)."""
    gold_dir = Path(gold_dir)
    manifest_path = gold_dir / "manifest.json"
    if not manifest_path.is_file():
        raise VerdictInputError(f"gold set {gold_dir}: manifest.json not found")
    manifest = json.loads(manifest_path.read_text(encoding="utf-8"))
    files = manifest["files"]
    inputs = load_inputs(gold_dir / files["evaluation_run"], gold_dir / files["task_spec"],
                         gold_dir / files["dataset_index"], manifest["artifact"])
    answers = [json.loads(line) for line in
               (gold_dir / files["answers"]).read_text(encoding="utf-8").splitlines() if line]
    return inputs, answers


def grade(gold_dir: str | Path, engine: Engine = build_from_inputs) -> GradeResult:
    """Run ``engine`` on the gold tables and compare with the answers."""
    inputs, answers = load_gold(gold_dir)
    cards = {c.task_id: card_to_dict(c) for c in engine(inputs)}
    disagreements, fields = [], []
    for ans in answers:
        card = cards.get(ans["task_id"])
        want = _decision(ans["expected_verdict"], ans["expected_blocked_cause"])
        got = _decision(card["verdict"], card["blocked_cause"]) if card else "(no card)"
        if got != want:
            disagreements.append({"task_id": ans["task_id"], "origin": ans["origin"],
                                  "type": f"{want} → {got}", "reason": ans["reason"]})
        for key, value in (ans.get("expected_fields") or {}).items():
            if card is not None and not _same(card.get(key), value):
                fields.append({"task_id": ans["task_id"], "field": key, "expected": value,
                               "got": card.get(key)})
    report = run_checks(list(cards.values()), Reference(inputs))
    return GradeResult(
        agreed=len(answers) - len(disagreements), total=len(answers),
        by_type=dict(Counter(d["type"] for d in disagreements).most_common()),
        disagreements=disagreements, field_disagreements=fields,
        checks_passed=report.passed, gold_dir=str(gold_dir))


def write_result(result: GradeResult, path: str | Path) -> Path:
    """Write the result file (JSON with figure, date, engine version)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(result.to_dict(), ensure_ascii=False, indent=2) + "\n",
                    encoding="utf-8")
    return path


def read_result(path: str | Path | None) -> dict[str, Any] | None:
    """A grade result file for the screen, or None when there is none (the figure stays blank)."""
    if path is None or not Path(path).is_file():
        return None
    data = json.loads(Path(path).read_text(encoding="utf-8"))
    if data.get("kind") != "verdict-grade" or "figure" not in data:
        raise VerdictInputError(f"{path}: not a verdict grade result (kind/figure missing)")
    return data


def format_result(result: GradeResult) -> str:
    """Plain-text report: the agreement figure, then disagreements grouped by type."""
    lines = [f"verdict agreement: {result.figure} (engine {result.engine_version}, "
             f"{result.date})"]
    for kind, count in result.by_type.items():
        lines.append(f"  {kind}: {count}")
        lines += [f"    - {d['task_id']} [{d['origin']}] {d['reason']}"
                  for d in result.disagreements if d["type"] == kind]
    if result.field_disagreements:
        by_field = Counter(f["field"] for f in result.field_disagreements)
        lines.append("field disagreements: " + ", ".join(f"{k} {v}" for k, v in by_field.items()))
        lines += [f"  - {f['task_id']}.{f['field']}: expected {f['expected']!r}, "
                  f"got {f['got']!r}" for f in result.field_disagreements]
    lines.append("14 checks on the gold cards: " + ("all pass" if result.checks_passed
                                                     else "FAILURES"))
    return "\n".join(lines)
