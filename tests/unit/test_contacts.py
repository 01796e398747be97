"""Contact detection on hand-built streams: hysteresis edges, event kinds, exact times."""

from __future__ import annotations

import numpy as np
import pytest

from judge.bundle.contacts import gripper_events, impact_events
from judge.bundle.events import hysteresis, running_median, segments
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


def sim_grip(force: list[float], width_mm: list[float]):
    """80 Hz like the physics rollouts, on the bundle clock: integer ns read back as seconds."""
    t = np.array([round(i * 12.5e6) for i in range(len(force))]) / 1e9
    return t, np.array(width_mm, float) / 1e3, np.array(force, float)


# A weak grip (judge.sim's weak_grip, sim-0009-0000): the fingers, squeezed from 100 mm onto
# a 38 mm puck, are told to hold about where they are; the squeeze fades and the puck drops
# out while the fingers drift open to 63 mm — never back near the 100 mm they closed from.
WEAK_F = [0.0] * 4 + [434.2, 848.1, 1115.8, 1069.8, 788.3, 565.5, 370.6, 273.9, 236.2, 242.7,
                      142.1, 98.1, 50.3, 15.7, 0.7] + [0.0] * 30
WEAK_W = ([100.3, 99.7, 86.5, 56.7, 49.7, 43.5, 39.3, 38.1, 38.8, 40.7, 42.8, 44.7, 46.0, 46.8,
           47.6, 48.8, 50.1, 51.4, 52.6] + [53.7 + 0.33 * k for k in range(30)])


def test_weak_grip_drop_with_fingers_drifting_open_is_a_slip():
    # force onset at sample 4 (0.05 s), below 1 N from sample 18 (0.225 s); over the 20
    # samples (0.25 s) from there the fingers reach 59.6 mm < 90 % of the 100.3 mm they
    # closed from. (They did open 8 mm, which read as a release before.)
    t, w, f = sim_grip(WEAK_F, WEAK_W)
    events = gripper_events(t, w, f, CFG)
    assert [(e.kind, e.t) for e in events] == [("grasp", 0.05), ("slip", 0.225)]


def test_release_needs_the_fingers_back_to_90_percent_within_the_window():
    # the same hold, then the fingers open from 52.6 mm at 4 mm a sample (0.32 m/s): 92.6 mm
    # (>= 0.9 x 100.3 = 90.27) at sample 18 + 10, inside the window of samples 18..37
    opening = [min(100.3, 52.6 + 4.0 * k) for k in range(1, 31)]
    t, w, f = sim_grip(WEAK_F, WEAK_W[:19] + opening)
    assert [(e.kind, e.t) for e in gripper_events(t, w, f, CFG)] == [
        ("grasp", 0.05), ("release", 0.225)]
    # 2 mm a sample: 90.6 mm at sample 18 + 19, the window's last sample
    opening = [52.6 + 2.0 * k for k in range(1, 31)]
    t, w, f = sim_grip(WEAK_F, WEAK_W[:19] + opening)
    assert [e.kind for e in gripper_events(t, w, f, CFG)] == ["grasp", "release"]
    # 1.9 mm a sample: 90.6 mm only at sample 18 + 20, one past the window: a slip
    opening = [52.6 + 1.9 * k for k in range(1, 31)]
    t, w, f = sim_grip(WEAK_F, WEAK_W[:19] + opening)
    assert [e.kind for e in gripper_events(t, w, f, CFG)] == ["grasp", "slip"]


def test_pre_close_width_is_the_widest_since_the_last_contact():
    # closed from 100 mm onto 40 mm, the fingers open only to 60 mm (< 90 mm): a slip by
    # the rule (as the physics labels read it). The second close starts from those 60 mm:
    # opening back to 60 mm (>= 0.9 x 60) after it is a release
    force = [0.0] * 5 + [50.0] * 10 + [0.0] * 15 + [50.0] * 10 + [0.0] * 25
    width = ([100.0] * 5 + [40.0] * 10 + [60.0] * 15 + [40.0] * 10 + [60.0] * 25)
    t, w, f = sim_grip(force, width)
    assert [(e.kind, e.t) for e in gripper_events(t, w, f, CFG)] == [
        ("grasp", 0.0625), ("slip", 0.1875), ("grasp", 0.375), ("release", 0.5)]


