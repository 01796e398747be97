"""Default polite sentences, and the model-summary hook with a scripted fake backend."""

from __future__ import annotations

from pathlib import Path

import pytest

from verdict import build_cards
from verdict.summary import polite_sentence_problem

DEFAULTS = {
    "pick-tray-A": "평가 10회 가운데 6회만 성공해 성공률 60%가 기준 90%에 못 미치고 수집 회차도 "
                   "250회 기준에서 40회 모자라 안산 현장에서 parallel_2f 손 형태로 성공 장면을 더 "
                   "모아야 합니다.",
    "insert-conn-B": "실패 3회 가운데 2회가 grasp_slip 사유로 67%를 차지해 문턱 50%를 넘었으므로 "
                     "안산 현장에서 이 실패 장면을 골라 더 찍어야 합니다.",
    "screw-M4-C": "성공률 80%는 기준을 지켰지만 작업 주기 중앙값이 12.45초로 기준 11초를 넘어 "
                  "판교 현장에서 더 빠른 동작을 모아야 합니다.",
    "cable-plug-G": "평가 14회 가운데 10회 성공해 성공률 71%로 기준 70%를 채웠고 주기 중앙값 "
                    "16.7초도 기준 18초 안이라 배포 후보로 올릴 만합니다.",
    "wire-route-D": "태스크에는 bimanual_coord 능력이 필요한데 모아 둔 데이터는 single_arm_pick "
                    "능력이고 수집 회차도 500회 기준에서 380회 모자라 안산 현장에서 5finger 손 "
                    "형태로 다시 찍어야 합니다.",
    "door-open-J": "bimanual_coord 능력에 맞는 데이터는 있지만 이번 회차에 평가를 한 줄도 돌리지 "
                   "않아 먼저 평가를 돌려야 합니다.",
}


def _build(d: Path, backend=None) -> dict:
    cards = build_cards(d / "evaluation_run.jsonl", d / "task_spec.csv",
                        d / "dataset_index.csv", "RLDX-1-rc7", summary_backend=backend)
    return {c.task_id: c for c in cards}


def test_default_sentences(seed_dir: Path) -> None:
    cards = _build(seed_dir)
    for task, text in DEFAULTS.items():
        assert cards[task].summary == text
        assert polite_sentence_problem(text) is None
        assert cards[task].summary_source == "rules"


class Scripted:
    """A fake text backend: returns scripted answers in turn and records the prompts."""

    def __init__(self, answers: dict[str, str | Exception]) -> None:
        self.answers = answers
        self.prompts: list[str] = []

    def __call__(self, prompt: str) -> str:
        self.prompts.append(prompt)
        task = next(t for t in self.answers if f'"task_id": "{t}"' in prompt)
        answer = self.answers[task]
        if isinstance(answer, Exception):
            raise answer
        return answer


GOOD = "스크루 체결 주기 중앙값이 12.45초라 기준 11초를 넘으니 판교에서 빠른 동작을 더 모아 주세요."


@pytest.mark.parametrize(("task", "answer", "source", "note"), [
    ("screw-M4-C", GOOD, "model", None),
    ("screw-M4-C", "주기가 깁니다. 더 모으세요.", "fallback",
     "model summary rejected (expected exactly one sentence ending in a period, found 2 "
     "sentence end(s)): 주기가 깁니다. 더 모으세요."),
    ("screw-M4-C", "cycle_p95_sec 가 높아 더 모아야 합니다.", "fallback",
     "model summary rejected (cites fields that exist in no table: cycle_p95_sec): "
     "cycle_p95_sec 가 높아 더 모아야 합니다."),
    ("screw-M4-C", "주기 중앙값이 13초라 더 모아야 합니다.", "fallback",
     "model summary rejected (states numbers not on the card: 13): "
     "주기 중앙값이 13초라 더 모아야 합니다."),
    ("screw-M4-C", "이 태스크는 배포 후보로 올려도 됩니다.", "fallback",
     "model summary rejected (names another verdict: 배포 후보): "
     "이 태스크는 배포 후보로 올려도 됩니다."),
    ("screw-M4-C", "주기가 기준을 넘었다.", "fallback",
     "model summary rejected (not polite (존댓말): ends with '을 넘었다.', expected …니다. "
     "or …요.): 주기가 기준을 넘었다."),
    ("screw-M4-C", TimeoutError("backend timed out"), "fallback",
     "model failed: TimeoutError: backend timed out"),
])
def test_model_summary_accepted_only_when_it_passes(seed_dir: Path, task: str, answer,
                                                    source: str, note: str | None) -> None:
    answers = dict.fromkeys(DEFAULTS, "기본 문장과 같게 두겠습니다.")
    answers["box-close-F"] = answers[task] = answer
    backend = Scripted(answers)
    card = _build(seed_dir, backend)[task]
    assert (card.summary_source, card.summary_note) == (source, note)
    assert card.summary == (answer if source == "model" else DEFAULTS[task])
    assert card.verdict == "작업 주기 초과"  # the model never changes the verdict
    assert len(backend.prompts) == 7
    prompt = next(p for p in backend.prompts if '"task_id": "screw-M4-C"' in p)
    assert prompt.endswith("기본 문장: " + DEFAULTS[task])
