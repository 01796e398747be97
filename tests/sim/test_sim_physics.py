"""Physics labels against hand-checked Meta-World rollouts (no rendering: ~0.3 s each).

Each case was run once, its trace read step by step (finger forces, finger opening, object
height, robot–table force) and the outcome checked by hand; the tests pin what was seen.

Times: the trace is sampled every control step (80 Hz, 12.5 ms) and MuJoCo is deterministic
on the pinned versions (metaworld 3.1.1 pins mujoco 3.3.0), so the hand-checked times
would repeat exactly. The tolerance is ``TOL_S`` = 2 control steps (25 ms): enough for a
first contact to move one step under solver round-off on another CPU or BLAS, still well
inside one video frame at 16 fps (62.5 ms), so a judge sampling around the event sees the
same frames.
"""

from __future__ import annotations

from functools import cache

import numpy as np
import pytest

pytestmark = pytest.mark.sim

TOL_S = 0.025
STEPS = 240  # 3 s


@cache
def run(task: str, env_seed: int, kind: str, **params):
    from judge.sim.labels import label
    from judge.sim.perturb import Perturbation
    from judge.sim.physics import rollout
    from judge.sim.tasks import TASKS

    ro = rollout(TASKS[task], env_seed, Perturbation(kind, dict(params)), STEPS)
    fired = None if ro.fired_step is None else ro.fired_step * ro.trace.dt
    return ro.trace, label(ro.trace), fired


def kinds(lab) -> list[str]:
    return [e["kind"] for e in lab.contacts]


def at(lab, kind: str) -> float:
    return next(e["t"] for e in lab.contacts if e["kind"] == kind)


def test_clean_expert_pick_place_is_a_success_with_one_grasp():
    tr, lab, _ = run("pick-place", 101, "none")
    assert (lab.attempt, lab.success, lab.failure_class) == (True, True, None)
    assert kinds(lab) == ["grasp"]
    assert at(lab, "grasp") == pytest.approx(0.425, abs=TOL_S)  # fingers meet the puck
    assert lab.final_metric < lab.threshold == 0.07
    assert tr.obj[-1, 2] > 0.15  # held up at the goal, not on the table
    assert tr.scene.max() == 0.0  # never touched the table


@pytest.mark.parametrize("task", ["pick-place-wall", "drawer-open", "button-press-topdown",
                                  "peg-insert-side"])
def test_clean_expert_succeeds_on_the_other_tasks(task):
    _, lab, _ = run(task, 101, "none")
    assert (lab.attempt, lab.success, lab.failure_class) == (True, True, None)


def test_opening_mid_transport_is_a_premature_release_at_the_opening():
    tr, lab, fired = run("pick-place", 101, "release", where="transport", delay_s=0.05)
    assert (lab.attempt, lab.success, lab.failure_class) == (True, False,
                                                             "grasp.premature_release")
    assert kinds(lab) == ["grasp", "release"]
    assert fired == pytest.approx(0.525, abs=1e-9)
    # contact ends two steps after the gripper is told to open (fingers take time to part)
    assert at(lab, "release") == pytest.approx(0.55, abs=TOL_S)
    assert 0.0 <= at(lab, "release") - fired <= 0.15
    i = round(at(lab, "release") / tr.dt)
    assert tr.obj[i, 2] > 0.1 and tr.obj[-1, 2] < 0.025  # lifted when let go, then on the table
    assert tr.width[i + 20] > 0.09  # the fingers opened wide


def test_opening_over_the_goal_is_a_drop():
    tr, lab, fired = run("pick-place", 102, "release", where="over_goal", goal_frac=0.2)
    assert (lab.success, lab.failure_class) == (False, "placement.dropped")
    release = next(e for e in lab.contacts if e["kind"] == "release")
    assert release["goal_xy_m"] < 0.02 and release["fell"]  # above the goal, then fell
    assert release["t"] == pytest.approx(0.6875, abs=TOL_S)
    assert 0.0 <= release["t"] - fired <= 0.15
    assert tr.obj[-1, 2] < 0.025 and lab.final_metric > 0.1  # on the table, below the goal


def test_a_weak_grip_is_a_slip_with_the_fingers_still_closed():
    tr, lab, fired = run("pick-place", 101, "weak_grip", effort=0.025, delay_s=0.05)
    assert (lab.attempt, lab.success, lab.failure_class) == (True, False, "grasp.slip")
    assert kinds(lab) == ["grasp", "slip"]
    assert at(lab, "slip") == pytest.approx(0.5875, abs=TOL_S)
    assert 0.0 <= at(lab, "slip") - fired <= 0.25
    i = round(at(lab, "slip") / tr.dt)
    assert tr.width[i:i + 20].max() < 0.07  # never opened (0.100 open, 0.038 on the puck)


