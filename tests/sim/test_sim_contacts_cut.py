"""Physics rollouts cut mid-hold: an episode that starts while the gripper holds the puck
(issue 38, item 8). The hand-checked rollouts of ``test_sim_physics`` (80 Hz), cut halfway
between the grasp and its end (``bench.contacts_eval.cut_episode``): each detector reports
the hold in progress as a grasp at 0 and its end as the physics labels do.
"""

from __future__ import annotations

import pytest

from bench.contacts_eval import cut_episode, mid_hold
from judge.bundle.contacts import detect_contacts
from judge.config import resolve_gripper
from tests.sim.test_sim_physics import run

pytestmark = pytest.mark.sim


def cut_rollout(kind: str, env_seed: int, actuator: bool, **params):
    from judge.bundle.streams import Signals
    from judge.sim.physics import ARM_JOINTS

    tr, lab, _ = run("pick-place", env_seed, kind, **params)
    s = Signals(t=tr.t, joint_names=ARM_JOINTS, position=tr.q, velocity=tr.qd, effort=tr.tau,
                gripper_t=tr.t, gripper_width=tr.width,
                gripper_force=tr.actuator if actuator else tr.grip)
    return cut_episode(s, lab.contacts, mid_hold(lab.contacts))


def found(signals, gripper) -> list[tuple[str, float]]:
    return [(e.kind, round(e.t, 4)) for e in detect_contacts(signals, gripper=gripper)
            if e.kind != "impact"]


def test_a_drop_over_the_goal_cut_mid_hold():
    """Grasp 0.425 s, release 0.6875 s; cut at 0.55625 (the first sample at or after it:
    0.5625), so the release is at 0.125 s. The contact force ends there exactly; the width
    detector dates it where the fingers start to part, one step (12.5 ms) before."""
    signals, truth = cut_rollout("release", 102, False, where="over_goal", goal_frac=0.2)
    assert [(c["kind"], c["t"]) for c in truth] == [("grasp", 0.0), ("release", 0.125)]
    assert found(signals, None) == [("grasp", 0.0), ("release", 0.125)]
    signals, _ = cut_rollout("release", 102, True, where="over_goal", goal_frac=0.2)
    assert found(signals, resolve_gripper({"profile": "sawyer-sim"})) == [
        ("grasp", 0.0), ("release", 0.1125)]


def test_a_weak_grip_slip_cut_mid_hold():
    """Grasp 0.425 s, slip 0.5875 s; cut at 0.50625 (first sample 0.5125): the slip at
    0.075 s. Its fingers spring from 38 to 69 mm and stay: a slip by the gripper's open
    width (100 mm). Read by the force detector with the Sawyer's profile (effort: contact)
    or by the width detector (the actuator, 25 ms late: where the width leaves the band)."""
    signals, truth = cut_rollout("weak_grip", 101, False, effort=0.025, delay_s=0.05)
    assert [(c["kind"], c["t"]) for c in truth] == [("grasp", 0.0), ("slip", 0.075)]
    contact = resolve_gripper({"profile": "sawyer-sim", "effort": "contact"})
    assert found(signals, contact) == [("grasp", 0.0), ("slip", 0.075)]
    signals, _ = cut_rollout("weak_grip", 101, True, effort=0.025, delay_s=0.05)
    assert found(signals, resolve_gripper({"profile": "sawyer-sim"})) == [
        ("grasp", 0.0), ("slip", 0.1)]
