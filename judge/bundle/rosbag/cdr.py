"""Faster CDR decoders for the three messages a bag is made of: JointState, WrenchStamped
and foxglove's CompressedVideo (``sensor_msgs/msg/JointState``,
``geometry_msgs/msg/WrenchStamped``, ``foxglove_msgs/msg/CompressedVideo``).

``rosbags`` deserializes a JointState in ~10 µs, most of it checking and decoding the joint
names, string by string, in every message (a robot publishes the same names at 100 Hz and
more), and a WrenchStamped or CompressedVideo in 3-4 µs through its generic path.
:func:`decoder` returns, for these types, a function that reads a message with ``struct``
and ``numpy`` (a JointState's names read only when their bytes differ from the previous
message's) and builds the same ``rosbags`` objects (``numpy`` arrays over the message's
bytes, as ``rosbags`` gives them). It is used only where it is exactly equivalent: ROS 2
CDR, little-endian, and the bag's definitions of the type and of everything in it
identical to the standard ones. A message it does not read to the byte (a short buffer, a
length past the end, a missing string terminator, more trailing bytes than ``rosbags``
allows) goes to ``rosbags``, which decodes it or names the error as it always does.
``tests/unit/test_rosbag_cdr.py`` compares the two.
"""

from __future__ import annotations

import struct
from collections.abc import Callable
from typing import Any

import numpy as np

JOINT_STATE = "sensor_msgs/msg/JointState"
WRENCH_STAMPED = "geometry_msgs/msg/WrenchStamped"
COMPRESSED_VIDEO = "foxglove_msgs/msg/CompressedVideo"
_F64 = (1, ("float64", 0))
_STRING = (1, ("string", 0))
#: the standard definitions (``rosbags``' ROS 2 stores, foxglove_msgs' .msg), as
#: ``Typestore.fielddefs`` holds them (Nodetype as int)
_STANDARD = {
    "builtin_interfaces/msg/Time": [("sec", (1, ("int32", 0))), ("nanosec", (1, ("uint32", 0)))],
    "std_msgs/msg/Header": [("stamp", (2, "builtin_interfaces/msg/Time")), ("frame_id", _STRING)],
    JOINT_STATE: [("header", (2, "std_msgs/msg/Header")), ("name", (4, (_STRING, 0))),
                  ("position", (4, (_F64, 0))), ("velocity", (4, (_F64, 0))),
                  ("effort", (4, (_F64, 0)))],
    "geometry_msgs/msg/Vector3": [("x", _F64), ("y", _F64), ("z", _F64)],
    "geometry_msgs/msg/Wrench": [("force", (2, "geometry_msgs/msg/Vector3")),
                                 ("torque", (2, "geometry_msgs/msg/Vector3"))],
    WRENCH_STAMPED: [("header", (2, "std_msgs/msg/Header")),
                     ("wrench", (2, "geometry_msgs/msg/Wrench"))],
    COMPRESSED_VIDEO: [("timestamp", (2, "builtin_interfaces/msg/Time")),
                       ("frame_id", _STRING), ("data", (4, ((1, ("uint8", 0)), 0))),
                       ("format", _STRING)],
}
_USES = {JOINT_STATE: ("builtin_interfaces/msg/Time", "std_msgs/msg/Header", JOINT_STATE),
         WRENCH_STAMPED: ("builtin_interfaces/msg/Time", "std_msgs/msg/Header",
                          "geometry_msgs/msg/Vector3", "geometry_msgs/msg/Wrench",
                          WRENCH_STAMPED),
         COMPRESSED_VIDEO: ("builtin_interfaces/msg/Time", COMPRESSED_VIDEO)}
_HEAD = struct.Struct("<iII")  # sec, nanosec, frame_id length
_TIME = struct.Struct("<iI")
_U32 = struct.Struct("<I")
_SIX = struct.Struct("<6d")


def _plain(node: Any) -> Any:
    """A fielddef with its ``Nodetype`` enums as ints, to compare with :data:`_STANDARD`."""
    if isinstance(node, tuple | list):
        return type(node)(_plain(x) for x in node)
    return int(node) if hasattr(node, "value") and isinstance(node.value, int) else node


def is_standard(typestore: Any, msgtype: str) -> bool:
    """True when ``typestore`` defines ``msgtype`` (one of :data:`_USES`) and every type in
    it as the standard definitions do."""
    defs = typestore.fielddefs
    return msgtype in _USES and all(
        t in defs and not defs[t][0] and _plain(list(defs[t][1])) == _STANDARD[t]
        for t in _USES[msgtype])


def decoder(typestore: Any, msgtype: str, fallback: Callable[[Any], Any]
            ) -> Callable[[Any], Any] | None:
    """The fast decoder of ``msgtype`` (CDR bytes -> the ``rosbags`` message), or None
    where there is none or the bag's definition is not the standard one."""
    if not is_standard(typestore, msgtype):
        return None
    make = {JOINT_STATE: _joint_state, WRENCH_STAMPED: _wrench_stamped,
            COMPRESSED_VIDEO: _compressed_video}[msgtype]
    return make(typestore, fallback)


def _string(data: bytes, p: int, n: int) -> tuple[str, int] | None:
    """The CDR string whose length is at ``p`` (4-aligned) and the offset after it."""
    if p + 4 > n:
        return None
    (size,) = _U32.unpack_from(data, p)
    end = p + 4 + size
    if size < 1 or end > n or data[end - 1] != 0:
        return None
    try:
        return data[p + 4:end - 1].decode(), end
    except UnicodeDecodeError:
        return None


