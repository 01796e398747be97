"""The 30 gold tasks, compactly: targets, the dataset row, episodes and the answer.

``origin`` says where each row came from: ``seed`` (the seven example cards of
the original document, rebuilt as raw rows that reproduce their numbers),
``base`` (three rows written to complete the 10-row base table, which the seed
does not include) and ``augmented`` (20 rows, one per rule or edge). Expected
decisions were derived by hand from the spec, each with its one-line reason.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

ARTIFACT = "RLDX-1-rc7"
OTHER_ARTIFACT = "RLDX-1-rc6"

Episode = tuple[bool | None, str | None, float | None]  # (success, failure_reason, cycle_sec)


@dataclass(frozen=True)
class GoldTask:
    """One gold task: its table rows and the expected card."""

    task_id: str
    origin: str
    spec: dict[str, Any]
    dataset: dict[str, Any] | None
    episodes: tuple[Episode, ...]
    verdict: str
    cause: str | None
    reason: str
    fields: dict[str, Any] = field(default_factory=dict)
    artifact: str | None = None


def spec(skill: str, target: float | None, limit: float, max_cycle: float,
         min_ep: int) -> dict[str, Any]:
    return {"required_skill": skill, "target_success_rate": target,
            "top_reason_share_limit": limit, "max_cycle_sec": max_cycle,
            "min_episode_count": min_ep}


def ds(skill: str | None, count: int | None, site: str, hand: str) -> dict[str, Any]:
    return {"required_skill": skill, "episode_count": count, "capture_site": site,
            "robot_hand_type": hand}


def eps(ok: list[float | None], failed: list[tuple[str | None, float | None]]) -> tuple:
    """Successful episodes' cycle times, then ``(failure_reason, cycle_sec)`` of failures."""
    return tuple((True, None, c) for c in ok) + tuple((False, r, c) for r, c in failed)


def same(n: int, value: float) -> list[float]:
    return [value] * n


def _f(sr, ft, top, tc, share, med, more, site, hand) -> dict[str, Any]:
    return {"success_rate": sr, "failure_total": ft, "top_failure_reason": top,
            "top_failure_count": tc, "top_failure_share": share, "cycle_sec_median": med,
            "more_episode_count": more, "recapture_site": site, "recapture_hand": hand}


NULLS = _f(None, None, None, None, None, None, None, None, None)
RATE, SKEW, CYCLE = "성공률 미달", "실패 유형 쏠림", "작업 주기 초과"
OK, NT = "배포 후보", "학습에 없는 조건"
MIS, NOEVAL = "능력 불일치", "평가 미실시"

