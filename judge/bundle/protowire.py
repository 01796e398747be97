"""The bundle MCAP's protobuf messages as bytes, the same as ``SerializeToString``, in bulk.

:func:`judge.bundle.write.write_mcap` writes a ``foxglove.CompressedVideo`` per camera
frame and a ``foxglove.JointStates`` per joint or gripper sample; building a protobuf
object for each (seven ``JointState`` inside) costs more than the rest of the write. Their
wire format is small and fixed (``foxglove_schemas_protobuf``'s field numbers, checked
at import): ``Timestamp`` seconds and nanos as varints, left out when 0 (implicit
presence); ``CompressedVideo`` frame_id, data and format left out when empty;
``JointState`` name left out when empty, position, velocity and effort always written
(explicit presence: the writer sets them), acceleration never. So every joint sample is
one row of a numpy structured array. ``tests/unit/test_protowire.py`` checks the bytes
against ``SerializeToString`` (zeros, -0.0, NaN, long names, times at 0).
"""

from __future__ import annotations

import numpy as np
from foxglove_schemas_protobuf.CompressedVideo_pb2 import CompressedVideo
from foxglove_schemas_protobuf.JointState_pb2 import JointState
from foxglove_schemas_protobuf.JointStates_pb2 import JointStates

_FIELDS = {
    "CompressedVideo": {"timestamp": 1, "frame_id": 2, "data": 3, "format": 4},
    "JointStates": {"timestamp": 1, "joints": 2},
    "JointState": {"name": 1, "position": 2, "velocity": 3, "acceleration": 4, "effort": 5},
}
for _cls in (CompressedVideo, JointStates, JointState):
    _got = {f.name: f.number for f in _cls.DESCRIPTOR.fields}
    if _got != _FIELDS[_cls.__name__]:  # a schema release that moved a field: fail loudly
        raise ImportError(f"foxglove.{_cls.__name__} fields {_got}; protowire expects "
                          f"{_FIELDS[_cls.__name__]}")


def varint(n: int) -> bytes:
    """``n`` (>= 0) as a protobuf base-128 varint."""
    if n < 0x80:
        return _SMALL[n]
    if n < 0x4000:
        return bytes((n & 0x7F | 0x80, n >> 7))
    out = bytearray()
    while n > 0x7F:
        out.append((n & 0x7F) | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


_SMALL = [bytes((i,)) for i in range(0x80)]
_SECONDS: dict[int, bytes] = {}  # seconds -> their field (a bundle's span is a few thousand)
_NANOS: dict[int, bytes] = {}  # nanoseconds -> their field (fixed rates repeat them each second)


def _field(tag: int, payload: bytes) -> bytes:
    """A length-delimited field (wire type 2)."""
    return bytes([tag << 3 | 2]) + varint(len(payload)) + payload


def timestamp_field(ns: int) -> bytes:
    """Field 1 (``timestamp``) of ``ns`` since the epoch (>= 0): a ``Timestamp``."""
    s, n = divmod(ns, 1_000_000_000)
    head = _SECONDS.get(s)
    if head is None:
        if len(_SECONDS) > 100_000:
            _SECONDS.clear()
        head = _SECONDS[s] = b"\x08" + varint(s) if s else b""
    if n:
        tail = _NANOS.get(n)
        if tail is None:
            if len(_NANOS) > 100_000:
                _NANOS.clear()
            tail = _NANOS[n] = b"\x10" + varint(n)
        body = head + tail
    else:
        body = head
    return b"\x0a" + varint(len(body)) + body


def compressed_video(ns: int, frame_id: bytes, data: bytes, fmt: bytes) -> bytes:
    """``CompressedVideo(timestamp, frame_id, data, format).SerializeToString()``."""
    return b"".join((timestamp_field(ns), _field(2, frame_id) if frame_id else b"",
                     _field(3, data) if data else b"", _field(4, fmt) if fmt else b""))


def joint_blocks(names: tuple[str, ...], position: np.ndarray, velocity: np.ndarray,
                 effort: np.ndarray) -> list[bytes]:
    """Field 2 (``joints``) of each sample: one ``JointState`` per name, per row.

    ``position``, ``velocity``, ``effort``: (M, J) float64; returns M byte strings.
    """
    dtype, heads = [], {}
    for j, name in enumerate(names):
        raw = name.encode()
        inner = (_field(1, raw) if raw else b"")
        size = len(inner) + 3 * 9
        heads[f"h{j}"] = b"\x12" + varint(size) + inner + b"\x11"
        dtype += [(f"h{j}", f"S{len(heads[f'h{j}'])}"), (f"p{j}", "<f8"), (f"tv{j}", "S1"),
                  (f"v{j}", "<f8"), (f"te{j}", "S1"), (f"e{j}", "<f8")]
    rows = np.zeros(len(position), dtype=np.dtype(dtype))  # (M,) one JointStates' joints each
    for j in range(len(names)):
        rows[f"h{j}"] = heads[f"h{j}"]
        rows[f"tv{j}"] = b"\x19"
        rows[f"te{j}"] = b"\x29"
        rows[f"p{j}"] = position[:, j]
        rows[f"v{j}"] = velocity[:, j]
        rows[f"e{j}"] = effort[:, j]
    flat = rows.tobytes()
    width = rows.dtype.itemsize
    return [flat[i * width:(i + 1) * width] for i in range(len(rows))]
