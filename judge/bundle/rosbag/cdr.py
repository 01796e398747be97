"""A faster CDR decoder for ``sensor_msgs/msg/JointState``, the costliest message of a bag.

``rosbags`` deserializes a JointState in ~25 µs, most of it checking and decoding the
joint names, string by string, in every message; a robot publishes the same names at
100 Hz and more. :func:`joint_state_decoder` returns a decoder that reads a message's
header, names and arrays with ``struct``/``numpy`` and reads the names (their count and
strings) only when their bytes differ from the previous message's, and builds the same
``rosbags`` objects
(``sensor_msgs/msg/JointState`` with its ``std_msgs/msg/Header``). It is used only where
it is exactly equivalent: ROS 2 CDR, little-endian, and the bag's definition of the type
identical to the standard one. A message it does not read to the byte (a short buffer,
a length past the end, a missing string terminator, trailing bytes ``rosbags`` refuses)
goes to ``rosbags``, which decodes it or names the error as it always does.
"""

from __future__ import annotations

import struct
from collections.abc import Callable
from typing import Any

import numpy as np

JOINT_STATE = "sensor_msgs/msg/JointState"
#: the standard definitions (``rosbags``' ROS 2 stores), as ``Typestore.fielddefs`` holds them
_STANDARD = {
    "builtin_interfaces/msg/Time": [("sec", (1, ("int32", 0))), ("nanosec", (1, ("uint32", 0)))],
    "std_msgs/msg/Header": [("stamp", (2, "builtin_interfaces/msg/Time")),
                            ("frame_id", (1, ("string", 0)))],
    JOINT_STATE: [
        ("header", (2, "std_msgs/msg/Header")), ("name", (4, ((1, ("string", 0)), 0))),
        ("position", (4, ((1, ("float64", 0)), 0))), ("velocity", (4, ((1, ("float64", 0)), 0))),
        ("effort", (4, ((1, ("float64", 0)), 0)))],
}
_HEAD = struct.Struct("<iII")  # sec, nanosec, frame_id length
_U32 = struct.Struct("<I")


def _plain(node: Any) -> Any:
    """A fielddef with its ``Nodetype`` enums as ints, to compare with :data:`_STANDARD`."""
    if isinstance(node, tuple | list):
        return type(node)(_plain(x) for x in node)
    return int(node) if hasattr(node, "value") and isinstance(node.value, int) else node


def is_standard(typestore: Any) -> bool:
    """True when ``typestore`` defines JointState, Header and Time as ROS 2 does."""
    defs = typestore.fielddefs
    return all(t in defs and _plain(list(defs[t][1])) == fields and not defs[t][0]
               for t, fields in _STANDARD.items())


def joint_state_decoder(typestore: Any, fallback: Callable[[bytes], Any]) -> Callable[[Any], Any]:
    """A function: CDR bytes of a JointState -> the ``rosbags`` message (see the module)."""
    types = typestore.types
    time_cls, header_cls, js_cls = (types[t] for t in _STANDARD)
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
