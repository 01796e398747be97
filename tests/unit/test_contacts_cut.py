"""Episodes that start mid-grasp: a hold already on at the first sample (issue 38, item 8).

A recording cut by episode markers or ranges can start while the fingers hold the object.
The detectors must read that hold from what they see at the start — the force already
above its on-threshold, the fingers at rest between their limits, the actuator driving —
and find how it ends: no hold of the episode's first instant may be lost (the width
detector lost it, and read the fingers closing after a slip as a miss), and its end is a
release or a slip by the gripper's open state, not by the hold width it starts at.
"""

from __future__ import annotations

import numpy as np
import pytest

from bench.contacts_eval import cut_episode, mid_hold
from judge.bundle.contacts import detect_contacts, gripper_events
from judge.config import ContactConfig, GripperProfile, resolve_gripper

CFG = ContactConfig()


def synth_cut(outcome: str, seed: int, actuator: bool):
    """A bench.synth rollout (100 Hz) cut halfway through its hold: (signals, truth)."""
    from bench.synth import actuator_signals, joint_signals, simulate

    rng = np.random.default_rng([5, seed])
    ro = simulate(rng, outcome, 6.0, 100)
    s = joint_signals(ro, rng)
    if actuator:
        s = actuator_signals(ro, s, rng)
    contacts = ro.truth["contacts"]
    return cut_episode(s, contacts, mid_hold(contacts))


def gripper_kinds(events) -> list[tuple[str, float]]:
    return [(e.kind, round(e.t, 3)) for e in events if e.kind != "impact"]


@pytest.mark.parametrize("outcome", ["success", "grasp.slip"])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_a_synthetic_episode_cut_mid_hold_keeps_the_hold_and_its_end(outcome, seed):
    """Each detector reports the hold in progress as a grasp at 0 and its end within one
    sample of the truth (the contact force: at the truth exactly but for a slip's 30 ms
    ramp; the width: where the fingers leave the hold level). Before: the width detector
    found nothing after a release, and a miss instead of the slip."""
    for actuator, gripper in ((False, None), (True, resolve_gripper({"profile": "synth-jaw"}))):
        signals, truth = synth_cut(outcome, seed, actuator)
        found = gripper_kinds(detect_contacts(signals, CFG, gripper))
        assert [k for k, _ in found] == [c["kind"] for c in truth], (actuator, found, truth)
        assert found[0] == ("grasp", 0.0)
        assert abs(found[1][1] - truth[1]["t"]) <= 0.05, (actuator, found, truth)


def grip(force: list[float], width: list[float], hz: float = 100.0):
    t = np.arange(len(force)) / hz
    return t, np.array(width, float), np.array(force, float)


def test_a_hold_already_on_ends_as_release_or_slip_by_the_open_gripper():
    """On from the first sample at 50 mm; the force vanishes at 0.30 s and the fingers
    spring open to 65 mm (a weak grip's object sliding out) or open to 80 mm. The width
    they closed from is not in the episode: the gripper's open state stands in for it —
    the profile's open width (80 mm) when the bundle names one, else the widest the fingers
    are in the episode. Before, the hold's own width (50 mm) stood in, and 65 mm read as a
    release."""
    force = [20.0] * 30 + [0.0] * 30
    sprung = [0.05] * 30 + [0.065] * 30
    opened = [0.05] * 30 + [0.08] * 30
    # no profile: the widest in the episode; here the fingers open fully later (at 0.7 s,
    # after the 0.25 s window)
    later = [0.05] * 30 + [0.065] * 40 + [0.08] * 10
    assert [(e.kind, e.t) for e in gripper_events(*grip(force + [0.0] * 20, later), CFG)] == [
        ("grasp", 0.0), ("slip", 0.3)]
    contact = GripperProfile(open_width_m=0.08, effort="contact")
    assert [(e.kind, e.t) for e in gripper_events(*grip(force, sprung), CFG,
                                                  open_width=contact.open_width_m)] == [
        ("grasp", 0.0), ("slip", 0.3)]
    assert [(e.kind, e.t) for e in gripper_events(*grip(force, opened), CFG,
                                                  open_width=contact.open_width_m)] == [
        ("grasp", 0.0), ("release", 0.3)]
    # through detect_contacts, a contact profile's open width is the one used
    from judge.bundle.streams import Signals

    t, w, f = grip(force, sprung)
    z = np.zeros((len(t), 1))
    sig = Signals(t=t, joint_names=("j",), position=z, velocity=z, effort=z, gripper_t=t,
                  gripper_width=w, gripper_force=f)
    assert gripper_kinds(detect_contacts(sig, CFG, contact)) == [("grasp", 0.0), ("slip", 0.3)]


def test_the_width_detector_reads_a_hold_at_the_start_only_where_the_fingers_hold():
    """At rest at 50 mm from the first sample, actuator driven (40 N): a hold, released at
    1.00 s (the fingers open at 0.2 m/s: 52 mm at 1.01 s, the first sample 1 mm off the
    level). The same fingers at rest but not driven (0.5 N: parked where commanded), fully
    open, or at the closed limit hold nothing."""
    hz, jaw = 100, resolve_gripper({"profile": "synth-jaw"})
    t = np.arange(201) / hz
    w = np.where(t < 1.0, 0.05, np.minimum(0.05 + 0.2 * (t - 1.0), 0.08))
    driven = np.full(len(t), 40.0)
    from judge.bundle.fingers import finger_events

    assert [(e.kind, round(e.t, 3)) for e in finger_events(t, w, driven, jaw)] == [
        ("grasp", 0.0), ("release", 1.01)]
    idle = np.full(len(t), 0.5)
    assert finger_events(t, w, idle, jaw) == []
    assert finger_events(t, np.full(len(t), 0.08), driven, jaw) == []
    assert finger_events(t, np.full(len(t), 0.001), driven, jaw) == []
