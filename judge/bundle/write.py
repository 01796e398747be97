"""Write the MCAP file of a bundle: cameras, joint states, gripper (bundle format v1).

Cameras are ``foxglove.CompressedVideo`` (protobuf) on ``/camera/<name>``; joints
and gripper are ``foxglove.JointStates`` on ``/joint_states`` and ``/gripper``.
Used by the synthetic generator and by ``rcjudge bundle create``.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
from foxglove_schemas_protobuf.CompressedVideo_pb2 import CompressedVideo
from foxglove_schemas_protobuf.JointStates_pb2 import JointStates
from foxglove_schemas_protobuf.Log_pb2 import Log
from google.protobuf.timestamp_pb2 import Timestamp
from mcap_protobuf.schema import build_file_descriptor_set
from mcap_protobuf.writer import Writer, _library_identifier

from judge.bundle.mcap_chunks import ChunkedWriter
from judge.bundle.protowire import compressed_video, joint_blocks, timestamp_field
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

FORMAT_VERSION = "1"


def _ts(ns: int) -> Timestamp:
    return Timestamp(seconds=ns // 1_000_000_000, nanos=ns % 1_000_000_000)


def write_mcap(path: str | Path, cameras: list[VideoPackets], signals: Signals,
               start_ns: int, gripper: dict[str, str] | None = None) -> None:
    """Write one bundle MCAP, messages interleaved in log-time order.

    Args:
        path: output file.
        cameras: one :class:`VideoPackets` per camera.
        signals: joint and gripper streams (times relative to ``start_ns``).
        start_ns: absolute time of t = 0 in nanoseconds since the epoch.
        gripper: the ``rcjudge.gripper`` metadata record (a profile name and/or its
            fields, as strings); none written when not given.
    """
    def at(t: np.ndarray) -> np.ndarray:  # (N,) int64: start_ns + round(t * 1e9), half even
        return start_ns + np.rint(np.asarray(t, dtype=np.float64) * 1e9).astype(np.int64)

    # every message's (time, kind 0 camera / 1 joints / 2 gripper, item): sorted by time,
    # then kind, then as listed (stable)
    parts = [(at(cam.t), 0, c) for c, cam in enumerate(cameras)]
    parts += [(at(signals.t), 1, 0), (at(signals.gripper_t), 2, 0)]
    ns = np.concatenate([p[0] for p in parts])
    kind = np.concatenate([np.full(len(p[0]), p[1]) for p in parts])
    owner = np.concatenate([np.full(len(p[0]), p[2]) for p in parts])
    item = np.concatenate([np.arange(len(p[0])) for p in parts])
    order = np.lexsort((kind, ns))

    pos, vel, eff = (np.asarray(a, dtype=np.float64) for a in
                     (signals.position, signals.velocity, signals.effort))
    gw = np.gradient(signals.gripper_width, signals.gripper_t) if len(signals.gripper_t) > 1 \
        else np.zeros_like(signals.gripper_width)
    joints = joint_blocks(tuple(signals.joint_names), pos, vel, eff)
    fingers = joint_blocks((GRIPPER_JOINT,), *(np.asarray(a, dtype=np.float64).reshape(-1, 1)
                                               for a in (signals.gripper_width, gw,
                                                         signals.gripper_force)))
    topics = [camera_topic(c.name) for c in cameras] + [JOINT_TOPIC, GRIPPER_TOPIC]
    types = [CompressedVideo] * len(cameras) + [JointStates, JointStates]
    # each topic's messages, as listed; then all of them in the order above
    payloads = [[compressed_video(t, cam.name.encode(), d, b"h264")
                 for t, d in zip(parts[c][0].tolist(), cam.data, strict=True)]
                for c, cam in enumerate(cameras)]
    payloads += [[timestamp_field(t) + b for t, b in zip(parts[-2][0].tolist(), joints,
                                                         strict=True)],
                 [timestamp_field(t) + b for t, b in zip(parts[-1][0].tolist(), fingers,
                                                         strict=True)]]
    slot = np.where(kind == 0, owner, len(cameras) + kind - 1)[order]  # (N,) topic index
    times = ns[order].tolist()
    datas = [payloads[s][i] for s, i in zip(slot.tolist(), item[order].tolist(), strict=True)]
    # as mcap_protobuf's Writer: a topic's schema and channel at its first message
    firsts = sorted((int(i), int(s)) for s, i in zip(*np.unique(slot, return_index=True),
                                                     strict=True))
    channel = np.zeros(len(topics), dtype=np.int64)
    with open(path, "wb") as f:
        writer = ChunkedWriter(f)
        writer.start(library=_library_identifier())
        for k, (begin, s) in enumerate(firsts):
            schema = writer.register_schema(
                types[s].DESCRIPTOR.full_name, "protobuf",
                build_file_descriptor_set(types[s]).SerializeToString())
            channel[s] = writer.register_channel(topics[s], "protobuf", schema)
            end = firsts[k + 1][0] if k + 1 < len(firsts) else len(times)
            writer.add_messages(channel[slot[begin:end]].tolist(), times[begin:end],
                                datas[begin:end])
        writer.add_metadata(META_NAME, {
            "format_version": FORMAT_VERSION,
            "cameras": ",".join(c.name for c in cameras),
        })
        if gripper:
            writer.add_metadata(GRIPPER_META, {k: str(v) for k, v in gripper.items()})
        writer.finish()


CONTACTS_TOPIC = "/rcjudge/contacts"
SAMPLED_TOPIC = "/rcjudge/sampled"


#: Contact kinds logged as warnings (in the annotations and the Rerun recording).
ALERT_KINDS = frozenset({"slip", "miss", "impact"})


def contact_text(c) -> str:
    """The line a contact event is logged as (``"grasp t=2.530s (from … to …, peak …)"``)."""
    end = "open" if c.t_end is None else f"{c.t_end:.3f}s"
    return f"{c.kind} t={c.t:.3f}s (from {c.t_start:.3f}s to {end}, peak {c.peak:.2f})"


def write_annotations(path: str | Path, start_ns: int, contacts: list,
                      targets: np.ndarray, shown: np.ndarray, name: str = "rcjudge") -> None:
    """An MCAP of ``foxglove.Log`` annotations on the bundle's clock, to open beside it.

    ``/rcjudge/contacts``: one message per contact event at its time (``"grasp t=2.530s
    …"``, level WARNING for slip/miss/impact); ``/rcjudge/sampled``: one per sampled
    timestamp, saying whether the questions showed it. Foxglove merges several files
    opened together by time, so the events line up with the cameras and signals.
    """
    rows: list[tuple[int, str, Log]] = []
    for c in contacts:
        ns = start_ns + round(c.t * 1e9)
        rows.append((ns, CONTACTS_TOPIC, Log(
            timestamp=_ts(ns), level=Log.WARNING if c.kind in ALERT_KINDS else Log.INFO,
            name=name, message=contact_text(c))))
    shown_set = {int(i) for i in shown}
    order = {int(i): k + 1 for k, i in enumerate(shown)}
    for i, t in enumerate(targets):
        ns = start_ns + round(float(t) * 1e9)
        what = f"shown to the models as image {order[i]}" if i in shown_set else "sampled"
        rows.append((ns, SAMPLED_TOPIC, Log(timestamp=_ts(ns), level=Log.DEBUG, name=name,
                                             message=f"frame t={float(t):.3f}s {what}")))
    rows.sort(key=lambda r: (r[0], r[1]))
    with open(path, "wb") as f:
        writer = Writer(f)
        for ns, topic, msg in rows:
            writer.write_message(topic, msg, log_time=ns, publish_time=ns)
        writer.finish()