SEED: tuple[GoldTask, ...] = (
    GoldTask("pick-tray-A", "seed", spec("single_arm_pick", 0.9, 0.5, 14, 250),
             ds("single_arm_pick", 210, "안산", "parallel_2f"),
             eps([10.2, 10.5, 10.8, 10.9, 11.0, 11.1],
                 [("grasp_slip", 11.3), ("grasp_slip", 11.6), ("", 12.0), ("misalign", 12.4)]),
             RATE, None, "6/10 = 0.6 < 0.9; 250 − 210 = 40 more",
             _f(0.6, 4, "grasp_slip", 2, 0.5, 11.05, 40, "안산", "parallel_2f")),
    GoldTask("insert-conn-B", "seed", spec("precision_insert", 0.8, 0.5, 15, 300),
             ds("precision_insert", 320, "안산", "parallel_2f"),
             eps([12.1, 12.4, 12.6, 12.8, 13.0, 13.2, 13.4, 13.5, 13.6, 13.8, 14.0, 14.2],
                 [("grasp_slip", 14.5), ("grasp_slip", 14.9), ("misalign", 15.3)]),
             SKEW, None, "12/15 = 0.8 equals target (not below); 3 failures, 2/3 = 0.67 > 0.5",
             _f(0.8, 3, "grasp_slip", 2, 0.67, 13.5, 0, "안산", "parallel_2f")),
    GoldTask("screw-M4-C", "seed", spec("screw_drive", 0.8, 0.5, 11, 200),
             ds("screw_drive", 260, "판교", "parallel_2f"),
             eps([11.6, 11.9, 12.1, 12.3, 12.4, 12.5, 12.7, 12.9],
                 [("force_limit", 13.2), ("", 13.6)]),
             CYCLE, None, "2 failures skip the skew rule; median (12.4+12.5)/2 = 12.45 > 11",
             _f(0.8, 2, "force_limit", 1, 0.5, 12.45, 0, "판교", "parallel_2f")),
    GoldTask("cable-plug-G", "seed", spec("cable_insert", 0.7, 0.5, 18, 300),
             ds("cable_insert", 340, "평택", "3finger"),
             eps([15.2, 15.6, 15.9, 16.1, 16.3, 16.5, 16.6, 16.8, 17.0, 17.2],
                 [("force_limit", 17.4), ("force_limit", 17.7), ("misalign", 17.9),
                  ("timeout", 18.3)]),
             OK, None, "10/14 = 0.71 ≥ 0.7; share 2/4 = 0.5 equals the limit; 16.7 ≤ 18",
             _f(0.71, 4, "force_limit", 2, 0.5, 16.7, 0, None, None)),
    GoldTask("box-close-F", "seed", spec("fold_close", 0.85, 0.5, 14, 250),
             ds("fold_close", 280, "안산", "parallel_2f"),
             eps([10.9, 11.1, 11.3, 11.5, 11.6, 11.8, 12.0, 12.2, 12.5], [("timeout", 13.1)]),
             OK, None, "9/10 = 0.9 ≥ 0.85; 1 failure skips skew; 11.7 ≤ 14",
             _f(0.9, 1, "timeout", 1, 1.0, 11.7, 0, None, None)),
    GoldTask("wire-route-D", "seed", spec("bimanual_coord", 0.8, 0.5, 20, 500),
             ds("single_arm_pick", 120, "안산", "5finger"), (),
             NT, MIS, "data skill single_arm_pick ≠ bimanual_coord; 500 − 120 = 380",
             {**NULLS, "more_episode_count": 380, "recapture_site": "안산",
              "recapture_hand": "5finger"}),
    GoldTask("door-open-J", "seed", spec("bimanual_coord", 0.75, 0.5, 16, 400),
             ds("bimanual_coord", None, "판교", "5finger"), (),
             NT, NOEVAL, "skill matches, no evaluation rows; episode_count empty → more null",
             {**NULLS, "recapture_site": "판교", "recapture_hand": "5finger"}),
)

BASE: tuple[GoldTask, ...] = (
    GoldTask("label-peel-H", "base", spec("label_peel", 0.75, 0.5, 12, 200),
             ds("label_peel", 230, "안산", "parallel_2f"),
             eps(same(16, 9.5), [("grasp_slip", 9.5)] * 3 + [("misalign", 9.5)]),
             SKEW, None, "16/20 = 0.8 ≥ 0.75; 4 failures, 3/4 = 0.75 > 0.5",
             _f(0.8, 4, "grasp_slip", 3, 0.75, 9.5, 0, "안산", "parallel_2f")),
    GoldTask("bin-sort-I", "base", spec("single_arm_pick", 0.8, 0.5, 12, 200), None,
             eps(same(10, 8.0), []),
             NT, MIS, "no dataset_index row → 능력 불일치 although all 10 evaluations passed",
             _f(1.0, 0, None, None, None, 8.0, None, None, None)),
    GoldTask("lid-press-K", "base", spec("lid_press", 0.9, 0.5, 10, 200),
             ds("lid_press", 240, "판교", "parallel_2f"),
             eps([8.1, 8.3, 8.4, 8.6, 8.8, 9.0, 9.1, 9.3, 9.4, 9.9], []),
             OK, None, "10/10 success, no failures (top reason and share null); 8.9 ≤ 10",
             _f(1.0, 0, None, None, None, 8.9, 0, None, None)),
)

