"""Contacts from width + actuator effort: a real gripper's signals, exact event times.

Every stream is 100 Hz. The fingers move at a constant 0.2 m/s (a real gripper's speed
control), the width carries 0.3 mm of noise (seeded), and the actuator effort is 40 N
whenever the fingers are driven — closing, holding, opening, object or not — and 0.5 N
idle. Event times follow the rules in ``judge/bundle/fingers.py``: a grasp at the first
sample at the hold level, a release or slip at the first sample that has left it by more
than ``stop_tol_m`` (1 mm), a miss at the first sample within 4 mm of the closed limit.
"""

from __future__ import annotations

import numpy as np
import pytest

from judge.bundle.contacts import detect_contacts, gripper_events
from judge.bundle.fingers import finger_events
from judge.bundle.streams import Signals
from judge.config import ContactConfig, GripperProfile, gripper_profiles, resolve_gripper
from judge.errors import ConfigError

HZ, OPEN, SPEED, DRIVEN, IDLE = 100, 0.08, 0.2, 40.0, 0.5
JAW = GripperProfile(open_width_m=OPEN, closed_width_m=0.0, width_noise_m=0.0003,
                     effort="actuator", driven_effort=20.0)


def move(w: np.ndarray, t: np.ndarray, t0: float, target: float) -> None:
    """From t0 on, the width heads for ``target`` at SPEED (and stays there)."""
    start = w[np.searchsorted(t, t0) - 1] if t0 > 0 else w[0]
    step = np.sign(target - start) * SPEED * np.clip(t - t0, 0, None)
    m = t >= t0
    w[m] = np.where(np.abs(step[m]) < abs(target - start), start + step[m], target)


