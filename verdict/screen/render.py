"""The verdict screen as one self-contained HTML page (inline CSS and script).

Cards are grouped by verdict in the spec's order; inside ``학습에 없는 조건`` the
two causes are split visibly. One row is reason label · task_id + the one-line
summary; expanding it shows the evidence table (source / field / agg / value),
the card's values with empty ones explained in place, and its 14 checks. The
14 checks, the three-part validation notes and the self-grading figure (only
from a grade result file; blank otherwise) are always on the page. A "last
round" view shows the previous round's saved cards exactly as saved.
"""

from __future__ import annotations

from html import escape
from typing import Any

from verdict.checks import CHECKS
from verdict.model import CAUSES, NOT_TRAINED, VERDICTS
from verdict.screen.card import card_row, check_state, check_text
from verdict.screen.gloss import CAUSE_EN, CAUSE_TEXT_EN, HONESTY_EN, MANUAL_EN, VERDICT_EN, both
from verdict.screen.rates import CardRate
from verdict.screen.runs import RunLink
from verdict.screen.style import CSS, SCRIPT

CAUSE_TEXT = {"능력 불일치": "수집 데이터의 능력이 태스크 요구와 다르거나 수집 줄이 없습니다",
              "평가 미실시": "능력은 맞지만 이번 회차에 평가를 한 줄도 돌리지 않았습니다"}
MANUAL = ("한 사유로 쏠렸다는 판정이 실제로 같은 실패인지 재생 화면으로 표본 20건을 확인합니다.",
          "쏠림 문턱과 최소 실패 회차 3회가 현장 감각과 맞는지 연구자와 맞춰 task_spec 값을 "
          "조정합니다.")
HONESTY = (
    "규칙은 세 표(evaluation_run·task_spec·dataset_index)만 읽습니다. 영상이나 재생 화면은 보지 "
    "않으므로 같은 사유로 적힌 실패가 정말 같은 실패인지는 알지 못합니다.",
    "사유 칸이 빈 실패와 수집 회차가 빈 태스크는 어느 유형인지, 얼마나 모자란지 알 수 없어 그 "
    "자리에 빈 값으로 남깁니다.",
    "자가채점 정답 30개는 명세에서 손으로 뽑은 것이며 연구자 회의에서 고른 정답이 아닙니다. 숫자는 "
    "러너 결과 파일이 있을 때만 보입니다.",
    "모델이 쓴 요약은 검사를 통과할 때만 쓰고, 판정 자체는 언제나 규칙이 정합니다.",
)
NO_CURRENT = ("이번 회차 평가 기록이 아직 없습니다. 지난 회차를 보세요.",
              "no evaluation records this round yet: see the last round")
NO_PREVIOUS = ("저장된 지난 회차 카드가 없습니다.", "no saved last-round cards")
AS_SAVED = ("지난 회차 카드를 저장된 그대로 보여 줍니다 (다시 계산하지 않음).",
            "the last round's cards exactly as saved (not recomputed)")
LAST_NOTE = ("지난 회차 카드는 저장된 그대로이며 검사는 다시 돌리지 않았습니다 "
             "(the last round's cards as saved: checks not run again)")


def _e(value: Any) -> str:
    return escape("" if value is None else str(value))


def _groups(cards: list[dict[str, Any]], checks: dict[str, list] | None, note: str,
            runs: dict[str, list[RunLink]] | None = None,
            rates: dict[str, CardRate] | None = None) -> str:
    def rows(group: list[dict[str, Any]]) -> str:
        return "".join(card_row(c, None if checks is None else checks.get(c.get("task_id")),
                                note, runs, rates) for c in group) or \
            f'<p class="na">{both("없음")}</p>'

    out = []
    for verdict in VERDICTS:
        group = [c for c in cards if c.get("verdict") == verdict]
        head = (f'<h2>{both(verdict, VERDICT_EN[verdict])} <small>({len(group)})</small>'
                "</h2>")
        if verdict != NOT_TRAINED:
            out.append(f'<section class="group" data-verdict="{verdict}">{head}{rows(group)}'
                       "</section>")
            continue
        parts = []
        for cause in (*CAUSES, None):
            sub = [c for c in group if c.get("blocked_cause") == cause]
            if cause is None and not sub:
                continue
            title = (both(f"{cause} — {CAUSE_TEXT[cause]}",
                          f"{CAUSE_EN[cause]} — {CAUSE_TEXT_EN[cause]}") if cause
                     else both("원인 없음 (blocked_cause 가 비어 있음)",
                               "no cause (blocked_cause is empty)"))
            parts.append(f'<div class="cause" data-cause="{_e(cause)}"><h3>{title} '
                         f"<small>({len(sub)})</small></h3>{rows(sub)}</div>")
        out.append(f'<section class="group" data-verdict="{verdict}">{head}'
                   f'{"".join(parts)}</section>')
    return "".join(out)


def _checks_panel(report: dict[str, Any] | None, note: str) -> str:
    """The always-visible 14 checks, each with its state over this round's cards."""
    items = []
    for n in CHECKS:
        if report is None:
            status = check_state("not-run")
        else:
            results = [r for c in report["cards"] for r in c["results"] if r["number"] == n]
            bad = sum(not r["passed"] for r in results)
            status = (check_state("pass", f"{len(results)}/{len(results)}") if not bad
                      else check_state("fail", f"{bad}건"))
        items.append(f'<li data-check="{n}">{status} {check_text(n)}</li>')
    findings = ""
    if report and report["file_findings"]:
        findings = "".join(f'<p class="fail">{_e(f)}</p>' for f in report["file_findings"])
    why = f'<p class="na checks-note">{_e(note)}</p>' if report is None and note else ""
    return (f'<aside id="checks"><h2>{both("출력 스키마 검증 14개")}</h2>{why}'
            f'<ol class="checks">{"".join(items)}</ol>{findings}</aside>')


