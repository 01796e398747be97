"""Signals: JointState, gripper and F/T messages of one episode -> the bundle's ``Signals``.

Pure numpy over decoded messages. Rules (``docs/rosbag.md``):

* arm joints: the samples are the times of the JointState messages that carry any arm
  joint; messages with the same time are merged, and a joint a message leaves out keeps its
  latest value (partial messages: arm and fingers published apart). Samples before every arm
  joint has had a value are dropped. Velocity and effort are the messages' own when every
  message has them, else velocity derived (``numpy.gradient``) and effort 0 (noted);
* gripper width: the named joints' positions summed (or the named field), then
  ``offset + scale * x``; gripper effort likewise (efforts summed); an F/T sensor's force,
  when mapped, is the gripper channel's effort instead (``effort: contact``);
* the gripper channel's times are its densest input's; the others are held (their latest
  reading at or before each time, the first one before it starts).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from judge.bundle.rosbag.bag import field as get_field
from judge.bundle.rosbag.mapping import Force, Mapping, RosbagError, Value
from judge.bundle.rosbag.timing import seconds
from judge.bundle.streams import Signals


@dataclass
class Series:
    """Messages of one topic in one episode: times and the decoded messages."""

    topic: str
    t_ns: np.ndarray  # (N,) int64 chosen times
    stamp_ns: np.ndarray  # (N,) int64, 0 where none
    log_ns: np.ndarray  # (N,) int64
    msgs: list = field(default_factory=list)


def _hold(src_t: np.ndarray, src_v: np.ndarray, at: np.ndarray) -> np.ndarray:
    """Latest value of ``src_v`` at or before each time of ``at`` (the first before it)."""
    i = np.searchsorted(src_t, at, side="right") - 1
    return src_v[np.clip(i, 0, len(src_t) - 1)]


def _joint_table(s: Series, names: list[str], what: str, where: str,
                 ) -> tuple[np.ndarray, dict[str, np.ndarray], bool, bool]:
    """Times carrying any of ``names`` and each joint's held position/velocity/effort.

    Returns (t_ns (M,), {"position"|"velocity"|"effort": (M, J)}, all had velocity, all
    had effort); the leading samples before every joint had a value are dropped.
    """
    rows: dict[int, dict[str, tuple[float, float | None, float | None]]] = {}
    has_vel = has_eff = True
    last: dict[str, tuple[int, int]] = {}  # joint -> (time, message index) of its latest
    for i, (t, m) in enumerate(zip(s.t_ns.tolist(), s.msgs, strict=True)):
        mnames = list(m.name)
        if not set(mnames) & set(names):
            continue
        for n in set(mnames) & set(names):
            if n in last and t <= last[n][0]:
                raise RosbagError(f"{where}: topic {s.topic}: timestamps out of order for "
                                  f"joint {n}: message {i} at {seconds(t)} s is not after "
                                  f"message {last[n][1]} at {seconds(last[n][0])} s")
            last[n] = (t, i)
        pos, vel, eff = list(m.position), list(m.velocity), list(m.effort)
        has_vel &= len(vel) == len(mnames)
        has_eff &= len(eff) == len(mnames)
        row = rows.setdefault(t, {})
        for k, n in enumerate(mnames):
            if n in names:
                row[n] = (float(pos[k]), float(vel[k]) if k < len(vel) else None,
                          float(eff[k]) if k < len(eff) else None)
    if not rows:
        raise RosbagError(f"{where}: no message on {s.topic} names any of the {what} joints "
                          f"{', '.join(names)}")
    times = np.array(sorted(rows), dtype=np.int64)
    out = np.full((3, len(times), len(names)), np.nan)  # (3, M, J): position, velocity, effort
    for r, t in enumerate(times.tolist()):
        for j, n in enumerate(names):
            if n in rows[t]:
                out[:, r, j] = [np.nan if v is None else v for v in rows[t][n]]
    seen = ~np.isnan(out[0])  # (M, J)
    never = [n for j, n in enumerate(names) if not seen[:, j].any()]
    if never:
        raise RosbagError(f"{where}: {s.topic} never carries {what} joint(s) {', '.join(never)}")
    for j in range(len(names)):  # hold each joint's latest value forward
        idx = np.where(seen[:, j], np.arange(len(times)), 0)
        np.maximum.accumulate(idx, out=idx)
        out[:, :, j] = out[:, idx, j]
    first = int(np.max(np.argmax(seen, axis=0)))
    return times[first:], {"position": out[0, first:], "velocity": out[1, first:],
                           "effort": out[2, first:]}, has_vel, has_eff


def value_series(v: Value, s: Series, kind: str, where: str) -> tuple[np.ndarray, np.ndarray]:
    """(t_ns, value) of a gripper width (``kind="position"``) or effort (``"effort"``)."""
    if v.joints is not None:
        t, table, _, has_eff = _joint_table(s, v.joints, f"gripper {kind}", where)
        if kind == "effort" and not has_eff:
            raise RosbagError(f"{where}: {s.topic}: gripper effort from joints "
                              f"{', '.join(v.joints)}, but its messages carry no effort")
        x = table[kind].sum(axis=1)
    else:
        if not len(s.msgs):
            raise RosbagError(f"{where}: {s.topic} has no message in the episode")
        t = s.t_ns
        x = np.array([float(get_field(m, str(v.field), f"{where}: {s.topic}")) for m in s.msgs])
    return t, v.offset + v.scale * x


def force_series(f: Force, s: Series, where: str) -> tuple[np.ndarray, np.ndarray]:
    """(t_ns, N) of an F/T sensor: ``|F|`` or one axis, less the first reading (tare)."""
    if not len(s.msgs):
        raise RosbagError(f"{where}: {s.topic} has no message in the episode")
    xyz = np.array([[m.wrench.force.x, m.wrench.force.y, m.wrench.force.z]
                    for m in s.msgs], dtype=np.float64)  # (N, 3)
    if f.tare:
        xyz = xyz - xyz[0]
    value = np.linalg.norm(xyz, axis=1) if f.component == "norm" \
        else xyz[:, "xyz".index(f.component)]
    return s.t_ns, value


def build_signals(mapping: Mapping, series: dict[str, Series], t0_ns: int, where: str,
                  ) -> tuple[Signals, list[str]]:
    """The bundle's joint and gripper streams (times in s from ``t0_ns``); notes."""
    notes: list[str] = []
    js = series[mapping.joints.topic]
    t, table, has_vel, has_eff = _joint_table(js, mapping.joints.names, "arm", where)
    ts = (t - t0_ns) / 1e9
    if len(ts) < 2:
        raise RosbagError(f"{where}: {js.topic} has {len(ts)} arm joint sample(s) in the "
                          "episode; a bundle needs at least 2")
    velocity = table["velocity"] if has_vel else np.gradient(table["position"], ts, axis=0)
    if not has_vel:
        notes.append(f"{js.topic}: velocity derived (numpy.gradient of position)")
    effort = table["effort"] if has_eff else np.zeros_like(table["position"])
    if not has_eff:
        notes.append(f"{js.topic}: effort absent, written as 0")
    g = mapping.gripper
    wt, width = value_series(g.width, series[g.width.topic or js.topic], "position", where)
    parts = [(wt, width)]
    if mapping.force is not None:
        parts.append(force_series(mapping.force, series[mapping.force.topic], where))
    elif g.effort is not None:
        parts.append(value_series(g.effort, series[g.effort.topic or js.topic], "effort", where))
    base = max(parts, key=lambda p: len(p[0]))[0]  # the densest input's times
    width_at = _hold(wt, width, base)
    effort_at = _hold(*parts[1], base) if len(parts) > 1 else np.zeros(len(base))
    return Signals(t=ts, joint_names=tuple(mapping.joints.names), position=table["position"],
                   velocity=velocity, effort=effort, gripper_t=(base - t0_ns) / 1e9,
                   gripper_width=width_at, gripper_force=effort_at), notes
