"""Every rule and edge of spec/verdict.md on hand-written tables, with hand-worked values."""

from __future__ import annotations

import pytest

from tests.unit.verdict.helpers import ART, ds_row, runs, spec_row, table
from verdict import build_cards, card_to_dict


def one(evals: list, spec: list, ds: list, artifact: str = ART) -> dict:
    cards = build_cards(table("evaluation_run", evals), table("task_spec", spec),
                        table("dataset_index", ds), artifact)
    assert len(cards) == 1
    return card_to_dict(cards[0])


def ok(n: int, cycle: float = 10.0) -> list:
    return [(True, None, cycle)] * n


def fail(*reasons: str | None, cycle: float = 10.0) -> list:
    return [(False, r, cycle) for r in reasons]


def test_29_of_200_rounds_half_up_to_the_target() -> None:
    ev = runs("t", ok(29) + fail(*(["a"] * 40 + ["b"] * 40 + ["c"] * 40 + ["d"] * 51)))
    card = one(ev, [spec_row("t", target=0.15)], [ds_row("t")])
    assert card["success_rate"] == 0.15  # 0.145 half-up; equal to target is not below
    assert card["verdict"] == "배포 후보"
    assert (card["failure_total"], card["top_failure_reason"], card["top_failure_count"],
            card["top_failure_share"]) == (171, "d", 51, 0.3)  # 51/171 = 0.298…


def test_1_of_8_is_013_and_below_014() -> None:
    ev = runs("t", ok(1) + fail("a", "b", "c", "d", "e", "f", "g"))
    assert one(ev, [spec_row("t", target=0.13)], [ds_row("t")])["verdict"] == "배포 후보"
    card = one(ev, [spec_row("t", target=0.14)], [ds_row("t")])
    assert (card["success_rate"], card["verdict"]) == (0.13, "성공률 미달")
    assert card["recapture_site"] == "안산" and card["recapture_hand"] == "parallel_2f"


def test_empty_reasons_count_in_denominator_never_top() -> None:
    # failures: "", None, "", "x", "y", "y"  -> total 6, top y (2), share 2/6 = 0.33
    ev = runs("t", ok(14) + fail("", None, "", "x", "y", "y"))
    card = one(ev, [spec_row("t", target=0.7, limit=0.3)], [ds_row("t")])
    assert (card["failure_total"], card["top_failure_reason"], card["top_failure_count"],
            card["top_failure_share"]) == (6, "y", 2, 0.33)
    assert card["verdict"] == "실패 유형 쏠림"  # 0.33 > 0.3 with 6 ≥ 3 failures
    assert card["hedge"] == ("실패 6회 가운데 3회는 사유 칸이 비어 있어 "
                             "어느 유형인지 세지 못했습니다.")


def test_all_reasons_empty_leaves_top_null() -> None:
    card = one(runs("t", ok(7) + fail("", None, "")), [spec_row("t", target=0.7)], [ds_row("t")])
    assert (card["failure_total"], card["top_failure_reason"], card["top_failure_count"],
            card["top_failure_share"]) == (3, None, None, None)
    assert card["verdict"] == "배포 후보"
    assert card["missing"]["top_failure_reason"] == "evaluation_run.failure_reason 비어 있음"


def test_ties_go_to_the_name_that_sorts_first() -> None:
    card = one(runs("t", ok(6) + fail("slip", "force", "slip", "force")),
               [spec_row("t", target=0.6, limit=0.5)], [ds_row("t")])
    assert (card["top_failure_reason"], card["top_failure_count"]) == ("force", 2)
    assert (card["top_failure_share"], card["verdict"]) == (0.5, "배포 후보")  # equal limit


def test_skew_needs_three_failures() -> None:
    two = one(runs("t", ok(8) + fail("a", "a")), [spec_row("t")], [ds_row("t")])
    assert (two["top_failure_share"], two["verdict"]) == (1.0, "배포 후보")
    assert "실패가 2회로 3회에 못 미쳐 쏠림 판정은 건너뛰었습니다." in two["hedge"]
    three = one(runs("t", ok(12) + fail("a", "a", "a")), [spec_row("t")], [ds_row("t")])
    assert (three["top_failure_share"], three["verdict"]) == (1.0, "실패 유형 쏠림")


def test_even_median_half_up_and_strict_max() -> None:
    ev = runs("t", [(True, None, c) for c in (11.25, 10.0, 11.0, 12.0)])
    over = one(ev, [spec_row("t", max_cycle=11.12)], [ds_row("t")])
    assert (over["cycle_sec_median"], over["verdict"]) == (11.13, "작업 주기 초과")
    equal = one(ev, [spec_row("t", max_cycle=11.13)], [ds_row("t")])
    assert equal["verdict"] == "배포 후보"


def test_rate_equal_target_is_not_below() -> None:
    card = one(runs("t", ok(12) + fail("a", "b", "c")), [spec_row("t", target=0.8)], [ds_row("t")])
    assert (card["success_rate"], card["verdict"]) == (0.8, "배포 후보")


def test_decision_order_rate_before_skew_before_cycle() -> None:
    ev = runs("t", ok(2, 20.0) + fail("a", "a", "a", cycle=20.0))
    assert one(ev, [spec_row("t", target=0.5)], [ds_row("t")])["verdict"] == "성공률 미달"
    assert one(ev, [spec_row("t", target=0.4)], [ds_row("t")])["verdict"] == "실패 유형 쏠림"
    assert one(ev, [spec_row("t", target=0.4, limit=1.0)],
               [ds_row("t")])["verdict"] == "작업 주기 초과"


