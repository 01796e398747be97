"""The pure parts of ``import rosbag``: JointState merging, held values, timing reports.

Messages are rosbags' own ``sensor_msgs/msg/JointState`` objects (its latest ROS 2 store),
built in the test; every expected number is worked out by hand.
"""

from __future__ import annotations

import numpy as np
import pytest
from rosbags.typesys import Stores, get_typestore

from judge.bundle.rosbag.mapping import Mapping, RosbagError
from judge.bundle.rosbag.signals import Series, build_signals
from judge.bundle.rosbag.timing import chosen, report, seconds

STORE = get_typestore(Stores.LATEST)
T = STORE.types
S = 1_000_000_000


def js(names, pos, vel=(), eff=()):
    hdr = T["std_msgs/msg/Header"](stamp=T["builtin_interfaces/msg/Time"](sec=0, nanosec=0),
                                   frame_id="")
    return T["sensor_msgs/msg/JointState"](header=hdr, name=list(names),
                                           position=np.array(pos, float),
                                           velocity=np.array(vel, float),
                                           effort=np.array(eff, float))


def series(rows):
    t = np.array([r[0] for r in rows], dtype=np.int64)
    return Series("/js", t, t.copy(), t.copy(), [r[1] for r in rows])


MAP = Mapping.model_validate({
    "cameras": {"front": "/a", "side": "/b", "wrist": "/c"},
    "joints": {"topic": "/js", "names": ["j1", "j2"]},
    "gripper": {"profile": "franka-hand", "width": {"joints": ["f1", "f2"], "scale": 2.0,
                                                    "offset": 0.01}},
})


def test_partial_messages_merge_hold_and_drop_the_lead():
    s = series([
        (0, js(["j1"], [1.0])),                    # j2 never seen yet: dropped
        (1 * S // 10, js(["j2", "f1", "f2"], [2.0, 0.01, 0.02])),
        (1 * S // 10, js(["j1"], [1.5])),          # same time: merged into one sample
        (2 * S // 10, js(["j1"], [1.7])),          # j2 held at 2.0
        (3 * S // 10, js(["j2", "f1", "f2"], [2.5, 0.03, 0.03])),
    ])
    sig, notes = build_signals(MAP, {"/js": s}, t0_ns=0, where="bag")
    np.testing.assert_allclose(sig.t, [0.1, 0.2, 0.3])
    np.testing.assert_allclose(sig.position, [[1.5, 2.0], [1.7, 2.0], [1.7, 2.5]])
    # velocity derived: np.gradient over (0.1, 0.2, 0.3): j1 (0.2/0.1, 0.2/0.2, 0/0.1)
    np.testing.assert_allclose(sig.velocity[:, 0], [2.0, 1.0, 0.0])
    assert np.all(sig.effort == 0)
    assert notes == ["/js: velocity derived (numpy.gradient of position)",
                     "/js: effort absent, written as 0"]
    # gripper: the finger messages' times; width = 0.01 + 2 * (f1 + f2)
    np.testing.assert_allclose(sig.gripper_t, [0.1, 0.3])
    np.testing.assert_allclose(sig.gripper_width, [0.07, 0.13])
    np.testing.assert_allclose(sig.gripper_force, [0.0, 0.0])


def test_a_joint_going_back_in_time_is_refused():
    s = series([(2 * S, js(["j1", "j2", "f1", "f2"], [0, 0, 0, 0])),
                (1 * S, js(["j1"], [0]))])
    with pytest.raises(RosbagError, match=r"bag: topic /js: timestamps out of order for joint "
                       r"j1: message 1 at 1\.000000000 s is not after message 0 at "
                       r"2\.000000000 s"):
        build_signals(MAP, {"/js": s}, 0, "bag")


def test_a_joint_never_published_is_refused():
    s = series([(0, js(["j1", "f1", "f2"], [0, 0, 0])), (S, js(["j1"], [0]))])
    with pytest.raises(RosbagError, match="bag: /js never carries arm joint"):
        build_signals(MAP, {"/js": s}, 0, "bag")


def test_timing_report_drops_jumps_and_stop():
    # 10 Hz; message 3 missing (a 0.2 s gap); from message 6 on the stamps jump +2 s
    stamp = np.array([0, 1, 2, 4, 5, 6, 27, 28], dtype=np.int64) * S // 10
    log = np.array([0, 1, 2, 4, 5, 6, 7, 8], dtype=np.int64) * S // 10 + S // 100
    r = report(chosen(stamp, log), stamp, log, end_ns=10 * S, t0_ns=0)
    assert r["rate_hz"] == 10.0 and r["from_log_time"] == 1  # message 0's stamp is 0
    assert r["dropped"] == 1 and r["gaps"] == [[0.2, 0.2]]
    assert r["clock_jumps"] == [[2.7, 2.0]]
    assert r["stopped_at"] == 2.8  # the episode goes on to 10 s
    assert seconds(1_790_000_000_000_000_001) == "1790000000.000000001"