def _stamp_and_frame(data: bytes) -> tuple[int, int, str, int] | None:
    """A little-endian CDR message that opens with a time and a string (a Header, or
    foxglove's timestamp and frame id): (sec, nanosec, the string, the offset after it)."""
    n = len(data)
    if n < 16 or data[0] != 0 or data[1] != 1:  # CDR_LE only
        return None
    got = _string(data, 12, n)
    if got is None:
        return None
    sec, nanosec = _TIME.unpack_from(data, 4)
    return sec, nanosec, got[0], got[1]


def _wrench_stamped(typestore: Any, fallback: Callable[[Any], Any]) -> Callable[[Any], Any]:
    T = typestore.types
    time_cls, header_cls = T["builtin_interfaces/msg/Time"], T["std_msgs/msg/Header"]
    vec_cls, wrench_cls, msg_cls = (T[t] for t in _USES[WRENCH_STAMPED][2:])

    def decode(raw: Any) -> Any:
        data = raw if isinstance(raw, bytes) else bytes(raw)
        head = _stamp_and_frame(data)
        if head is None:
            return fallback(raw)
        sec, nanosec, frame, p = head
        n = len(data)
        p += -(p - 4) % 8
        if p + 48 > n or p + 48 + 3 < n:
            return fallback(raw)
        fx, fy, fz, tx, ty, tz = _SIX.unpack_from(data, p)
        return msg_cls(header=header_cls(stamp=time_cls(sec=sec, nanosec=nanosec),
                                         frame_id=frame),
                       wrench=wrench_cls(force=vec_cls(x=fx, y=fy, z=fz),
                                         torque=vec_cls(x=tx, y=ty, z=tz)))

    return decode


def _compressed_video(typestore: Any, fallback: Callable[[Any], Any]) -> Callable[[Any], Any]:
    time_cls, msg_cls = (typestore.types[t] for t in _USES[COMPRESSED_VIDEO])
    most = typestore.max_sequence_length

    def decode(raw: Any) -> Any:
        data = raw if isinstance(raw, bytes) else bytes(raw)
        head = _stamp_and_frame(data)
        if head is None:
            return fallback(raw)
        sec, nanosec, frame, p = head
        n = len(data)
        p += -(p - 4) % 4
        if p + 4 > n:
            return fallback(raw)
        (count,) = _U32.unpack_from(data, p)
        p += 4
        if count > most or p + count > n:
            return fallback(raw)
        payload = np.frombuffer(data, np.uint8, count, p)
        p += count
        got = _string(data, p + -(p - 4) % 4, n)
        if got is None or got[1] + 3 < n:
            return fallback(raw)
        return msg_cls(timestamp=time_cls(sec=sec, nanosec=nanosec), frame_id=frame,
                       data=payload, format=got[0])

    return decode


def _joint_state(typestore: Any, fallback: Callable[[Any], Any]) -> Callable[[Any], Any]:
    types = typestore.types
    time_cls, header_cls, js_cls = (types[t] for t in _USES[JOINT_STATE])
    cache: list = [b"", ()]  # the previous message's name bytes and names
    most = typestore.max_sequence_length

    def decode(raw: Any) -> Any:
        data = raw if isinstance(raw, bytes) else bytes(raw)
        n = len(data)
        if n < 20 or data[0] != 0 or data[1] != 1:  # CDR_LE only
            return fallback(raw)
        sec, nanosec, size = _HEAD.unpack_from(data, 4)
        p = 16 + size  # absolute offsets; CDR aligns from byte 4
        if size < 1 or p + 4 > n or data[p - 1] != 0:
            return fallback(raw)
        frame_id = data[16:p - 1]
        p += -(p - 4) % 4
        if p + 4 > n:
            return fallback(raw)
        block = cache[0]
        if block and data.startswith(block, p):  # the previous message's names, as is
            p += len(block)
        else:
            (count,) = _U32.unpack_from(data, p)
            if count > most:
                return fallback(raw)
            start, p, names = p, p + 4, []
            for _ in range(count):
                p += -(p - 4) % 4
                if p + 4 > n:
                    return fallback(raw)
                (size,) = _U32.unpack_from(data, p)
                p += 4 + size
                if size < 1 or p > n or data[p - 1] != 0:
                    return fallback(raw)
                try:
                    names.append(data[p - size:p - 1].decode())
                except UnicodeDecodeError:
                    return fallback(raw)
            cache[0], cache[1] = data[start:p], tuple(names)
        arrays = []
        for _ in range(3):
            p += -(p - 4) % 4
            if p + 4 > n:
                return fallback(raw)
            (count,) = _U32.unpack_from(data, p)
            p += 4
            if count > most:
                return fallback(raw)
            if count:
                p += -(p - 4) % 8
            if p + 8 * count > n:
                return fallback(raw)
            arrays.append(np.frombuffer(data, np.float64, count, p))
            p += 8 * count
        if p + 3 < n:  # rosbags refuses more than 3 bytes of padding after the message
            return fallback(raw)
        try:
            frame = frame_id.decode()
        except UnicodeDecodeError:
            return fallback(raw)
        return js_cls(header=header_cls(stamp=time_cls(sec=sec, nanosec=nanosec),
                                        frame_id=frame),
                      name=list(cache[1]), position=arrays[0], velocity=arrays[1],
                      effort=arrays[2])

    return decode
