"""English glosses beside the screen's Korean words (the Korean stays exactly as the spec has it).

The verdict values, causes, check texts and the screen's own words are the spec's Korean,
verbatim (spec/verdict.md: the enum strings are the output contract). Each is drawn with
:func:`both`: the Korean word with its English gloss in its ``title`` (always) and in a
second element shown when the page's gloss toggle is on (``html.gloss``; the toggle is
remembered in the browser, ``style.SCRIPT``). A card's summary is the rules' (or a model's)
Korean sentence; its gloss is written from the card's own fields (:func:`card_gloss`), not
translated from the sentence, so it states nothing the card does not hold.
"""

from __future__ import annotations

from html import escape
from typing import Any

VERDICT_EN = {"배포 후보": "deployment candidate", "성공률 미달": "success rate below target",
              "실패 유형 쏠림": "failures skewed to one reason",
              "작업 주기 초과": "cycle time over the limit",
              "학습에 없는 조건": "condition absent from training data"}
CAUSE_EN = {"능력 불일치": "skill mismatch", "평가 미실시": "not evaluated this round"}
CAUSE_TEXT_EN = {
    "능력 불일치": "the collected data's skill differs from the task's, or there is no "
                   "dataset row",
    "평가 미실시": "the skill matches, but not one evaluation row was run this round"}
CHECKS_EN = {
    1: "verdict is one of the five values",
    2: "task_id, model_artifact, verdict, evidence and summary are all present",
    3: "success_rate recomputed; 'rate below target' only when the rounded value < target",
    4: "top_failure_reason (empty reasons out, ties by name) and top_failure_share (empty "
       "reasons in the denominator) recomputed",
    5: "'failures skewed' only with 3 or more failures and a share > the limit",
    6: "cycle_sec_median recomputed; 'cycle over' only when the median > the maximum",
    7: "more_episode_count recomputed (floored at 0; empty without a dataset row or count)",
    8: "no evaluation rows: all six metric fields are empty",
    9: "blocked_cause only with 'condition absent', and the cause is the rules'",
    10: "recapture_site / recapture_hand empty for a candidate or with no dataset row, "
        "else copied",
    11: "success_rate and top_failure_share in 0–1, cycle_sec_median > 0",
    12: "every evidence field is a real column of its table; the summary cites none that "
        "is not",
    13: "evidence without agg equals the cited row's value; values counted over rows carry "
        "an agg",
    14: "summary is exactly one polite (존댓말) sentence",
}
MANUAL_EN = ("Replay 20 sampled episodes to confirm a skew verdict is really one failure.",
             "Tune the skew threshold and the 3-failure minimum with researchers through "
             "task_spec values.")
HONESTY_EN = (
    "The rules read three tables only (evaluation_run, task_spec, dataset_index). They see no "
    "video or replay, so they cannot know whether failures written with one reason are "
    "really the same failure.",
    "A failure with an empty reason and a task with an empty episode count cannot be "
    "placed or counted, so they stay in place as empty values.",
    "The 30 self-grading answers were derived by hand from the spec, not chosen in a "
    "researchers' meeting. The figure shows only when the runner's result file exists.",
    "A model-written summary is used only when it passes the checks; the verdict itself is "
    "always the rules'.",
)
#: The screen's own words (headings, buttons, states).
UI_EN = {
    "다음에 무엇을 모을지 — 판정 카드": "What to collect next — verdict cards",
    "이번 회차": "this round", "지난 회차": "last round", "통과": "pass", "실패": "fail",
    "미실행": "not run", "근거": "evidence", "카드 값": "card values", "검사 14개": "the 14 checks",
    "출력 스키마 검증 14개": "the 14 output-schema checks", "검증 노트": "validation notes",
    "자동 — 코드가 판정합니다": "automatic — code decides",
    "수동 — 사람이 봅니다": "manual — people check",
    "정직 경계선 — 이 시스템이 모르는 것": "honesty boundary — what this system does not know",
    "자가채점 — 판정 일치 · 정답 30개 기준": "self-grading — verdict agreement on 30 gold answers",
    "실행 — evaluation_run 행": "runs — evaluation_run rows", "단서": "hedge",
    "없음": "none", "비어 있음": "empty", "성공": "success", "설명 페이지": "explain page",
    "페이지 없음": "no page", "정책 책임 아님": "not the policy's", "요약": "summary",
    "보정 성공률": "rectified success rate",
    "보정 구간 전체에서 성공률 판정이 바뀝니다": "the success-rate rule decides otherwise "
    "over the whole rectified interval",
    "보정 구간 안에서 성공률 판정이 바뀔 수 있습니다": "the success-rate rule decides "
    "otherwise inside the rectified interval",
}
#: Fragments of the engine's ``missing`` notes and the screen's "not run" reasons.
PHRASES_EN = (("비어 있음", "empty"), ("행 없음", "no row"),
              ("정책 책임이 아닌 실패", "failures not the policy's,"), ("행 제외", "rows left out"),
              ("빈 값", "empty values"))