_S = spec
AUGMENTED: tuple[GoldTask, ...] = (
    GoldTask("aug-rate-29of200", "augmented", _S("single_arm_pick", 0.15, 0.5, 12, 100),
             ds("single_arm_pick", 100, "안산", "parallel_2f"),
             eps(same(29, 10.0), [("grasp_slip", 10.0)] * 35 + [("force_limit", 10.0)] * 34
                 + [("misalign", 10.0)] * 34 + [("timeout", 10.0)] * 34 + [("drop", 10.0)] * 34),
             OK, None, "29/200 = 0.145 rounds half-up to 0.15 = target (floats give 0.14)",
             _f(0.15, 171, "grasp_slip", 35, 0.2, 10.0, 0, None, None)),
    GoldTask("aug-rate-1of8", "augmented", _S("single_arm_pick", 0.13, 0.5, 12, 100),
             ds("single_arm_pick", 100, "안산", "parallel_2f"),
             eps([9.5], [(r, 9.5) for r in ("drop", "force_limit", "grasp_slip", "misalign",
                                           "timeout", "wrist_limit", "collision")]),
             OK, None, "1/8 = 0.125 → 0.13 = target; 7 one-off reasons tie → collision, "
             "1/7 → 0.14",
             _f(0.13, 7, "collision", 1, 0.14, 9.5, 0, None, None)),
    GoldTask("aug-skew-three-exact", "augmented", _S("precision_insert", 0.7, 0.6, 12, 100),
             ds("precision_insert", 100, "안산", "parallel_2f"),
             eps(same(9, 10.0), [("grasp_slip", 10.0), ("grasp_slip", 10.0),
                                 ("force_limit", 10.0)]),
             SKEW, None, "exactly 3 failures is enough; 2/3 = 0.67 > 0.6",
             _f(0.75, 3, "grasp_slip", 2, 0.67, 10.0, 0, "안산", "parallel_2f")),
    GoldTask("aug-empty-in-denominator", "augmented", _S("precision_insert", 0.6, 0.6, 12, 100),
             ds("precision_insert", 100, "안산", "parallel_2f"),
             eps(same(10, 10.0), [("grasp_slip", 10.0)] * 3 + [("", 10.0), (None, 10.0)]),
             OK, None, "empty reasons stay in the denominator: 3/5 = 0.6 equals the limit",
             _f(0.67, 5, "grasp_slip", 3, 0.6, 10.0, 0, None, None)),
    GoldTask("aug-empty-never-top", "augmented", _S("precision_insert", 0.6, 0.4, 12, 100),
             ds("precision_insert", 100, "안산", "parallel_2f"),
             eps(same(8, 10.0), [(None, 10.0), ("", 10.0), ("misalign", 10.0),
                                 ("force_limit", 10.0)]),
             OK, None, "2 empty reasons are never top; force_limit (tie by name) 1/4 = 0.25 ≤ 0.4",
             _f(0.67, 4, "force_limit", 1, 0.25, 10.0, 0, None, None)),
    GoldTask("aug-tie-by-name", "augmented", _S("precision_insert", 0.5, 0.35, 12, 100),
             ds("precision_insert", 100, "판교", "parallel_2f"),
             eps(same(5, 10.0), [("grasp_slip", 10.0)] * 2 + [("force_limit", 10.0)] * 2
                 + [("misalign", 10.0)]),
             SKEW, None, "5/10 = 0.5 equals target; grasp_slip and force_limit tie at 2 → "
             "force_limit, 2/5 = 0.4 > 0.35",
             _f(0.5, 5, "force_limit", 2, 0.4, 10.0, 0, "판교", "parallel_2f")),
    GoldTask("aug-median-even-halfup", "augmented", _S("screw_drive", 0.9, 0.5, 11.12, 100),
             ds("screw_drive", 100, "판교", "parallel_2f"),
             eps([10.5, 10.7, 10.9, 11.0, 11.25, 11.4, 11.6, 11.8], []),
             CYCLE, None, "median (11.0+11.25)/2 = 11.125 → 11.13 > 11.12 (round() gives 11.12)",
             _f(1.0, 0, None, None, None, 11.13, 0, "판교", "parallel_2f")),
    GoldTask("aug-cycle-equal-max", "augmented", _S("screw_drive", 0.9, 0.5, 12, 100),
             ds("screw_drive", 100, "판교", "parallel_2f"),
             eps([10.0, 10.5, 11.0, 11.5, 12.0, 12.5, 13.0, 13.5, 14.0], []),
             OK, None, "odd-count median 12.0 equals max_cycle_sec 12: not over",
             _f(1.0, 0, None, None, None, 12.0, 0, None, None)),
    GoldTask("aug-rate-before-skew", "augmented", _S("label_peel", 0.8, 0.5, 20, 100),
             ds("label_peel", 60, "안산", "parallel_2f"),
             eps(same(4, 10.0), [("grasp_slip", 10.0)] * 6),
             RATE, None, "4/10 = 0.4 < 0.8 fires first although 6/6 failures are one reason",
             _f(0.4, 6, "grasp_slip", 6, 1.0, 10.0, 40, "안산", "parallel_2f")),
    GoldTask("aug-skew-before-cycle", "augmented", _S("label_peel", 0.7, 0.5, 15, 100),
             ds("label_peel", 100, "안산", "parallel_2f"),
             eps(same(9, 20.0), [("force_limit", 20.0)] * 3),
             SKEW, None, "9/12 = 0.75 ≥ 0.7; 3/3 force_limit fires before median 20 > 15",
             _f(0.75, 3, "force_limit", 3, 1.0, 20.0, 0, "안산", "parallel_2f")),
    GoldTask("aug-mismatch-with-evals", "augmented", _S("bimanual_coord", 0.8, 0.5, 12, 300),
             ds("single_arm_pick", 100, "평택", "5finger"), eps(same(10, 9.0), []),
             NT, MIS, "skill mismatch wins over perfect evaluations; metrics still filled",
             _f(1.0, 0, None, None, None, 9.0, 200, "평택", "5finger")),
    GoldTask("aug-not-evaluated-count", "augmented", _S("bimanual_coord", 0.8, 0.5, 12, 200),
             ds("bimanual_coord", 150, "평택", "5finger"), (),
             NT, NOEVAL, "skill matches, no rows; 200 − 150 = 50 more",
             {**NULLS, "more_episode_count": 50, "recapture_site": "평택",
              "recapture_hand": "5finger"}),
    GoldTask("aug-other-artifact-only", "augmented", _S("fold_close", 0.8, 0.5, 12, 300),
             ds("fold_close", 500, "안산", "parallel_2f"), eps(same(10, 9.0), []),
             NT, NOEVAL, "rows exist only for RLDX-1-rc6, none this round; 300 − 500 floors at 0",
             {**NULLS, "more_episode_count": 0, "recapture_site": "안산",
              "recapture_hand": "parallel_2f"}, OTHER_ARTIFACT),
    GoldTask("aug-target-empty", "augmented", _S("fold_close", None, 0.5, 12, 100),
             ds("fold_close", 100, "안산", "parallel_2f"),
             eps(same(2, 10.0), [("grasp_slip", 10.0)] * 6 + [("force_limit", 10.0)] * 2),
             SKEW, None, "target empty: rule 3 gives no verdict; 6/8 = 0.75 > 0.5",
             _f(0.2, 8, "grasp_slip", 6, 0.75, 10.0, 0, "안산", "parallel_2f")),
    GoldTask("aug-cycle-empty", "augmented", _S("fold_close", 0.8, 0.5, 12, 100),
             ds("fold_close", 100, "안산", "parallel_2f"),
             eps(same(9, None), [("timeout", None)]),
             OK, None, "all cycle_sec empty: median null and rule 5 gives no verdict",
             _f(0.9, 1, "timeout", 1, 1.0, None, 0, None, None)),
    GoldTask("aug-episode-count-empty", "augmented", _S("cable_insert", 0.8, 0.5, 12, 300),
             ds("cable_insert", None, "평택", "3finger"),
             eps(same(5, 10.0), [("misalign", 10.0)] * 5),
             RATE, None, "5/10 = 0.5 < 0.8; episode_count empty → more null, site copied",
             _f(0.5, 5, "misalign", 5, 1.0, 10.0, None, "평택", "3finger")),
    GoldTask("aug-dataset-skill-empty", "augmented", _S("cable_insert", 0.8, 0.5, 12, 100),
             ds(None, 100, "평택", "3finger"), eps(same(10, 10.0), []),
             OK, None, "dataset required_skill empty: rule 1 gives no verdict; all else passes",
             _f(1.0, 0, None, None, None, 10.0, 0, None, None)),
    GoldTask("aug-success-null", "augmented", _S("cable_insert", 0.8, 0.5, 12, 100),
             ds("cable_insert", 100, "평택", "3finger"),
             (*eps(same(6, 10.0), [("grasp_slip", 10.0)] * 3), (None, None, 10.0)),
             SKEW, None, "one success empty: rate null, rule 3 skipped; 3/3 grasp_slip > 0.5",
             _f(None, 3, "grasp_slip", 3, 1.0, 10.0, 0, "평택", "3finger")),
    GoldTask("aug-reason-on-success", "augmented", _S("screw_drive", 0.8, 0.5, 12, 100),
             ds("screw_drive", 100, "판교", "parallel_2f"),
             tuple((True, "grasp_slip", 10.0) for _ in range(3)) + eps(
                 same(5, 10.0), [("misalign", 10.0), ("force_limit", 10.0)]),
             OK, None, "reasons on successful rows are not failures; top force_limit 1/2, 2 < 3",
             _f(0.8, 2, "force_limit", 1, 0.5, 10.0, 0, None, None)),
    GoldTask("aug-no-row-no-evals", "augmented", _S("door_open", 0.8, 0.5, 12, 100), None, (),
             NT, MIS, "no dataset row wins over no evaluation rows (rule 1 before rule 2)",
             dict(NULLS)),
)

TASKS: tuple[GoldTask, ...] = SEED + BASE + AUGMENTED
SEED_TASK_IDS: tuple[str, ...] = tuple(t.task_id for t in SEED)