def stream(duration: float, plan: list[tuple[float, float]], driven: list[tuple[float, float]],
           seed: int = 0) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(t, width, effort): ``plan`` = [(t0, target width)], ``driven`` = [(from, to)]."""
    t = np.arange(round(duration * HZ) + 1) / HZ
    w = np.full(len(t), OPEN)
    for t0, target in plan:
        move(w, t, t0, target)
    rng = np.random.default_rng(seed)
    effort = np.full(len(t), IDLE)
    for a, b in driven:
        effort[(t >= a) & (t < b)] = DRIVEN
    effort += rng.normal(0, 0.2, len(t))
    return t, w + rng.normal(0, JAW.width_noise_m, len(t)), effort


def events(t, w, e, gripper=JAW):
    return [(ev.kind, round(ev.t, 3)) for ev in finger_events(t, w, e, gripper)]


def test_grasp_transport_release():
    # close at 0.50 from 80 mm onto a 50 mm object: touches at 0.65 and stays there;
    # opens at 2.00 (50 -> 52 mm at 2.01: the first sample 1 mm off the level)
    t, w, e = stream(3.0, [(0.5, 0.05), (2.0, OPEN)], [(0.5, 2.3)])
    assert events(t, w, e) == [("grasp", 0.65), ("release", 2.01)]


def test_grasp_not_at_close_command_although_effort_rises_there():
    # the force detector fed actuator effort fires when the command starts (0.5 s):
    # the bug this module exists for
    t, w, e = stream(3.0, [(0.5, 0.05), (2.0, OPEN)], [(0.5, 2.3)])
    wrong = [(ev.kind, round(ev.t, 2)) for ev in gripper_events(t, w, e, ContactConfig())]
    assert wrong[0] == ("grasp", 0.5)
    assert events(t, w, e)[0] == ("grasp", 0.65)


def test_drop_mid_transport_is_a_slip():
    # held at 50 mm from 0.65; at 1.50 the object drops out and the fingers snap shut
    # (50 -> 0 mm in 40 ms); they reopen at 2.5 with nothing in them: no event
    t, w, e = stream(3.0, [(0.5, 0.05)], [(0.5, 3.0)])
    collapse = (t > 1.5) & (t <= 1.54)
    w[collapse] = 0.05 - 0.05 * (t[collapse] - 1.5) / 0.04
    w[t > 1.54] = 0.0
    move(w, t, 2.5, OPEN)
    w += np.random.default_rng(1).normal(0, JAW.width_noise_m, len(t))
    assert events(t, w, e) == [("grasp", 0.65), ("slip", 1.51)]


def test_miss_closes_fully_then_a_second_try_grasps():
    # closes at 0.505 with nothing between the fingers: 80 -> 0 mm, 3 mm at 0.89 (within
    # 4 mm of the closed limit); effort stays high (pushing on itself); reopens at 1.5;
    # closes again at 2.0 onto the object: touches at 2.15
    t, w, e = stream(4.0, [(0.505, 0.0), (1.5, OPEN), (2.0, 0.05)], [(0.505, 4.1)])
    assert events(t, w, e) == [("miss", 0.89), ("grasp", 2.15)]


def test_fingers_parked_where_commanded_are_not_a_grasp():
    # pre-shape to 40 mm, no object: the actuator stops driving once there (0.7 s)
    t, w, e = stream(2.0, [(0.5, 0.04)], [(0.5, 0.7)])
    assert events(t, w, e) == []
    # the same width with an effort that never drops cannot be told from a grasp
    t, w, e = stream(2.0, [(0.5, 0.04)], [(0.5, 2.1)])
    assert events(t, w, e) == [("grasp", 0.7)]


def test_width_alone_profile_and_contact_profile():
    t, w, e = stream(3.0, [(0.5, 0.05), (2.0, OPEN)], [(0.5, 2.3)])
    width_only = JAW.model_copy(update={"effort": "none"})
    assert events(t, w, np.zeros_like(e), width_only) == [("grasp", 0.65), ("release", 2.01)]
    sig = Signals(t=t, joint_names=("j",), position=np.zeros((len(t), 1)),
                  velocity=np.zeros((len(t), 1)), effort=np.zeros((len(t), 1)),
                  gripper_t=t, gripper_width=w, gripper_force=e)
    contact = JAW.model_copy(update={"effort": "contact"})
    # a contact-force profile, or none, keeps the force detector (existing bundles unchanged)
    assert detect_contacts(sig, gripper=contact) == detect_contacts(sig)
    assert [(c.kind, round(c.t, 2)) for c in detect_contacts(sig, gripper=JAW)] == [
        ("grasp", 0.65), ("release", 2.01)]


def test_profiles_and_metadata_records():
    profiles = gripper_profiles()
    assert {"franka-hand", "robotiq-2f85"} <= set(profiles)
    assert profiles["franka-hand"].open_width_m == 0.08
    assert resolve_gripper(None) is None
    g = resolve_gripper({"profile": "robotiq-2f85", "width_noise_m": "0.001"})
    assert (g.open_width_m, g.width_noise_m, g.effort) == (0.085, 0.001, "actuator")
    with pytest.raises(ConfigError, match=r"rcjudge.gripper: unknown gripper profile 'ur-hand';"
                                          r" known: franka-hand, robotiq-2f85"):
        resolve_gripper({"profile": "ur-hand"})
    with pytest.raises(ConfigError, match=r"rcjudge.gripper: .*closed_width_m must be below "
                                          r"open_width_m"):
        resolve_gripper({"open_width_m": "0.05", "closed_width_m": "0.06", "effort": "none"})


def _synth_signals(outcome: str, actuator: bool):
    from bench.synth import actuator_signals, joint_signals, simulate

    rng = np.random.default_rng(1)
    ro = simulate(rng, outcome, 6.0, 100)
    s = joint_signals(ro, rng)
    return actuator_signals(ro, s, rng) if actuator else s


@pytest.mark.parametrize("outcome", ["success", "grasp.miss", "task.timeout"])
def test_an_actuator_effort_without_a_profile_is_warned_about(outcome):
    from judge.bundle.fingers import gripper_warnings

    (warning,) = gripper_warnings(_synth_signals(outcome, True), None, 3.0)
    assert warning.startswith("no gripper profile, yet /gripper's effort is above 3 on ")
    assert "name the gripper's profile (bundle create --gripper" in warning
    assert gripper_warnings(_synth_signals(outcome, False), None, 3.0) == []  # a contact force
    jaw = resolve_gripper({"profile": "synth-jaw"})
    assert gripper_warnings(_synth_signals(outcome, True), jaw, 3.0) == []


def test_a_width_in_other_units_than_the_profiles_is_warned_about():
    from dataclasses import replace

    from judge.bundle.fingers import gripper_warnings

    s = _synth_signals("success", True)
    mm = replace(s, gripper_width=s.gripper_width * 1000)
    jaw = resolve_gripper({"profile": "synth-jaw"})
    (warning,) = gripper_warnings(mm, jaw, 3.0)
    assert warning.startswith(f"/gripper width reaches {mm.gripper_width.max():g}, beyond the "
                              "profile's open_width_m 0.08 m: is the width in other units")
