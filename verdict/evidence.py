"""Evidence rows of a card and the hedge that says what could not be counted.

Each row cites a real column of its source table. A value counted over several
evaluation rows (the task's counted rows: exempt failures are not among them)
carries ``agg`` (``episode_id``/count = rows, ``success``/count =
rows with success true, ``cycle_sec``/median); every other value is the cited
cell verbatim (the task's task_spec or dataset_index row, or for
``failure_reason`` the top reason as it is written in the rows).
"""

from __future__ import annotations

from verdict.model import (
    CANDIDATE,
    CYCLE_OVER,
    MISMATCH,
    RATE_BELOW,
    SKEWED,
    Evidence,
)
from verdict.view import TaskView


def _eval_counts(v: TaskView) -> list[Evidence]:
    if not v.n_rows:
        return []
    return [Evidence("evaluation_run", "episode_id", v.n_rows, "count"),
            Evidence("evaluation_run", "success", v.n_true, "count")]


def _spec(field: str, value: object) -> Evidence:
    return Evidence("task_spec", field, value)


def _ds(v: TaskView, *fields: str) -> list[Evidence]:
    if not v.has_row:
        return []
    values = {"required_skill": v.ds_skill, "episode_count": v.episode_count,
              "capture_site": v.capture_site, "robot_hand_type": v.robot_hand_type}
    return [Evidence("dataset_index", f, values[f]) for f in fields]


def _median(v: TaskView) -> list[Evidence]:
    if v.cycle_median is None:
        return []
    return [Evidence("evaluation_run", "cycle_sec", v.cycle_median, "median")]


def _reason(v: TaskView) -> list[Evidence]:
    if v.top_reason is None:
        return []
    return [Evidence("evaluation_run", "failure_reason", v.top_reason)]


def build_evidence(v: TaskView) -> tuple[Evidence, ...]:
    """The rows that back the verdict of one task, in reading order."""
    if v.verdict == CANDIDATE:
        rows = [*_eval_counts(v), *_median(v), _spec("target_success_rate", v.target),
                _spec("max_cycle_sec", v.max_cycle), _spec("top_reason_share_limit", v.limit)]
    elif v.verdict == RATE_BELOW:
        rows = [*_eval_counts(v), _spec("target_success_rate", v.target),
                _spec("min_episode_count", v.min_episodes), *_ds(v, "episode_count")]
    elif v.verdict == SKEWED:
        rows = [*_eval_counts(v), *_reason(v), _spec("top_reason_share_limit", v.limit),
                *_ds(v, "capture_site")]
    elif v.verdict == CYCLE_OVER:
        rows = [*_median(v), _spec("max_cycle_sec", v.max_cycle), *_eval_counts(v),
                _spec("target_success_rate", v.target), *_ds(v, "capture_site")]
    elif v.cause == MISMATCH:
        rows = [_spec("required_skill", v.spec_skill), *_ds(v, "required_skill"),
                _spec("min_episode_count", v.min_episodes),
                *_ds(v, "episode_count", "robot_hand_type", "capture_site"), *_eval_counts(v)]
    else:
        rows = [_spec("required_skill", v.spec_skill), *_ds(v, "required_skill", "episode_count"),
                _spec("min_episode_count", v.min_episodes),
                *_ds(v, "capture_site", "robot_hand_type")]
    return tuple(rows)


def hedge_and_missing(v: TaskView) -> tuple[str | None, dict[str, str]]:
    """What could not be counted or was skipped (one sentence each), and per empty
    card field the input that was empty."""
    notes: list[str] = []
    missing: dict[str, str] = {}
    if not v.has_row:
        notes.append("dataset_index 에 이 태스크의 수집 줄이 없어 더 모을 회차와 다시 찍을 "
                     "현장·손 형태를 정하지 못했습니다.")
        for key in ("more_episode_count", "recapture_site", "recapture_hand"):
            missing[key] = "dataset_index 행 없음"
    elif v.episode_count is None:
        notes.append("dataset_index.episode_count 가 비어 있어 몇 회를 더 모아야 하는지 "
                     "세지 못했습니다.")
        missing["more_episode_count"] = "dataset_index.episode_count 비어 있음"
    if v.has_row and v.min_episodes is None:
        notes.append("task_spec.min_episode_count 가 비어 있어 더 모을 회차를 세지 못했습니다.")
        missing["more_episode_count"] = "task_spec.min_episode_count 비어 있음"
    if v.skill_unknown:
        where = "dataset_index" if v.ds_skill is None else "task_spec"
        notes.append(f"{where}.required_skill 이 비어 있어 능력 비교(규칙 1)를 하지 못했습니다.")
    exempt = f"정책 책임이 아닌 실패 {v.n_exempt}회(counts_against_policy false)"
    if not v.n_rows:
        rows = f"행이 {exempt}뿐이라" if v.n_exempt else "행이 없어"
        notes.append(f"evaluation_run 에 이번 회차({v.artifact}) {rows} 성공률·실패·주기 "
                     "값은 비어 있습니다.")
        why = "evaluation_run 행 없음" + (
            f" (정책 책임이 아닌 실패 {v.n_exempt}행 제외)" if v.n_exempt else "")
        for key in ("success_rate", "failure_total", "top_failure_reason",
                    "top_failure_count", "top_failure_share", "cycle_sec_median"):
            missing[key] = why
        return " ".join(notes) or None, missing
    if v.n_exempt:
        notes.append(f"{exempt}는 평가 행에서 뺐습니다.")
    if v.n_success_null:
        skipped = "고 성공률 미달 판정은 건너뛰었" if v.rate_skipped else "었"
        notes.append(f"success 가 빈 행이 {v.n_success_null}개라 성공률을 계산하지 "
                     f"못했{skipped}습니다.")
        missing["success_rate"] = "evaluation_run.success 비어 있음"
    elif v.rate_skipped:
        notes.append("task_spec.target_success_rate 가 비어 성공률 미달 판정은 건너뛰었습니다.")
    if v.n_empty_reason:
        notes.append(f"실패 {v.failure_total}회 가운데 {v.n_empty_reason}회는 사유 칸이 비어 "
                     "있어 어느 유형인지 세지 못했습니다.")
        if v.top_reason is None:
            missing["top_failure_reason"] = "evaluation_run.failure_reason 비어 있음"
    if v.skew_few and v.failure_total:
        notes.append(f"실패가 {v.failure_total}회로 3회에 못 미쳐 쏠림 판정은 건너뛰었습니다.")
    if v.skew_skipped:
        what = ("task_spec.top_reason_share_limit 가" if v.limit is None
                else "실패 사유가 모두")
        notes.append(f"{what} 비어 쏠림 판정은 건너뛰었습니다.")
    if v.cycle_median is None:
        skipped = "고 작업 주기 판정은 건너뛰었" if v.cycle_skipped else "었"
        notes.append(f"cycle_sec 가 모두 비어 주기 중앙값을 내지 못했{skipped}습니다.")
        missing["cycle_sec_median"] = "evaluation_run.cycle_sec 비어 있음"
    else:
        if v.n_cycle_null:
            notes.append(f"cycle_sec 가 빈 행 {v.n_cycle_null}개는 주기 중앙값에서 뺐습니다.")
        if v.cycle_skipped:
            notes.append("task_spec.max_cycle_sec 가 비어 작업 주기 판정은 건너뛰었습니다.")
    return " ".join(notes) or None, missing

