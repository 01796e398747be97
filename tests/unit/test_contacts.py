"""Contact detection on hand-built streams: hysteresis edges, event kinds, exact times."""

from __future__ import annotations

import numpy as np
import pytest

from judge.bundle.contacts import (
    gripper_events,
    hysteresis,
    impact_events,
    running_median,
    segments,
)
from judge.config import ContactConfig

CFG = ContactConfig()  # on 3 N, off 1 N, 0.05 s minimum, impacts 12σ / 5σ


def test_hysteresis_holds_between_thresholds():
    x = np.array([0.0, 2.0, 4.0, 2.0, 0.5, 2.0, 4.0, 4.0, 0.9])
    assert hysteresis(x, on=3.0, off=1.0).tolist() == [
        False, False, True, True, False, False, True, True, False]


def test_hysteresis_equality_at_thresholds_does_not_switch():
    # exactly `on` does not start a contact; exactly `off` does not end it
    x = np.array([3.0, 3.5, 1.0, 1.0, 0.99, 3.0])
    assert hysteresis(x, on=3.0, off=1.0).tolist() == [False, True, True, True, False, False]


def test_segments():
    assert segments(np.array([0, 1, 1, 0, 1], bool)) == [(1, 3), (4, 5)]
    assert segments(np.zeros(3, bool)) == []


def test_running_median_edges_and_spike():
    x = np.array([1.0, 1.0, 9.0, 1.0, 2.0, 2.0, 2.0])
    assert running_median(x, 3).tolist() == [1.0, 1.0, 1.0, 2.0, 2.0, 2.0, 2.0]


def grip(force: list[float], width: list[float], hz: float = 100.0):
    t = np.arange(len(force)) / hz
    return t, np.array(width, float), np.array(force, float)


def test_grasp_then_release():
    # force rises at sample 10 (0.10 s), crosses 3 N at 12, opens at 40 (0.40 s)
    force = [0.0] * 10 + [1.5, 2.5, 3.5] + [20.0] * 27 + [0.5] * 20
    width = [0.08] * 10 + [0.05] * 30 + [0.06, 0.07] + [0.08] * 18
    events = gripper_events(*grip(force, width), CFG)
    assert [(e.kind, e.t) for e in events] == [("grasp", 0.10), ("release", 0.40)]
    assert events[0].t_end == 0.40 and events[0].peak == 20.0


def test_slip_when_force_vanishes_without_opening():
    force = [0.0] * 10 + [20.0] * 20 + [0.0] * 20
    width = [0.08] * 10 + [0.05] * 20 + [0.0] * 20
    kinds = [(e.kind, e.t) for e in gripper_events(*grip(force, width), CFG)]
    assert kinds == [("grasp", 0.10), ("slip", 0.30)]


def test_short_blip_ignored_and_open_contact_at_end():
    # 4 samples = 0.04 s < 0.05 s minimum; then a contact still on at the end
    force = [0.0] * 5 + [5.0] * 4 + [0.0] * 5 + [5.0] * 10
    events = gripper_events(*grip(force, [0.05] * len(force)), CFG)
    assert [(e.kind, e.t, e.t_end) for e in events] == [("grasp", 0.14, None)]


def test_impact_found_at_peak_and_payload_step_ignored():
    rng = np.random.default_rng(0)
    t = np.arange(600) / 100.0
    effort = rng.normal(0.0, 0.05, size=(600, 3))
    effort[300:, 1] += 1.5  # a payload step: no impact
    effort[:, 0] += 8.0 * np.exp(-(((t - 4.2) / 0.02) ** 2))  # a knock at 4.2 s
    events = impact_events(t, np.zeros_like(effort), effort, CFG)
    assert [(e.kind, e.t) for e in events] == [("impact", 4.2)]
    assert events[0].peak > CFG.impact_on_sigma


def test_smooth_fast_motion_is_not_an_impact():
    t = np.arange(500) / 100.0
    qd = np.stack([np.sin(2 * np.pi * 1.5 * t)] * 2, axis=1)  # (N, 2) rad/s
    qdd = np.gradient(qd, t, axis=0)
    rng = np.random.default_rng(1)
    effort = 2.0 * qdd + rng.normal(0.0, 0.05, size=qd.shape)  # inertia 2 kg·m²
    assert impact_events(t, qd, effort, CFG) == []


def test_config_rejects_inverted_hysteresis():
    with pytest.raises(ValueError, match="force_off_n must be below force_on_n"):
        ContactConfig(force_on_n=1.0, force_off_n=2.0)


def test_cycle_time_first_to_last_motion():
    from judge.bundle.cycle import cycle_time
    from judge.bundle.streams import Signals

    t = np.arange(11) / 10.0
    vel = np.zeros((11, 2))
    vel[3, 0] = 0.2  # moving at 0.3 s
    vel[8, 1] = -0.06  # and at 0.8 s
    vel[9, 1] = 0.05  # exactly the threshold: not moving
    z = np.zeros(11)
    sig = Signals(t=t, joint_names=("a", "b"), position=vel * 0, velocity=vel, effort=vel * 0,
                  gripper_t=t, gripper_width=z, gripper_force=z)
    assert cycle_time(sig) == pytest.approx(0.5)
    still = Signals(**{**sig.__dict__, "velocity": np.zeros((11, 2))})
    assert cycle_time(still) == pytest.approx(1.0)
