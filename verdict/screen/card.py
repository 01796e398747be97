"""One card on the verdict screen: its row, and what expanding it shows.

The row is reason label · task_id + the one-line summary (+ a badge naming empty inputs,
the rectified rate and a mark when it would change the verdict); expanding it shows the
evidence table (source / field / agg / value), the task's runs when given, the card's
values with empty ones explained in place, the hedge and its 14 checks. A check's state is
drawn by :func:`check_state` here and in the page's panel alike: 통과 (pass), 실패 (fail)
or 미실행 (not run), the same word and ``data-state`` everywhere.
"""

from __future__ import annotations

import json
from html import escape
from typing import Any

from verdict.checks import CHECKS
from verdict.exact import half_up
from verdict.screen.gloss import (
    CAUSE_EN,
    CHECKS_EN,
    VERDICT_EN,
    both,
    card_gloss,
    phrase_gloss,
)
from verdict.screen.rates import CardRate
from verdict.screen.runs import MAX_RUNS, RunLink

VALUE_FIELDS = ("success_rate", "failure_total", "top_failure_reason", "top_failure_count",
                "top_failure_share", "cycle_sec_median", "more_episode_count",
                "recapture_site", "recapture_hand")
STATES = {"pass": ("통과", "pass"), "fail": ("실패", "fail"), "not-run": ("미실행", "na")}
FLIP_KO = {"whole": "보정 구간 전체에서 성공률 판정이 바뀝니다",
           "part": "보정 구간 안에서 성공률 판정이 바뀔 수 있습니다"}


def _e(value: Any) -> str:
    return escape("" if value is None else str(value))


def check_state(state: str, extra: str = "") -> str:
    """One check's state: ``pass``, ``fail`` or ``not-run`` (``extra``: e.g. ``30/30``)."""
    word, cls = STATES[state]
    small = f" <small>{_e(extra)}</small>" if extra else ""
    return f'<span class="{cls}" data-state="{state}">{both(word)}</span>{small}'


def check_text(n: int) -> str:
    return both(CHECKS[n], CHECKS_EN[n])


def _value(card: dict[str, Any], key: str) -> str:
    value = card.get(key)
    if value is not None:
        return _e(json.dumps(value, ensure_ascii=False) if isinstance(value, bool) else value)
    why = (card.get("missing") or {}).get(key)
    note = f" — {why}" if why else ""
    return both("비어 있음" + note, "empty" + (f" — {phrase_gloss(why)}" if why else ""),
                cls="missing")


def _evidence(card: dict[str, Any]) -> str:
    rows = "".join(
        f"<tr><td>{_e(ev.get('source'))}</td><td>{_e(ev.get('field'))}</td>"
        f"<td>{_e(ev.get('agg'))}</td><td>{_value(ev, 'value')}</td></tr>"
        for ev in card.get("evidence") or ())
    return ('<div class="scroll"><table class="evidence"><thead><tr><th>source</th>'
            f"<th>field</th><th>agg</th><th>value</th></tr></thead><tbody>{rows}</tbody>"
            "</table></div>")


def _runs(runs: list[RunLink]) -> str:
    """The task's runs, each linked to its explain page (``verdict.screen.runs``)."""
    if not runs:
        return '<p class="na runs">이번 회차 evaluation_run 행이 없습니다.</p>'
    rows = []
    for r in runs[:MAX_RUNS]:
        ok = "" if r.success is None else both("성공" if r.success else "실패")
        why = _e(r.failure_reason) + (f" <small>({both('정책 책임 아님')})</small>"
                                      if r.exempt else "")
        page = (f'<a class="explain" href="{_e(r.href)}">{both("설명 페이지")}</a>' if r.href
                else f'<span class="na">{both("페이지 없음")}</span>')
        rows.append(f'<tr data-run="{_e(r.run_id)}"><td class="task">{_e(r.run_id)}</td>'
                    f"<td>{ok}</td><td>{why}</td><td>{page}</td></tr>")
    more = (f'<p class="note">외 {len(runs) - MAX_RUNS}개 행은 줄였습니다.</p>'
            if len(runs) > MAX_RUNS else "")
    return ('<div class="scroll"><table class="runs"><thead><tr><th>episode_id</th>'
            f'<th>success</th><th>failure_reason</th><th>explain</th></tr></thead><tbody>'
            f'{"".join(rows)}</tbody></table></div>{more}')


