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

import json
from html import escape
from typing import Any

from verdict.checks import CHECKS
from verdict.model import CAUSES, NOT_TRAINED, VERDICTS
from verdict.screen.runs import MAX_RUNS, RunLink
from verdict.screen.style import CSS, SCRIPT

VALUE_FIELDS = ("success_rate", "failure_total", "top_failure_reason", "top_failure_count",
                "top_failure_share", "cycle_sec_median", "more_episode_count",
                "recapture_site", "recapture_hand")
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


def _e(value: Any) -> str:
    return escape("" if value is None else str(value))


def _value(card: dict[str, Any], key: str) -> str:
    value = card.get(key)
    if value is not None:
        return _e(json.dumps(value, ensure_ascii=False) if isinstance(value, bool) else value)
    why = (card.get("missing") or {}).get(key)
    return f'<span class="missing">비어 있음{" — " + _e(why) if why else ""}</span>'


def _evidence(card: dict[str, Any]) -> str:
    rows = "".join(
        f"<tr><td>{_e(ev.get('source'))}</td><td>{_e(ev.get('field'))}</td>"
        f"<td>{_e(ev.get('agg'))}</td><td>{_value(ev, 'value')}</td></tr>"
        for ev in card.get("evidence") or ())
    return ('<table class="evidence"><thead><tr><th>source</th><th>field</th><th>agg</th>'
            f"<th>value</th></tr></thead><tbody>{rows}</tbody></table>")


def _runs(runs: list[RunLink]) -> str:
    """The task's runs, each linked to its explain page (``verdict.screen.runs``)."""
    if not runs:
        return '<p class="na runs">이번 회차 evaluation_run 행이 없습니다.</p>'
    rows = []
    for r in runs[:MAX_RUNS]:
        ok = "" if r.success is None else ("성공" if r.success else "실패")
        why = _e(r.failure_reason) + (" <small>(정책 책임 아님)</small>" if r.exempt else "")
        page = (f'<a class="explain" href="{_e(r.href)}">설명 페이지</a>' if r.href
                else '<span class="na">페이지 없음</span>')
        rows.append(f'<tr data-run="{_e(r.run_id)}"><td class="task">{_e(r.run_id)}</td>'
                    f"<td>{ok}</td><td>{why}</td><td>{page}</td></tr>")
    more = (f'<p class="note">외 {len(runs) - MAX_RUNS}개 행은 줄였습니다.</p>'
            if len(runs) > MAX_RUNS else "")
    return ('<table class="runs"><thead><tr><th>episode_id</th><th>success</th>'
            f'<th>failure_reason</th><th>explain</th></tr></thead><tbody>{"".join(rows)}'
            f"</tbody></table>{more}")


def _card_checks(results: list[dict[str, Any]] | None) -> str:
    if results is None:
        return '<p class="na">이 회차의 입력 표가 없어 검사를 다시 돌리지 않았습니다.</p>'
    items = "".join(
        f'<li data-check="{r["number"]}"><span class="{"pass" if r["passed"] else "fail"}">'
        f'{"통과" if r["passed"] else "실패"}</span> {r["number"]}. {_e(CHECKS[r["number"]])}'
        f'{"" if r["passed"] else " — " + _e(r["reason"])}</li>' for r in results)
    return f'<ol class="card-checks checks">{items}</ol>'


def _row(card: dict[str, Any], results: list[dict[str, Any]] | None,
         runs: dict[str, list[RunLink]] | None = None) -> str:
    label = card.get("blocked_cause") or card.get("verdict")
    missing = card.get("missing") or {}
    badge = ""
    if missing:
        inputs = sorted(set(missing.values()))
        badge = f' <span class="missing-badge">빈 값: {_e(", ".join(inputs))}</span>'
    values = "".join(f"<tr><th>{k}</th><td>{_value(card, k)}</td></tr>" for k in VALUE_FIELDS)
    source = card.get("summary_source") or "rules"
    note = (f'<p class="note">요약: {_e(source)}'
            f'{" — " + _e(card.get("summary_note")) if card.get("summary_note") else ""}</p>')
    hedge = card.get("hedge")
    return (
        f'<details class="card" data-task="{_e(card.get("task_id"))}">'
        f'<summary><span class="label">{_e(label)}</span> · '
        f'<b class="task">{_e(card.get("task_id"))}</b> '
        f'<span class="sum">{_e(card.get("summary"))}</span>{badge}</summary>'
        f'<div class="body"><h3>근거</h3>{_evidence(card)}'
        + ("" if runs is None else
           f'<h3>실행 — evaluation_run 행</h3>{_runs(runs.get(card.get("task_id"), []))}') +
        f'<h3>카드 값</h3><table class="values">{values}</table>'
        f'<p class="hedge">단서: {_e(hedge) if hedge else "없음"}</p>{note}'
        f"<h3>검사 14개</h3>{_card_checks(results)}</div></details>")