def test_an_offset_grasp_is_a_miss():
    tr, lab, _ = run("pick-place", 101, "offset", dx=0.05, dy=0.0)
    assert (lab.attempt, lab.success, lab.failure_class) == (True, False, "grasp.miss")
    assert kinds(lab) == []  # closed on air: no finger ever pressed the puck
    assert tr.width.min() < 0.03 and tr.grip.max() == 0.0


def test_an_idle_arm_is_not_an_attempt():
    tr, lab, _ = run("pick-place", 101, "idle",
                     waypoints=((0.03, -0.02, 0.01), (-0.03, 0.02, -0.02), (0.0, 0.0, 0.0)))
    assert (lab.attempt, lab.success, lab.failure_class) == (False, False, "task.no_attempt")
    assert lab.min_tool_object_m > 0.1 and tr.touch.max() == 0.0


def test_driving_into_the_table_is_a_collision_at_the_impact():
    tr, lab, fired = run("pick-place", 101, "crash", trigger_frac=0.4, depth_m=0.1, side=1.0)
    assert (lab.attempt, lab.success, lab.failure_class) == (True, False, "motion.collision")
    assert kinds(lab) == ["impact"]
    assert at(lab, "impact") == pytest.approx(0.5, abs=TOL_S)
    assert 0.0 < at(lab, "impact") - fired < 0.5
    assert tr.scene.max() > 1000.0  # newtons against the table


def test_a_late_slow_expert_is_a_timeout_and_a_less_late_one_succeeds():
    _, late, _ = run("pick-place", 101, "slow", hesitate_frac=0.7, factor=0.6)
    assert (late.attempt, late.success, late.failure_class) == (True, False, "task.timeout")
    _, ok, _ = run("pick-place", 101, "slow", hesitate_frac=0.6, factor=0.6)
    assert ok.success and ok.near_threshold  # labels follow the physics, not the injection


def test_a_time_limit_cuts_the_run_it_would_have_been_and_labels_what_happened():
    """--min-duration: the expert is planned for the longest run (the slow one hesitates for
    60 % of 3 s) and the time limit cuts it: the cut trace is the start of the full one."""
    from judge.sim.labels import label
    from judge.sim.perturb import Perturbation
    from judge.sim.physics import rollout
    from judge.sim.tasks import TASKS

    full, ok, _ = run("pick-place", 101, "slow", hesitate_frac=0.6, factor=0.6)
    assert ok.success
    cut = rollout(TASKS["pick-place"], 101, Perturbation("slow", {"hesitate_frac": 0.6,
                                                                  "factor": 0.6}),
                  200, planned_steps=STEPS).trace  # 2.5 s of the 3 s
    for f in ("q", "qd", "tau", "width", "grip", "tcp", "obj", "metric"):
        np.testing.assert_array_equal(getattr(cut, f), getattr(full, f)[:201])
    lab = label(cut)
    assert (lab.attempt, lab.success, lab.failure_class) == (True, False, "task.timeout")
    assert kinds(lab) == kinds(ok) == ["grasp"] and at(lab, "grasp") == at(ok, "grasp")


def test_trace_shapes_and_units():
    tr, _, _ = run("pick-place", 101, "none")
    n = STEPS + 1
    assert tr.q.shape == tr.qd.shape == tr.tau.shape == (n, 7)
    assert tr.width.shape == tr.grip.shape == tr.metric.shape == (n,)
    assert tr.dt == pytest.approx(0.0125)
    assert 0.09 < tr.width[0] < 0.11  # open Sawyer gripper, metres
    assert np.isfinite(tr.tau).all() and np.abs(tr.tau).max() > 1.0  # the weld works


def test_the_sim_judges_impact_floor_finds_the_crash_and_nothing_on_clean_runs():
    """The weld effort is noise-free: without a floor the impact detector flags motion
    starts and grasp onsets (tens of Nm); tiny-vision-streams' ``impact_min_nm`` keeps the
    crash (hundreds of Nm against the table) and nothing else."""
    from judge.bundle.contacts import impact_events
    from judge.config import ContactConfig
    from judge.ensemble.version import load_judge_version

    floored = load_judge_version("tiny-vision-streams").sampling_settings().contacts
    assert floored.impact_min_nm == 300.0
    for task in ("pick-place", "pick-place-wall", "drawer-open", "button-press-topdown",
                 "peg-insert-side"):
        tr, lab, _ = run(task, 101, "none")
        assert lab.success and impact_events(tr.t, tr.qd, tr.tau, floored) == [], task
    tr, _, _ = run("pick-place", 101, "none")
    assert impact_events(tr.t, tr.qd, tr.tau, ContactConfig())  # the defect the floor fixes
    tr, lab, _ = run("pick-place", 101, "crash", trigger_frac=0.4, depth_m=0.1, side=1.0)
    found = impact_events(tr.t, tr.qd, tr.tau, floored)
    assert [e.kind for e in found] == ["impact"]
    assert found[0].t == pytest.approx(at(lab, "impact"), abs=TOL_S)
