"""The bundle MCAP's protobuf bytes (``judge.bundle.protowire``) against ``SerializeToString``."""

from __future__ import annotations

import numpy as np
from foxglove_schemas_protobuf.CompressedVideo_pb2 import CompressedVideo
from foxglove_schemas_protobuf.JointState_pb2 import JointState
from foxglove_schemas_protobuf.JointStates_pb2 import JointStates
from google.protobuf.timestamp_pb2 import Timestamp

from judge.bundle.protowire import compressed_video, joint_blocks, timestamp_field, varint


def _ts(ns: int) -> Timestamp:
    return Timestamp(seconds=ns // 1_000_000_000, nanos=ns % 1_000_000_000)


def test_varint_edges():
    assert varint(0) == b"\x00"
    assert varint(127) == b"\x7f"
    assert varint(128) == b"\x80\x01"
    assert varint(300) == b"\xac\x02"


def test_compressed_video_matches_protobuf_at_zero_times_and_empty_fields():
    cases = [(0, b"", b"", b""), (5, b"front", b"\x00\x00\x01\x65", b"h264"),
             (1_790_000_000_000_000_000, b"w" * 200, bytes(range(256)) * 40, b"h264"),
             (3 * 1_000_000_000, b"side", b"x", b"")]
    for ns, fid, data, fmt in cases:
        want = CompressedVideo(timestamp=_ts(ns), frame_id=fid.decode(), data=data,
                               format=fmt.decode()).SerializeToString()
        assert compressed_video(ns, fid, data, fmt) == want, (ns, fid[:8], fmt)


def test_joint_states_match_protobuf_with_zeros_negative_zero_nan_and_long_names():
    names = ("a", "", "j" * 150, "panda_joint7")
    values = np.array([[0.0, -0.0, np.nan, 1e300], [-1.5, 2.25, np.inf, -np.inf]])  # (2, 4)
    blocks = joint_blocks(names, values, values[::-1].copy(), values * 3)
    assert len(blocks) == 2
    for i, ns in enumerate((0, 1_790_000_000_123_456_789)):
        want = JointStates(timestamp=_ts(ns), joints=[
            JointState(name=n, position=float(values[i, j]), velocity=float(values[1 - i, j]),
                       effort=float(values[i, j] * 3)) for j, n in enumerate(names)])
        assert timestamp_field(ns) + blocks[i] == want.SerializeToString()
