"""The 14 checks catch hand-made faults, one per check, with the exact reason."""

from __future__ import annotations

import copy
from pathlib import Path

import pytest

from verdict.checks import CHECKS, run_checks
from verdict.engine import build_from_inputs
from verdict.model import card_to_dict
from verdict.reference import Reference
from verdict.tables import load_inputs


@pytest.fixture(scope="module")
def gold(gold_dir: Path) -> tuple[Reference, dict[str, dict]]:
    inputs = load_inputs(gold_dir / "evaluation_run.jsonl", gold_dir / "task_spec.csv",
                         gold_dir / "dataset_index.csv", "RLDX-1-rc7")
    cards = {c.task_id: card_to_dict(c) for c in build_from_inputs(inputs)}
    return Reference(inputs), cards


def failed(gold: tuple, task: str, change) -> list[tuple[int, str]]:
    ref, cards = gold
    card = copy.deepcopy(cards[task])
    change(card)
    report = run_checks([card], ref)
    return [(r.number, r.reason) for _, r in report.failures()]


def test_our_gold_cards_pass_all(gold: tuple) -> None:
    ref, cards = gold
    report = run_checks(list(cards.values()), ref)
    assert report.passed and len(report.cards) == 30 and len(CHECKS) == 14


def test_missing_card_is_a_file_finding(gold: tuple) -> None:
    ref, cards = gold
    report = run_checks([c for t, c in cards.items() if t != "door-open-J"], ref)
    assert report.file_findings == ("task door-open-J of task_spec has no card",)


def test_check_1_and_2(gold: tuple) -> None:
    assert failed(gold, "lid-press-K", lambda c: c.update(verdict="재수집")) == [
        (1, "verdict '재수집' is not one of 배포 후보, 성공률 미달, 실패 유형 쏠림, "
            "작업 주기 초과, 학습에 없는 조건"),
        (10, "recapture_site=None, expected '판교'; recapture_hand=None, expected 'parallel_2f'")]
    assert failed(gold, "lid-press-K", lambda c: c.update(summary="", evidence=[]))[0] == (
        2, "missing or empty: summary, evidence")


def test_check_3_rate_rounding_and_equal_target(gold: tuple) -> None:
    # 29/200 written with float rounding (0.14) is caught
    assert failed(gold, "aug-rate-29of200", lambda c: c.update(success_rate=0.14)) == [
        (3, "success_rate=0.14, expected 0.15")]
    assert failed(gold, "insert-conn-B", lambda c: c.update(verdict="성공률 미달")) == [
        (3, "성공률 미달 given but rate 0.8 vs target 0.8"),
        (5, "실패 유형 쏠림 missing but 3 failure(s), share 0.67 vs limit 0.5")]


def test_check_4_empty_reason_never_top(gold: tuple) -> None:
    got = failed(gold, "aug-empty-never-top", lambda c: c.update(
        top_failure_reason="", top_failure_count=2, top_failure_share=1.0))
    assert got == [(4, "top_failure_reason='', expected 'force_limit'; top_failure_count=2, "
                       "expected 1; top_failure_share=1.0, expected 0.25")]


def test_check_5_and_6(gold: tuple) -> None:
    assert failed(gold, "cable-plug-G", lambda c: c.update(verdict="실패 유형 쏠림")) == [
        (5, "실패 유형 쏠림 given but 4 failure(s), share 0.5 vs limit 0.5"),
        (10, "recapture_site=None, expected '평택'; recapture_hand=None, expected '3finger'")]
    assert failed(gold, "aug-median-even-halfup", lambda c: c.update(cycle_sec_median=11.12)) == [
        (6, "cycle_sec_median=11.12, expected 11.13")]


def test_check_7_8_9_10_11(gold: tuple) -> None:
    assert failed(gold, "door-open-J", lambda c: c.update(more_episode_count=0)) == [
        (7, "more_episode_count=0, expected None")]
    assert failed(gold, "wire-route-D", lambda c: c.update(failure_total=0)) == [
        (4, "failure_total=0, expected None"),
        (8, "no evaluation rows but filled: failure_total")]
    assert failed(gold, "lid-press-K", lambda c: c.update(blocked_cause="평가 미실시")) == [
        (9, "blocked_cause '평가 미실시' given with verdict 배포 후보")]
    assert failed(gold, "door-open-J", lambda c: c.update(blocked_cause="능력 불일치")) == [
        (9, "blocked_cause '능력 불일치', rules give '평가 미실시'")]
    assert failed(gold, "pick-tray-A", lambda c: c.update(recapture_site="판교")) == [
        (10, "recapture_site='판교', expected '안산'")]
    assert failed(gold, "lid-press-K", lambda c: c.update(cycle_sec_median=-1)) == [
        (6, "cycle_sec_median=-1, expected 8.9"), (11, "cycle_sec_median=-1 not > 0")]


def test_check_12_and_13_evidence(gold: tuple) -> None:
    def add(ev: dict):
        return lambda c: c["evidence"].append(ev)

    assert failed(gold, "pick-tray-A", add({"source": "evaluation_run",
                                             "field": "grasp_slip_count", "agg": "sum",
                                             "value": 2})) == [
        (12, "evaluation_run.grasp_slip_count is not a column of evaluation_run")]
    assert failed(gold, "pick-tray-A", add({"source": "evaluation_run", "field": "success",
                                             "agg": None, "value": 6})) == [
        (13, "evaluation_run.success: value 6 is no row's value: counted over rows but "
             "carries no agg")]
    assert failed(gold, "pick-tray-A", add({"source": "task_spec", "field": "max_cycle_sec",
                                             "agg": None, "value": 12})) == [
        (13, "task_spec.max_cycle_sec: value 12 differs from the cell 14.0")]
    assert failed(gold, "pick-tray-A", add({"source": "evaluation_run", "field": "cycle_sec",
                                             "agg": "median", "value": 11.0})) == [
        (13, "evaluation_run.cycle_sec: median recomputes to 11.05, card says 11.0")]
    assert failed(gold, "pick-tray-A", lambda c: c.update(
        summary="grasp_slip_rate 가 높아 더 모아야 합니다.")) == [
        (12, "summary cites fields that exist in no table: grasp_slip_rate")]


def test_check_14_polite_one_sentence(gold: tuple) -> None:
    assert failed(gold, "lid-press-K", lambda c: c.update(summary="배포해도 된다.")) == [
        (14, "not polite (존댓말): ends with '해도 된다.', expected …니다. or …요.")]
    assert failed(gold, "lid-press-K", lambda c: c.update(
        summary="성공률이 100%입니다. 배포할 만합니다.")) == [
        (14, "expected exactly one sentence ending in a period, found 2 sentence end(s)")]