def _groups(cards: list[dict[str, Any]], checks: dict[str, list] | None,
            runs: dict[str, list[RunLink]] | None = None) -> str:
    out = []
    for verdict in VERDICTS:
        group = [c for c in cards if c.get("verdict") == verdict]
        head = f'<h2>{_e(verdict)} <small>({len(group)})</small></h2>'
        if verdict != NOT_TRAINED:
            rows = "".join(_row(c, None if checks is None else checks.get(c.get("task_id")), runs)
                           for c in group) or '<p class="na">없음</p>'
            out.append(f'<section class="group" data-verdict="{verdict}">{head}{rows}</section>')
            continue
        parts = []
        for cause in (*CAUSES, None):
            sub = [c for c in group if c.get("blocked_cause") == cause]
            if cause is None and not sub:
                continue
            rows = "".join(_row(c, None if checks is None else checks.get(c.get("task_id")), runs)
                           for c in sub) or '<p class="na">없음</p>'
            title = (f"{cause} — {CAUSE_TEXT[cause]}" if cause
                     else "원인 없음 (blocked_cause 가 비어 있음)")
            parts.append(f'<div class="cause" data-cause="{_e(cause)}"><h3>{_e(title)} '
                         f"<small>({len(sub)})</small></h3>{rows}</div>")
        out.append(f'<section class="group" data-verdict="{verdict}">{head}'
                   f'{"".join(parts)}</section>')
    return "".join(out)


def _checks_panel(report: dict[str, Any] | None) -> str:
    items = []
    for n, text in CHECKS.items():
        if report is None:
            status = '<span class="na">미실행</span>'
        else:
            results = [r for c in report["cards"] for r in c["results"] if r["number"] == n]
            bad = sum(not r["passed"] for r in results)
            status = (f'<span class="pass">통과</span> <small>{len(results)}/{len(results)}</small>'
                      if not bad else f'<span class="fail">실패</span> <small>{bad}건</small>')
        items.append(f'<li data-check="{n}">{status} {_e(text)}</li>')
    findings = ""
    if report and report["file_findings"]:
        findings = "".join(f'<p class="fail">{_e(f)}</p>' for f in report["file_findings"])
    return (f'<aside id="checks"><h2>출력 스키마 검증 14개</h2>'
            f'<ol class="checks">{"".join(items)}</ol>{findings}</aside>')


def _notes() -> str:
    auto = "".join(f"<li>{_e(t)}</li>" for t in CHECKS.values())
    manual = "".join(f"<li>{_e(t)}</li>" for t in MANUAL)
    honest = "".join(f"<li>{_e(t)}</li>" for t in HONESTY)
    return ('<div class="notes" id="notes"><h2>검증 노트</h2>'
            f'<section data-part="automatic"><h3>자동 — 코드가 판정합니다</h3><ol>{auto}</ol>'
            f'</section><section data-part="manual"><h3>수동 — 사람이 봅니다</h3><ol>{manual}'
            f'</ol></section><section data-part="honesty"><h3>정직 경계선 — 이 시스템이 모르는 '
            f"것</h3><ul>{honest}</ul></section></div>")


def _grade(grade: dict[str, Any] | None, path: str | None) -> str:
    if grade is None:
        return ('<div id="self-grade">자가채점 — 판정 일치 · 정답 30개 기준: '
                '<span id="self-grade-figure"></span> <small>러너 결과 파일이 없어 비워 '
                "둡니다</small></div>")
    return ('<div id="self-grade">자가채점 — 판정 일치 · 정답 30개 기준: '
            f'<span id="self-grade-figure">{_e(grade["figure"])}</span> <small>출처 '
            f'{_e(path)} · {_e(grade.get("date"))} · engine {_e(grade.get("engine_version"))}'
            "</small></div>")


def render_page(cards: list[dict[str, Any]] | None, report: dict[str, Any] | None = None,
                previous: list[dict[str, Any]] | None = None,
                grade: dict[str, Any] | None = None, grade_path: str | None = None,
                title: str = "", runs: dict[str, list[RunLink]] | None = None) -> str:
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
    """
    checks = ({c["task_id"]: c["results"] for c in report["cards"]} if report else None)
    current = cards is not None
    now = (_groups(cards, checks, runs) if current
           else '<p class="na">이번 회차 평가 기록이 아직 없습니다. 지난 회차를 보세요.</p>')
    last = (_groups(previous, None) if previous is not None
            else '<p class="na">저장된 지난 회차 카드가 없습니다.</p>')
    count = f"카드 {len(cards)}개" if current else "이번 회차 카드 없음"
    return (
        '<!doctype html><html lang="ko"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>다음 수집 판정 {_e(title)}</title><style>{CSS}</style></head><body>"
        f'<header><h1>다음에 무엇을 모을지 — 판정 카드</h1><p class="meta">{_e(title)} · '
        f"{count}</p>{_grade(grade, grade_path)}</header>"
        '<div class="layout"><main><nav>'
        f'<button data-view="current" aria-selected="{str(current).lower()}">이번 회차</button>'
        f'<button data-view="previous" aria-selected="{str(not current).lower()}">지난 회차'
        "</button></nav>"
        f'<section data-round="current"{"" if current else " hidden"}>{now}</section>'
        f'<section data-round="previous"{" hidden" if current else ""}>'
        f'<p class="note">지난 회차 카드를 저장된 그대로 보여 줍니다 (다시 계산하지 않음).</p>'
        f"{last}</section></main>{_checks_panel(report)}</div>{_notes()}"
        f"<script>{SCRIPT}</script></body></html>")