@pytest.mark.parametrize(("min_ep", "count", "more"), [(250, 210, 40), (300, 320, 0),
                                                       (100, None, None), (None, 50, None)])
def test_more_episode_count(min_ep: int | None, count: int | None, more: int | None) -> None:
    card = one(runs("t", ok(10)), [spec_row("t", min_ep=min_ep)], [ds_row("t", count=count)])
    assert card["more_episode_count"] == more


def test_no_dataset_row_is_mismatch_with_null_more_and_recapture() -> None:
    card = one(runs("t", ok(10)), [spec_row("t")], [])
    assert (card["verdict"], card["blocked_cause"]) == ("학습에 없는 조건", "능력 불일치")
    assert (card["more_episode_count"], card["recapture_site"], card["recapture_hand"]) == (
        None, None, None)
    assert (card["success_rate"], card["failure_total"], card["cycle_sec_median"]) == (
        1.0, 0, 10.0)
    assert card["missing"]["recapture_site"] == "dataset_index 행 없음"


def test_skill_mismatch_wins_and_copies_recapture() -> None:
    card = one([], [spec_row("t", skill="bimanual_coord", min_ep=500)],
               [ds_row("t", skill="single_arm_pick", count=120, hand="5finger")])
    assert (card["verdict"], card["blocked_cause"], card["more_episode_count"]) == (
        "학습에 없는 조건", "능력 불일치", 380)
    assert (card["recapture_site"], card["recapture_hand"]) == ("안산", "5finger")


def test_not_evaluated_when_only_other_artifacts_ran() -> None:
    card = one(runs("t", ok(10), artifact="RLDX-1-rc6"), [spec_row("t")], [ds_row("t")])
    assert (card["verdict"], card["blocked_cause"]) == ("학습에 없는 조건", "평가 미실시")
    assert [card[k] for k in ("success_rate", "failure_total", "top_failure_reason",
                              "top_failure_count", "top_failure_share",
                              "cycle_sec_median")] == [None] * 6
    assert card["hedge"] == ("evaluation_run 에 이번 회차(RLDX-1-rc7) 행이 없어 "
                             "성공률·실패·주기 값은 비어 있습니다.")


def test_blocked_cause_null_outside_not_trained() -> None:
    card = one(runs("t", ok(2) + fail("a")), [spec_row("t")], [ds_row("t")])
    assert (card["verdict"], card["blocked_cause"]) == ("성공률 미달", None)


def test_candidate_has_no_recapture() -> None:
    card = one(runs("t", ok(10)), [spec_row("t")], [ds_row("t")])
    assert (card["verdict"], card["recapture_site"], card["recapture_hand"]) == (
        "배포 후보", None, None)


def test_empty_inputs_skip_their_rule_and_say_so() -> None:
    card = one(runs("t", ok(2) + fail("a")), [spec_row("t", target=None)], [ds_row("t")])
    assert card["verdict"] == "배포 후보"  # rule 3 cannot run without a target
    assert card["hedge"] == ("task_spec.target_success_rate 가 비어 성공률 미달 판정은 "
                             "건너뛰었습니다. 실패가 1회로 3회에 못 미쳐 쏠림 판정은 "
                             "건너뛰었습니다.")
    card = one(runs("t", [(True, None, None)] * 3), [spec_row("t")], [ds_row("t")])
    assert card["cycle_sec_median"] is None
    assert card["missing"] == {"cycle_sec_median": "evaluation_run.cycle_sec 비어 있음"}
    card = one(runs("t", [*ok(3), (None, None, 10.0)]), [spec_row("t")], [ds_row("t")])
    assert (card["success_rate"], card["failure_total"]) == (None, 0)
    assert card["missing"] == {"success_rate": "evaluation_run.success 비어 있음"}


def test_every_task_gets_a_card_grouped_in_spec_order() -> None:
    specs = [spec_row("a"), spec_row("b"), spec_row("c"), spec_row("d", skill="x")]
    ev = runs("a", ok(10)) + runs("b", ok(1) + fail("z")) + runs("zz-not-in-spec", ok(3))
    cards = build_cards(table("evaluation_run", ev), table("task_spec", specs),
                        table("dataset_index", [ds_row("a"), ds_row("b"), ds_row("d")]), ART)
    assert [(c.task_id, c.verdict, c.blocked_cause) for c in cards] == [
        ("a", "배포 후보", None), ("b", "성공률 미달", None),
        ("c", "학습에 없는 조건", "능력 불일치"), ("d", "학습에 없는 조건", "능력 불일치")]


def test_empty_evaluation_table_keeps_every_task() -> None:
    cards = build_cards(table("evaluation_run", []), table("task_spec", [spec_row("a")]),
                        table("dataset_index", [ds_row("a")]), ART)
    assert [(c.task_id, c.blocked_cause) for c in cards] == [("a", "평가 미실시")]


def test_median_of_floats_no_short_decimal_writes() -> None:
    # 0.1 + 0.2 is 0.30000000000000004: the exact per-task fallback still rounds half-up
    ev = runs("t", [(True, None, 0.1 + 0.2), (True, None, 10.0)])
    card = one(ev, [spec_row("t")], [ds_row("t")])
    assert card["cycle_sec_median"] == 5.15
