"""Summaries: the rules' polite Korean sentence, and the optional model sentence.

The default sentence is written from the evidence numbers, one sentence in
존댓말 ending in ``…니다.``. A model may write the summary instead through a
text backend — any callable ``prompt -> text`` (a ``models/`` backend's
generate method, or a scripted fake in tests). Its sentence is accepted only
if it is one polite sentence, cites only real fields and numbers of the card,
and names no other verdict; otherwise the rules' sentence stays and the card
records the fallback and why.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable
from fractions import Fraction
from typing import Any

from verdict.exact import number, percent, to_decimal
from verdict.model import (
    CANDIDATE,
    CAUSES,
    CYCLE_OVER,
    MISMATCH,
    RATE_BELOW,
    SKEWED,
    SOURCES,
    VERDICTS,
)
from verdict.view import TaskView

#: A text backend: takes a prompt, returns the model's text.
TextBackend = Callable[[str], str]

_SENTENCE_END = re.compile(r"[.!?。](?=\s|$)")
_POLITE_END = re.compile(r"(니다|세요|에요|예요|해요|어요|아요|지요|죠|요)\.$")
_IDENT = re.compile(r"[A-Za-z][A-Za-z0-9]*(?:_[A-Za-z0-9]+)+")
_NUMBER = re.compile(r"(?<![\w.\-])\d+(?:\.\d+)?(?![A-Za-z_])")


def polite_sentence_problem(text: str) -> str | None:
    """Why ``text`` is not exactly one polite (존댓말) sentence, or None when it is."""
    text = (text or "").strip()
    if not text:
        return "summary is empty"
    ends = _SENTENCE_END.findall(text)
    if len(ends) != 1 or text[-1] not in ".!?。":
        return (f"expected exactly one sentence ending in a period, found {len(ends)} "
                "sentence end(s)")
    if not _POLITE_END.search(text):
        return f"not polite (존댓말): ends with {text[-6:]!r}, expected …니다. or …요."
    return None


def identifiers(text: str) -> list[str]:
    """Field-like tokens (``snake_case``) a sentence cites."""
    return _IDENT.findall(text or "")


def numbers(text: str) -> list[Fraction]:
    """Numbers a sentence states (``12.45초`` -> 12.45; ``rc7`` and ``5finger`` are names)."""
    return [to_decimal(Fraction(m)) for m in _NUMBER.findall(text or "")]


def card_numbers(card: dict[str, Any]) -> set[Fraction]:
    """Numbers a summary may state: card fields, evidence values, and rates as percents."""
    raw: list[Any] = [card.get(k) for k in (
        "success_rate", "failure_total", "top_failure_count", "top_failure_share",
        "cycle_sec_median", "more_episode_count")]
    raw += [e.get("value") for e in card.get("evidence") or ()]
    out: set[Fraction] = set()
    for value in raw:
        if isinstance(value, bool) or not isinstance(value, int | float):
            continue
        exact = to_decimal(value)
        out.update((exact, exact * 100))
    return out


def card_words(card: dict[str, Any]) -> set[str]:
    """Names a summary may cite besides columns: table names and the card's string values."""
    words = set(SOURCES)
    for key in ("task_id", "model_artifact", "top_failure_reason", "recapture_site",
                "recapture_hand"):
        if isinstance(card.get(key), str):
            words.add(card[key])
    words.update(e["value"] for e in card.get("evidence") or () if isinstance(e.get("value"), str))
    return words


def model_summary_problem(text: str, card: dict[str, Any], columns: Iterable[str]) -> str | None:
    """Why a model-written summary must be rejected for ``card``, or None to accept it."""
    problem = polite_sentence_problem(text)
    if problem:
        return problem
    allowed = set(columns) | card_words(card)
    invented = [w for w in identifiers(text) if w not in allowed]
    if invented:
        return "cites fields that exist in no table: " + ", ".join(sorted(set(invented)))
    known = card_numbers(card)
    stray = [n for n in numbers(text) if n not in known]
    if stray:
        return "states numbers not on the card: " + ", ".join(number(n) for n in stray)
    own = {card.get("verdict"), card.get("blocked_cause")}
    other = [label for label in (*VERDICTS, *CAUSES) if label in text and label not in own]
    if other:
        return "names another verdict: " + ", ".join(other)
    return None