def _card_checks(results: list[dict[str, Any]] | None, note: str) -> str:
    """The card's 14 checks, each with its state; not run (all 14, with why) without a
    report."""
    by_number = {r["number"]: r for r in results or ()}
    items = []
    for n in CHECKS:
        r = by_number.get(n)
        state = "not-run" if r is None else ("pass" if r["passed"] else "fail")
        why = "" if r is None or r["passed"] else f" — {_e(r['reason'])}"
        items.append(f'<li data-check="{n}" class="card-check">{check_state(state)} {n}. '
                     f"{check_text(n)}{why}</li>")
    head = f'<p class="na checks-note">{_e(note)}</p>' if results is None and note else ""
    return f'{head}<ol class="card-checks checks">{"".join(items)}</ol>'


def _interval(rate: CardRate) -> str:
    def two(x: float) -> str:
        return f"{half_up(x):.2f}"

    if rate.estimate is None:
        return "—"
    return two(rate.estimate) + (f" [{two(rate.low)}, {two(rate.high)}]"
                                 if rate.low is not None else "")


def rate_chip(rate: CardRate | None) -> str:
    """The rectified rate in the card's row, and the mark when it would change the verdict."""
    if rate is None:
        return ""
    flip = (f' <span class="flip" data-flip="{rate.flip}">⚠ {both(FLIP_KO[rate.flip])}</span>'
            if rate.flip else "")
    return (f' <span class="rect" data-estimate="{_e(rate.estimate)}">'
            f'{both("보정 성공률")} {_interval(rate)}</span>{flip}')


def _rate_line(rate: CardRate) -> str:
    """Beside the card's ``success_rate``: the rectified reading, its method and counts."""
    bits = [f"{rate.method}", f"{rate.n_labels} labels of {rate.n_runs} runs"]
    if rate.target is not None:
        bits.append(f"target {rate.target:g}")
    if rate.note:
        bits.append(rate.note)
    return (f'<div class="rect-line">{both("보정 성공률")} <b>{_interval(rate)}</b> '
            f'<small>{_e(" · ".join(bits))}</small></div>')


def card_row(card: dict[str, Any], results: list[dict[str, Any]] | None, note: str,
             runs: dict[str, list[RunLink]] | None = None,
             rates: dict[str, CardRate] | None = None) -> str:
    """The card's ``<details>`` row: summary line, and the body shown when expanded."""
    cause = card.get("blocked_cause")
    label = both(cause, CAUSE_EN.get(cause)) if cause else both(
        str(card.get("verdict")), VERDICT_EN.get(card.get("verdict")))
    missing = card.get("missing") or {}
    badge = ""
    if missing:
        inputs = ", ".join(sorted(set(missing.values())))
        gloss = both("빈 값: " + inputs, "empty: " + phrase_gloss(inputs))
        badge = f' <span class="missing-badge">{gloss}</span>'
    rate = (rates or {}).get(card.get("task_id"))
    values = "".join(
        f"<tr><th>{k}</th><td>{_value(card, k)}"
        + (_rate_line(rate) if k == "success_rate" and rate is not None else "") + "</td></tr>"
        for k in VALUE_FIELDS)
    source = card.get("summary_source") or "rules"
    snote = (f'<p class="note">{both("요약")}: {_e(source)}'
             f'{" — " + _e(card.get("summary_note")) if card.get("summary_note") else ""}</p>')
    hedge = card.get("hedge")
    flip = f' data-flip="{rate.flip}"' if rate is not None and rate.flip else ""
    return (
        f'<details class="card" data-task="{_e(card.get("task_id"))}"{flip}>'
        f'<summary><span class="label">{label}</span> · '
        f'<b class="task">{_e(card.get("task_id"))}</b> '
        f'<span class="sum">{_e(card.get("summary"))}</span>{badge}{rate_chip(rate)}'
        f'<span class="en sum-en" lang="en">{_e(card_gloss(card))}</span></summary>'
        f'<div class="body"><h3>{both("근거")}</h3>{_evidence(card)}'
        + ("" if runs is None else
           f'<h3>{both("실행 — evaluation_run 행")}</h3>'
           f'{_runs(runs.get(card.get("task_id"), []))}') +
        f'<h3>{both("카드 값")}</h3><div class="scroll"><table class="values">{values}</table>'
        f'</div><p class="hedge">{both("단서")}: {_e(hedge) if hedge else both("없음")}</p>'
        f'{snote}<h3>{both("검사 14개")}</h3>{_card_checks(results, note)}</div></details>')