def test_contact_of_exactly_min_contact_s_on_the_bundle_clock_counts():
    # the glancing re-contact of sim-0003-0017: above 1 N for 4 samples at 80 Hz, 0.65 to
    # 0.70 s = 0.05 s, which the ns clock reads back as 0.04999999999999993
    force = [0.0] * 52 + [89.7, 95.2, 85.7, 15.8] + [0.0] * 10
    t, w, f = sim_grip(force, [35.0] * 52 + [33.0, 30.5, 28.8, 28.5] + [29.7] * 10)
    assert t[56] - t[52] < 0.05
    assert [(e.kind, e.t) for e in gripper_events(t, w, f, CFG)] == [
        ("grasp", 0.65), ("slip", 0.7)]
    # one sample shorter (0.0375 s) is still a blip
    t, w, f = sim_grip(force[:55] + [0.0] * 11, [35.0] * 66)
    assert gripper_events(t, w, f, CFG) == []


def test_impact_found_at_peak_and_payload_step_ignored():
    rng = np.random.default_rng(0)
    t = np.arange(600) / 100.0
    effort = rng.normal(0.0, 0.05, size=(600, 3))
    effort[300:, 1] += 1.5  # a payload step: no impact
    effort[:, 0] += 8.0 * np.exp(-(((t - 4.2) / 0.02) ** 2))  # a knock at 4.2 s
    events = impact_events(t, np.zeros_like(effort), effort, CFG)
    assert [(e.kind, e.t) for e in events] == [("impact", 4.2)]
    assert events[0].peak > CFG.impact_on_sigma


def test_a_noise_free_effort_needs_the_floor_and_the_floor_is_exclusive():
    """A simulator's effort has no noise: its robust sigma is ~0, so without a floor a 1 Nm
    motion transient reads as an impact of ~1e9 sigmas. With ``impact_min_nm`` a residual
    must also exceed the floor."""
    t = np.arange(600) / 100.0
    effort = np.zeros((600, 2))
    effort[:, 0] += 1.0 * np.exp(-(((t - 1.5) / 0.02) ** 2))  # a 1 Nm transient at 1.5 s
    effort[:, 1] += 400.0 * np.exp(-(((t - 4.2) / 0.02) ** 2))  # a 400 Nm crash at 4.2 s
    qd = np.zeros_like(effort)
    assert [e.t for e in impact_events(t, qd, effort, CFG)] == [1.5, 4.2]
    floored = ContactConfig(impact_min_nm=300.0)
    events = impact_events(t, qd, effort, floored)
    assert [(e.kind, e.t) for e in events] == [("impact", 4.2)]
    assert events[0].peak == pytest.approx(400.0 / (300.0 / 12.0))  # in floored sigmas
    # the crash's residual is 400 Nm less its running median (~0): a floor just under finds it,
    # one just over does not, whatever the sigmas say
    assert len(impact_events(t, qd, effort, ContactConfig(impact_min_nm=399.0))) == 1
    assert impact_events(t, qd, effort, ContactConfig(impact_min_nm=401.0)) == []


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


def test_a_noise_free_effort_reads_in_nm_and_in_sigmas_of_its_own_resolution():
    """A simulator's clean effort (a 100 Nm hold and a 3.5 Nm transient, no noise): its
    robust sigma is 0. The floor is the effort's resolution, 0.1 % of the joint's largest
    |effort| (0.1035 Nm here), not 1e-9 Nm (which read the transient as 3.5e9 sigmas); the
    peak is also given in the channel's unit."""
    t = np.arange(600) / 100.0
    effort = np.zeros((600, 2))
    effort[:, 0] = 100.0 + 3.5 * np.exp(-(((t - 3.0) / 0.02) ** 2))
    events = impact_events(t, np.zeros_like(effort), effort, CFG)
    assert [(e.kind, e.t) for e in events] == [("impact", 3.0)]
    assert events[0].peak == pytest.approx(3.5 / (1e-3 * 103.5), rel=1e-6)  # 33.8 sigmas
    assert events[0].peak_value == pytest.approx(3.5, abs=1e-6) and events[0].unit == "Nm"
    d = events[0].as_dict()
    assert (d["peak"], d["peak_value"], d["unit"]) == (33.82, 3.5, "Nm")


def test_grasp_peaks_are_newtons():
    t = np.arange(100) / 100.0
    force = np.where((t > 0.2) & (t < 0.6), 20.0, 0.0)
    events = gripper_events(t, np.full(100, 0.04), force, CFG)
    assert {(e.kind, e.peak_value, e.unit) for e in events} == {("grasp", 20.0, "N"),
                                                               ("slip", 20.0, "N")}
