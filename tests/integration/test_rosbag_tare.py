"""An F/T sensor's tare when the episode starts mid-grasp (issue 38, item 8), real bags.

``bench.bagsynth`` records a wrist F/T sensor reading a constant bias (0.4, -0.3, 5.0) N
plus 12 N along z while the fingers hold the object, and the fingers at 80 mm (open) or
40 mm (holding). Cut so that the episode starts inside a hold, a tare at the episode's first
reading subtracts the held object with the bias: the hold reads 0 N, the release
|(0, 0, -12)| = 12 N (a "grasp" at the true release) and the next grasp 0 N (a "slip" at the
true grasp). The tare is the reading while the fingers are open: nothing is held then.
"""

from __future__ import annotations

import pytest

from bench.bagsynth import START_NS, BagSpec, write_bag
from judge.bundle.decode import load_streams
from judge.bundle.inspect import format_report, inspect_bundle
from judge.bundle.intake import intake
from judge.bundle.rosbag import import_bag
from tests.integration.test_rosbag import mapping_file

# holds 0.5-1.8 s and 2.4-3.2 s of the bag; the episode is 1.0-3.9 s: it starts mid-hold
SPEC = BagSpec(seconds=4.0, contacts=[(0.5, 1.8), (2.4, 3.2)])
RANGE = [1.0, 3.9]


@pytest.mark.parametrize("storage", ["mcap", "ros1"])
def test_an_episode_starting_mid_hold_is_tared_at_the_open_gripper(storage, tmp_path):
    bag = write_bag(tmp_path / ("b.bag" if storage == "ros1" else "b"), storage, SPEC)
    m = mapping_file(tmp_path, episodes={"cut": "ranges", "ranges": [RANGE]})
    (row,) = import_bag(bag, m, tmp_path / "out")
    s = load_streams(intake(row["bundle"])).signals
    # bundle time 0 is the episode's first message: t0_ns, from the bag's first log time
    # (START_NS + 0.5 ms, an F/T message); recording time r is bundle time r - zero
    zero = (row["cut"]["t0_ns"] - START_NS) / 1e9
    assert 1.0 <= zero < 1.01
    r = s.gripper_t + zero
    held = s.gripper_force[r < 1.75]  # holding since 0.5 s
    assert held.min() == pytest.approx(12.0) and held.max() == pytest.approx(12.0)
    free = s.gripper_force[(r > 2.0) & (r < 2.35)]  # open
    assert abs(free).max() == pytest.approx(0.0, abs=1e-9)
    report = inspect_bundle(row["bundle"])
    found = [(c["kind"], c["t"]) for c in report["contacts"] if c["kind"] != "impact"]
    # the hold in progress at the start (a grasp at 0), its release at 1.8 s of the
    # recording, the next grasp at 2.4 s and its release at 3.2 s; F/T readings every 10 ms
    assert [k for k, _ in found] == ["grasp", "release", "grasp", "release"]
    for (_, t), want in zip(found, [0.0, 1.8 - zero, 2.4 - zero, 3.2 - zero], strict=True):
        assert t == pytest.approx(want, abs=0.011)
    text = format_report(report)
    assert "gripper:   profile=franka-hand, effort=contact" in text
    assert "contacts:  4 from the force detector (/gripper effort as a finger-object force)" in text
    assert "width + effort" not in text
    assert not [n for n in row["notes"] if "/ft/wrench" in n]  # tared in the episode itself