def _notes() -> str:
    auto = "".join(f"<li>{check_text(n)}</li>" for n in CHECKS)
    manual = "".join(f"<li>{both(t, en, block=True)}</li>" for t, en in zip(MANUAL, MANUAL_EN,
                                                                           strict=True))
    honest = "".join(f"<li>{both(t, en, block=True)}</li>"
                     for t, en in zip(HONESTY, HONESTY_EN, strict=True))
    return (f'<div class="notes" id="notes"><h2>{both("검증 노트")}</h2>'
            f'<section data-part="automatic"><h3>{both("자동 — 코드가 판정합니다")}</h3>'
            f'<ol>{auto}</ol></section><section data-part="manual"><h3>'
            f'{both("수동 — 사람이 봅니다")}</h3><ol>{manual}</ol></section>'
            f'<section data-part="honesty"><h3>{both("정직 경계선 — 이 시스템이 모르는 것")}'
            f"</h3><ul>{honest}</ul></section></div>")


def _grade(grade: dict[str, Any] | None, path: str | None) -> str:
    head = both("자가채점 — 판정 일치 · 정답 30개 기준")
    if grade is None:
        return (f'<div id="self-grade">{head}: <span id="self-grade-figure"></span> '
                f'<small>{both("러너 결과 파일이 없어 비워 둡니다", "blank: no grade result file")}'
                "</small></div>")
    return (f'<div id="self-grade">{head}: <span id="self-grade-figure">{_e(grade["figure"])}'
            f'</span> <small>{both("출처", "source")} {_e(path)} · {_e(grade.get("date"))} · '
            f'engine {_e(grade.get("engine_version"))}</small></div>')


def render_page(cards: list[dict[str, Any]] | None, report: dict[str, Any] | None = None,
                previous: list[dict[str, Any]] | None = None,
                grade: dict[str, Any] | None = None, grade_path: str | None = None,
                title: str = "", runs: dict[str, list[RunLink]] | None = None,
                rates: dict[str, CardRate] | None = None, checks_note: str = "") -> str:
    """The whole page.

    Args:
        cards: this round's cards (JSON shape), or None before new records are loaded.
        report: :meth:`verdict.checks.Report.to_dict` for ``cards``, or None.
        previous: the last round's saved cards, shown as they were.
        grade: a grade result (:func:`verdict.grade.read_result`); None leaves it blank.
        grade_path: where ``grade`` was read from (named next to the figure).
        title: e.g. the round's model_artifact.
        runs: task_id -> its runs linked to their explain pages
            (:func:`verdict.screen.runs.task_runs`); None shows no runs.
        rates: task_id -> the rectified rate of its cell (:func:`verdict.screen.rates.
            card_rates`), shown beside ``success_rate``; None shows none.
        checks_note: why ``report`` is None (every check then reads 미실행, with this).
    """
    checks = ({c["task_id"]: c["results"] for c in report["cards"]} if report else None)
    note = checks_note or "검사 보고가 없습니다 (no check report)"
    current = cards is not None
    if current:
        now = _groups(cards, checks, note, runs, rates)
        count = both(f"카드 {len(cards)}개", f"{len(cards)} cards")
    else:
        now = _na(NO_CURRENT)
        count = both("이번 회차 카드 없음", "no cards this round")
    last = (_groups(previous, None, LAST_NOTE) if previous is not None else _na(NO_PREVIOUS))
    if rates:
        flips = sum(1 for r in rates.values() if r.flip)
        count += " · " + both(f"보정 성공률 {len(rates)}개, 판정이 바뀔 수 있는 카드 {flips}개",
                              f"{len(rates)} rectified rates, {flips} card(s) whose verdict "
                              "may change")
    toggle = ('<button id="gloss-toggle" type="button" aria-pressed="false" '
              'title="show an English gloss under the Korean words">English</button>')
    return (
        '<!doctype html><html lang="ko"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>다음 수집 판정 {_e(title)}</title><style>{CSS}</style></head><body>"
        f'<header><div class="top"><h1>{both("다음에 무엇을 모을지 — 판정 카드", block=True)}'
        f'</h1>{toggle}</div><p class="meta">{_e(title)} · {count}</p>'
        f"{_grade(grade, grade_path)}</header>"
        '<div class="layout"><main><nav>'
        f'<button data-view="current" aria-selected="{str(current).lower()}">'
        f'{both("이번 회차")}</button>'
        f'<button data-view="previous" aria-selected="{str(not current).lower()}">'
        f'{both("지난 회차")}</button></nav>'
        f'<section data-round="current"{"" if current else " hidden"}>{now}</section>'
        f'<section data-round="previous"{" hidden" if current else ""}>'
        f'<p class="note">{both(*AS_SAVED)}</p>'
        f"{last}</section></main>{_checks_panel(report, note)}</div>{_notes()}"
        f"<script>{SCRIPT}</script></body></html>")


def _na(text: tuple[str, str]) -> str:
    return f'<p class="na">{both(*text)}</p>'
