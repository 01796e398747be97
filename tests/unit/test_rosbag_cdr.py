"""``judge.bundle.rosbag.cdr``: the JointState decoder gives rosbags' own objects, byte for byte.

Messages serialized by rosbags' latest ROS 2 store; each is decoded by rosbags and by the
fast decoder and the two compared field by field (arrays by dtype, shape and bits).
"""

from __future__ import annotations

import numpy as np
import pytest
from rosbags.serde import SerdeError
from rosbags.typesys import Stores, get_typestore

from judge.bundle.rosbag.cdr import JOINT_STATE, is_standard, joint_state_decoder

STORE = get_typestore(Stores.LATEST)
T = STORE.types


def js(frame: str, names, pos, vel=(), eff=(), sec=1_790_000_000, nsec=5):
    hdr = T["std_msgs/msg/Header"](stamp=T["builtin_interfaces/msg/Time"](sec=sec, nanosec=nsec),
                                   frame_id=frame)
    return T[JOINT_STATE](header=hdr, name=list(names), position=np.array(pos, float),
                          velocity=np.array(vel, float), effort=np.array(eff, float))


def same(a, b) -> None:
    assert a.header == b.header and a.name == b.name and type(a) is type(b)
    for f in ("position", "velocity", "effort"):
        x, y = getattr(a, f), getattr(b, f)
        assert x.dtype == y.dtype and x.shape == y.shape and x.tobytes() == y.tobytes(), f


def test_decodes_like_rosbags_across_layouts_and_repeated_names():
    calls = []

    def rosbags(raw):
        calls.append(1)
        return STORE.deserialize_cdr(raw, JOINT_STATE)

    decode = joint_state_decoder(STORE, rosbags)
    msgs = [js("base", ["j1", "j2", "f1"], [0.1, -0.0, np.nan], [1, 2, 3], [4, 5, 6]),
            js("base", ["j1", "j2", "f1"], [0.2, 0.3, 0.4], [1, 2, 3], [4, 5, 6], nsec=7),
            js("", ["f1"], [0.5]),                                  # no velocity, no effort
            js("a-longer-frame", [], [], sec=0, nsec=0),            # no joints at all
            js("base", ["ünïcode", "j" * 33], [1.0, 2.0], [], [7.0, 8.0])]
    raws = [bytes(STORE.serialize_cdr(m, JOINT_STATE)) for m in msgs]
    for raw in raws + raws[:2]:  # names changing and coming back
        same(decode(raw), STORE.deserialize_cdr(raw, JOINT_STATE))
    assert calls == []  # every one decoded without rosbags


def test_what_it_does_not_read_to_the_byte_goes_to_rosbags_and_its_error():
    decode = joint_state_decoder(STORE, lambda raw: STORE.deserialize_cdr(raw, JOINT_STATE))
    raw = bytes(STORE.serialize_cdr(js("b", ["j1", "j2"], [1, 2], [3, 4], [5, 6]), JOINT_STATE))
    decode(raw)  # names now cached
    for bad in (raw[:-9], raw[:30], raw + bytes(8), raw[:16] + b"\xff" + raw[17:]):
        with pytest.raises(SerdeError):
            STORE.deserialize_cdr(bad, JOINT_STATE)
        with pytest.raises(SerdeError):
            decode(bad)
    big = b"\x00\x00" + raw[2:]  # a big-endian header: rosbags decodes (and refuses) it
    with pytest.raises(SerdeError, match="Invalid string length 33554432 at offset 8"):
        decode(big)


def test_only_the_standard_definition_is_taken():
    assert is_standard(STORE)
    other = get_typestore(Stores.EMPTY)
    assert not is_standard(other)