def _e(value: Any) -> str:
    return escape("" if value is None else str(value))


def both(ko: str, en: str | None = None, *, block: bool = False, cls: str = "") -> str:
    """``ko`` (escaped) with its gloss ``en`` (default: :data:`UI_EN`) as its title and as
    a second element shown when glosses are on; ``block`` puts the gloss on its own line."""
    en = UI_EN.get(ko, "") if en is None else en
    klass = f"ko {cls}".strip()
    if not en:
        return f'<span class="{klass}">{_e(ko)}</span>'
    tag = "div" if block else "span"
    return (f'<span class="{klass}" title="{_e(en)}">{_e(ko)}</span>'
            f'<{tag} class="en" lang="en">{_e(en)}</{tag}>')


def phrase_gloss(text: str) -> str:
    """An English reading of a short Korean note built from :data:`PHRASES_EN`."""
    out = text
    for ko, en in PHRASES_EN:
        out = out.replace(ko, en)
    return out


def _pct(x: Any) -> str:
    return f"{round(float(x) * 100, 2):g} %"


def _evidence(card: dict[str, Any]) -> dict[tuple[str, str], Any]:
    return {(e.get("source"), e.get("field")): e.get("value")
            for e in card.get("evidence") or () if isinstance(e, dict)}


def card_gloss(card: dict[str, Any]) -> str:
    """One English line of the card's verdict and numbers, from its own fields."""
    ev = _evidence(card)
    verdict = card.get("verdict")
    head = VERDICT_EN.get(verdict, str(verdict))
    if card.get("blocked_cause"):
        head += f" ({CAUSE_EN.get(card['blocked_cause'], card['blocked_cause'])})"
    facts = []
    runs, wins = ev.get(("evaluation_run", "episode_id")), ev.get(("evaluation_run", "success"))
    if card.get("success_rate") is not None:
        rate = f"success_rate {card['success_rate']}"
        if runs is not None and wins is not None:
            rate += f" ({wins} of {runs} runs)"
        target = ev.get(("task_spec", "target_success_rate"))
        facts.append(rate + (f", target {target}" if target is not None else ""))
    if card.get("top_failure_reason") is not None:
        share = _pct(card["top_failure_share"])
        facts.append(f"top failure {card['top_failure_reason']}: "
                     f"{card.get('top_failure_count')} of {card.get('failure_total')} "
                     f"failures ({share})")
    if card.get("cycle_sec_median") is not None:
        limit = ev.get(("task_spec", "max_cycle_sec"))
        facts.append(f"cycle median {card['cycle_sec_median']} s"
                     + (f", max {limit} s" if limit is not None else ""))
    skill = ev.get(("task_spec", "required_skill"))
    if skill is not None:
        have = ev.get(("dataset_index", "required_skill"))
        facts.append(f"needs skill {skill}" + (f", data has {have}" if have is not None else
                                               ", no dataset row"))
    if card.get("more_episode_count"):
        facts.append(f"{card['more_episode_count']} more episodes to collect")
    where = [x for x in (card.get("recapture_site"), card.get("recapture_hand")) if x]
    if where:
        facts.append("recapture at " + " with ".join(map(str, where)))
    return head + (": " + "; ".join(facts) if facts else "") + "."