def model_prompt(card: dict[str, Any], default: str) -> str:
    """The prompt a text backend gets: the card as JSON and the rules' sentence."""
    facts = {k: card[k] for k in card if k not in ("summary", "summary_source", "summary_note")}
    return ("다음 판정 카드를 근거 수치와 함께 존댓말 한 문장으로 요약해 주세요. "
            "판정은 바꾸지 말고 카드에 없는 필드나 숫자는 쓰지 마세요.\n"
            f"카드: {json.dumps(facts, ensure_ascii=False)}\n기본 문장: {default}")


def default_summary(v: TaskView) -> str:
    """The rules' one polite sentence for a task, carrying its evidence numbers."""
    rate = v.success_rate is not None and v.target is not None
    site = f"{v.capture_site} 현장에서 " if v.has_row and v.capture_site else ""
    hand = f"{v.robot_hand_type} 손 형태로 " if v.has_row and v.robot_hand_type else ""
    more = (f" 수집 회차도 {v.min_episodes}회 기준에서 {v.more}회 모자라"
            if v.more else "")
    if v.verdict == CANDIDATE:
        first = (f"평가 {v.n_rows}회 가운데 {v.n_true}회 성공해 성공률 "
                 f"{percent(v.success_rate)}%로 기준 {percent(v.target)}%를 채웠고" if rate
                 else f"평가 {v.n_rows}회에서 성공률 기준은 확인하지 못했지만")
        second = (f" 주기 중앙값 {number(v.cycle_median)}초도 기준 {number(v.max_cycle)}초 안이라"
                  if v.cycle_median is not None and v.max_cycle is not None
                  else " 작업 주기 기준은 확인하지 못한 채")
        return f"{first}{second} 배포 후보로 올릴 만합니다."
    if v.verdict == RATE_BELOW:
        head = (f"평가 {v.n_rows}회 가운데 {v.n_true}회만 성공해 성공률 "
                f"{percent(v.success_rate)}%가 기준 {percent(v.target)}%에 못 미치")
        head += f"고{more}" if more else "므로"
        return f"{head} {site}{hand}성공 장면을 더 모아야 합니다."
    if v.verdict == SKEWED:
        return (f"실패 {v.failure_total}회 가운데 {v.top_count}회가 {v.top_reason} 사유로 "
                f"{percent(v.top_share)}%를 차지해 문턱 {percent(v.limit)}%를 넘었으므로 "
                f"{site}이 실패 장면을 골라 더 찍어야 합니다.")
    if v.verdict == CYCLE_OVER:
        first = (f"성공률 {percent(v.success_rate)}%는 기준을 지켰지만 " if rate else "")
        return (f"{first}작업 주기 중앙값이 {number(v.cycle_median)}초로 기준 "
                f"{number(v.max_cycle)}초를 넘어 {site}더 빠른 동작을 모아야 합니다.")
    if v.cause == MISMATCH:
        if not v.has_row:
            return (f"dataset_index 에 이 태스크의 수집 줄이 없어 {v.spec_skill} 능력 데이터를 "
                    "처음부터 모아야 합니다.")
        tail = f"고{more}" if more else "라"
        return (f"태스크에는 {v.spec_skill} 능력이 필요한데 모아 둔 데이터는 {v.ds_skill} "
                f"능력이{tail} {site}{hand}다시 찍어야 합니다.")
    if more:
        return (f"{v.spec_skill} 능력에 맞는 데이터는 있지만 이번 회차에 평가를 한 줄도 돌리지 "
                f"않았고{more}므로 평가를 먼저 돌리고 더 모아야 합니다.")
    return (f"{v.spec_skill} 능력에 맞는 데이터는 있지만 이번 회차에 평가를 한 줄도 돌리지 "
            "않아 먼저 평가를 돌려야 합니다.")
