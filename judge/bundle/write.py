"""Write the MCAP file of a bundle: cameras, joint states, gripper (bundle format v1).

Cameras are ``foxglove.CompressedVideo`` (protobuf) on ``/camera/<name>``; joints
and gripper are ``foxglove.JointStates`` on ``/joint_states`` and ``/gripper``.
Used by the synthetic generator and by ``rcjudge bundle create``.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
from foxglove_schemas_protobuf.CompressedVideo_pb2 import CompressedVideo
from foxglove_schemas_protobuf.JointState_pb2 import JointState
from foxglove_schemas_protobuf.JointStates_pb2 import JointStates
from foxglove_schemas_protobuf.Log_pb2 import Log
from google.protobuf.timestamp_pb2 import Timestamp
from mcap_protobuf.schema import build_file_descriptor_set
from mcap_protobuf.writer import Writer, _library_identifier

from judge.bundle.mcap_chunks import ChunkedWriter
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
    events: list[tuple[int, int, str, object]] = []
    for cam in cameras:
        topic = camera_topic(cam.name)
        for t, data in zip(cam.t, cam.data, strict=True):
            ns = start_ns + round(float(t) * 1e9)
            events.append((ns, 0, topic, (cam.name, data)))
    for i, t in enumerate(signals.t):
        events.append((start_ns + round(float(t) * 1e9), 1, JOINT_TOPIC, i))
    for i, t in enumerate(signals.gripper_t):
        events.append((start_ns + round(float(t) * 1e9), 2, GRIPPER_TOPIC, i))
    events.sort(key=lambda e: (e[0], e[1]))

    names = signals.joint_names
    pos, vel, eff = (np.asarray(a, dtype=np.float64) for a in
                     (signals.position, signals.velocity, signals.effort))
    gw = np.gradient(signals.gripper_width, signals.gripper_t) if len(signals.gripper_t) > 1 \
        else np.zeros_like(signals.gripper_width)
    # Python floats for protobuf (the same doubles as indexing the arrays)
    pos_l, vel_l, eff_l = pos.tolist(), vel.tolist(), eff.tolist()
    gw_l, gv_l, gf_l = (np.asarray(a, dtype=np.float64).tolist() for a in
                        (signals.gripper_width, gw, signals.gripper_force))
    channels: dict[str, int] = {}
    with open(path, "wb") as f:
        writer = ChunkedWriter(f)
        writer.start(library=_library_identifier())
        for ns, kind, topic, payload in events:
            if kind == 0:
                name, data = payload  # type: ignore[misc]
                msg = CompressedVideo(timestamp=_ts(ns), frame_id=name, data=data, format="h264")
            elif kind == 1:
                i = payload  # type: ignore[assignment]
                msg = JointStates(timestamp=_ts(ns), joints=[
                    JointState(name=n, position=p, velocity=v, effort=e)
                    for n, p, v, e in zip(names, pos_l[i], vel_l[i], eff_l[i], strict=True)])
            else:
                i = payload  # type: ignore[assignment]
                msg = JointStates(timestamp=_ts(ns), joints=[JointState(
                    name=GRIPPER_JOINT, position=gw_l[i], velocity=gv_l[i], effort=gf_l[i])])
            channel = channels.get(topic)
            if channel is None:  # as mcap_protobuf's Writer: a schema and channel per topic
                schema = writer.register_schema(
                    type(msg).DESCRIPTOR.full_name, "protobuf",
                    build_file_descriptor_set(type(msg)).SerializeToString())
                channel = channels[topic] = writer.register_channel(topic, "protobuf", schema)
            writer.add_message(channel, ns, msg.SerializeToString(), ns)
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
