"""``write_mcap``'s file is the one ``mcap_protobuf``'s Writer makes of the same messages.

The reference below is the writer as it was before ``protowire``/``mcap_chunks``: one
protobuf object a message through ``mcap_protobuf.writer.Writer``. Ties in time between
cameras, joints and gripper, a time of exactly 0 ns, zero values, -0.0 and enough data
for several chunks.
"""

from __future__ import annotations

import numpy as np
from foxglove_schemas_protobuf.CompressedVideo_pb2 import CompressedVideo
from foxglove_schemas_protobuf.JointState_pb2 import JointState
from foxglove_schemas_protobuf.JointStates_pb2 import JointStates
from google.protobuf.timestamp_pb2 import Timestamp
from mcap_protobuf.writer import Writer

from judge.bundle.streams import (
    GRIPPER_JOINT,
    GRIPPER_META,
    GRIPPER_TOPIC,
    JOINT_TOPIC,
    META_NAME,
    Signals,
    VideoPackets,
    camera_topic,
)
from judge.bundle.write import FORMAT_VERSION, write_mcap


def _ts(ns: int) -> Timestamp:
    return Timestamp(seconds=ns // 1_000_000_000, nanos=ns % 1_000_000_000)


def reference(path, cameras, signals, start_ns, gripper) -> None:
    events = []
    for cam in cameras:
        for t, data in zip(cam.t, cam.data, strict=True):
            events.append((start_ns + round(float(t) * 1e9), 0, camera_topic(cam.name),
                           (cam.name, data)))
    for i, t in enumerate(signals.t):
        events.append((start_ns + round(float(t) * 1e9), 1, JOINT_TOPIC, i))
    for i, t in enumerate(signals.gripper_t):
        events.append((start_ns + round(float(t) * 1e9), 2, GRIPPER_TOPIC, i))
    events.sort(key=lambda e: (e[0], e[1]))
    gw = np.gradient(signals.gripper_width, signals.gripper_t)
    with open(path, "wb") as f:
        w = Writer(f)
        for ns, kind, topic, payload in events:
            if kind == 0:
                msg = CompressedVideo(timestamp=_ts(ns), frame_id=payload[0], data=payload[1],
                                      format="h264")
            elif kind == 1:
                msg = JointStates(timestamp=_ts(ns), joints=[JointState(
                    name=n, position=signals.position[payload, j],
                    velocity=signals.velocity[payload, j], effort=signals.effort[payload, j])
                    for j, n in enumerate(signals.joint_names)])
            else:
                msg = JointStates(timestamp=_ts(ns), joints=[JointState(
                    name=GRIPPER_JOINT, position=float(signals.gripper_width[payload]),
                    velocity=float(gw[payload]), effort=float(signals.gripper_force[payload]))])
            w.write_message(topic, msg, log_time=ns, publish_time=ns)
        w.add_metadata(META_NAME, {"format_version": FORMAT_VERSION,
                                   "cameras": ",".join(c.name for c in cameras)})
        if gripper:
            w.add_metadata(GRIPPER_META, {k: str(v) for k, v in gripper.items()})
        w.finish()


def test_write_mcap_bytes_equal_the_protobuf_writer(tmp_path):
    rng = np.random.default_rng(3)
    cams = [VideoPackets(name=n, t=np.arange(40) / 10 + off, keyframe=np.zeros(40, bool),
                         data=[rng.bytes(int(rng.integers(1, 90_000))) for _ in range(40)])
            for n, off in (("front", 0.0), ("side", 0.0), ("wrist", 0.05))]
    t = np.arange(200) / 50  # ties with every camera frame
    pos = rng.normal(size=(200, 3))
    pos[0] = [0.0, -0.0, 1.0]
    sig = Signals(t=t, joint_names=("j1", "", "elbow"), position=pos, velocity=pos * 2,
                  effort=np.zeros((200, 3)), gripper_t=t[::2].copy(),
                  gripper_width=np.linspace(0.08, 0.0, 100), gripper_force=np.zeros(100))
    for start_ns, gripper in ((0, None), (1_790_000_000_123_456_789, {"profile": "franka"})):
        want, got = tmp_path / "want.mcap", tmp_path / "got.mcap"
        reference(want, cams, sig, start_ns, gripper)
        write_mcap(got, cams, sig, start_ns, gripper)
        assert got.read_bytes() == want.read_bytes()
