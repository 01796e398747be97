"""``judge.bundle.rosbag.cdr``: its decoders give rosbags' own objects, field for field.

Messages serialized by rosbags' latest ROS 2 store; each is decoded by rosbags and by the
fast decoder and the two compared field by field (arrays by dtype, shape and bits).
"""

from __future__ import annotations

import numpy as np
import pytest
from rosbags.serde import SerdeError
from rosbags.typesys import Stores, get_types_from_msg, get_typestore

from judge.bundle.rosbag.cdr import (
    COMPRESSED_VIDEO,
    JOINT_STATE,
    WRENCH_STAMPED,
    decoder,
    is_standard,
)

STORE = get_typestore(Stores.LATEST)
STORE.register(get_types_from_msg("builtin_interfaces/Time timestamp\nstring frame_id\n"
                                  "uint8[] data\nstring format\n", COMPRESSED_VIDEO))
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

    decode = decoder(STORE, JOINT_STATE, rosbags)
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
    decode = decoder(STORE, JOINT_STATE, lambda raw: STORE.deserialize_cdr(raw, JOINT_STATE))
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


def test_wrench_stamped_and_compressed_video_like_rosbags():
    calls = []

    def rosbags(kind):
        def go(raw):
            calls.append(kind)
            return STORE.deserialize_cdr(raw, kind)
        return go

    vec = T["geometry_msgs/msg/Vector3"]
    time = T["builtin_interfaces/msg/Time"]
    for frame in ("", "ft", "f" * 7):  # every alignment before the 8-aligned doubles
        w = T[WRENCH_STAMPED](
            header=T["std_msgs/msg/Header"](stamp=time(sec=-3, nanosec=9), frame_id=frame),
            wrench=T["geometry_msgs/msg/Wrench"](force=vec(x=1.5, y=-0.0, z=np.nan),
                                                 torque=vec(x=0.0, y=2.0, z=-7.25)))
        raw = bytes(STORE.serialize_cdr(w, WRENCH_STAMPED))
        got = decoder(STORE, WRENCH_STAMPED, rosbags(WRENCH_STAMPED))(raw)
        want = STORE.deserialize_cdr(raw, WRENCH_STAMPED)
        assert repr(got) == repr(want)
        for data, fmt in ((b"", "h264"), (b"\x00\x00\x00\x01\x65", ""), (bytes(301), "av1")):
            v = T[COMPRESSED_VIDEO](timestamp=time(sec=5, nanosec=0), frame_id=frame,
                                    data=np.frombuffer(data, np.uint8), format=fmt)
            raw = bytes(STORE.serialize_cdr(v, COMPRESSED_VIDEO))
            got = decoder(STORE, COMPRESSED_VIDEO, rosbags(COMPRESSED_VIDEO))(raw)
            want = STORE.deserialize_cdr(raw, COMPRESSED_VIDEO)
            assert (got.timestamp, got.frame_id, got.format) == \
                (want.timestamp, want.frame_id, want.format)
            assert got.data.dtype == want.data.dtype and got.data.tobytes() == data
    assert calls == []
    with pytest.raises(SerdeError):  # cut short: rosbags names it
        decoder(STORE, COMPRESSED_VIDEO, rosbags(COMPRESSED_VIDEO))(raw[:-6])
    assert calls == [COMPRESSED_VIDEO]


def test_only_the_standard_definition_is_taken():
    for t in (JOINT_STATE, WRENCH_STAMPED, COMPRESSED_VIDEO):
        assert is_standard(STORE, t)
    other = get_typestore(Stores.EMPTY)  # a bag whose Vector3 is not the standard one
    other.register({**{t: STORE.fielddefs[t] for t in (
        "builtin_interfaces/msg/Time", "std_msgs/msg/Header", JOINT_STATE,
        "geometry_msgs/msg/Wrench", WRENCH_STAMPED)}, **get_types_from_msg(
        "float32 x\nfloat32 y\nfloat32 z\n", "geometry_msgs/msg/Vector3")})
    assert is_standard(other, JOINT_STATE) and not is_standard(other, WRENCH_STAMPED)
    assert decoder(other, WRENCH_STAMPED, print) is None
    assert decoder(STORE, "std_msgs/msg/String", print) is None
