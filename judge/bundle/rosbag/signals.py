"""Signals: JointState, gripper and F/T messages of one episode -> the bundle's ``Signals``.

Pure numpy over decoded messages. Rules (``docs/rosbag.md``):

* arm joints: the samples are the times of the JointState messages that carry any arm
  joint; messages with the same time are merged, and a joint a message leaves out keeps its
  latest value (partial messages: arm and fingers published apart). Samples before every arm
  joint has had a value are dropped. Velocity and effort are the messages' own when every
  message has them, else velocity derived (``numpy.gradient``) and effort 0 (noted);
* gripper width: the named joints' positions summed (or the named field), then
  ``offset + scale * x``; gripper effort likewise (efforts summed); an F/T sensor's force,
  when mapped, is the gripper channel's effort instead (``effort: contact``), tared at its
  readings with the fingers open (:func:`rest_reading`), not at the episode's first (which
  an episode cut mid-grasp takes with the object held);
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
    layouts: list | None = field(default=None, repr=False)  # JointState only: _layouts


def _hold(src_t: np.ndarray, src_v: np.ndarray, at: np.ndarray) -> np.ndarray:
    """Latest value of ``src_v`` at or before each time of ``at`` (the first before it)."""
    i = np.searchsorted(src_t, at, side="right") - 1
    return src_v[np.clip(i, 0, len(src_t) - 1)]


def _layouts(s: Series) -> list[tuple[tuple, np.ndarray, list[np.ndarray]]]:
    """The series' JointState messages grouped by layout (names, and the lengths of
    position, velocity, effort): each group's message indices and its three arrays stacked
    ((n, len) float64 each). Computed once per series (arm and gripper both read it)."""
    if s.layouts is None:
        groups: dict[tuple, list[int]] = {}
        for i, m in enumerate(s.msgs):
            groups.setdefault((tuple(m.name), len(m.position), len(m.velocity),
                               len(m.effort)), []).append(i)
        s.layouts = [(key, np.array(members), [
            np.array([np.asarray(getattr(s.msgs[i], f), dtype=np.float64) for i in members]
                     ).reshape(len(members), n)
            for f, n in (("position", key[1]), ("velocity", key[2]), ("effort", key[3]))])
            for key, members in groups.items()]
    return s.layouts


def _joint_table(s: Series, names: list[str], what: str, where: str,
                 ) -> tuple[np.ndarray, dict[str, np.ndarray], bool, bool]:
    """Times carrying any of ``names`` and each joint's held position/velocity/effort.

    Returns (t_ns (M,), {"position"|"velocity"|"effort": (M, J)}, all had velocity, all
    had effort); the leading samples before every joint had a value are dropped.

    Vectorised per layout: the messages are grouped by their name list and array lengths
    (a recorder repeats a few), and each group's values are stacked at once.
    """
    t_all = s.t_ns.astype(np.int64)
    # per joint: message indices and their (position, velocity, effort), NaN where absent
    idx_of: list[list[np.ndarray]] = [[] for _ in names]
    val_of: list[list[np.ndarray]] = [[] for _ in names]
    has_vel = has_eff = True
    wanted = {n: j for j, n in enumerate(names)}
    for (mnames, npos, nvel, neff), rows, stacks in _layouts(s):
        cols = {wanted[n]: k for k, n in enumerate(mnames) if n in wanted}  # last k wins
        if not cols:
            continue
        has_vel &= nvel == len(mnames)
        has_eff &= neff == len(mnames)
        if npos < len(mnames):
            raise RosbagError(f"{where}: topic {s.topic}: message {int(rows[0])} names "
                              f"{len(mnames)} joints but has {npos} positions")
        for j, k in cols.items():
            v = np.full((len(rows), 3), np.nan)
            for c, (st, n) in enumerate(zip(stacks, (npos, nvel, neff), strict=True)):
                if k < n:
                    v[:, c] = st[:, k]
            idx_of[j].append(rows)
            val_of[j].append(v)
    if not any(idx_of):
        raise RosbagError(f"{where}: no message on {s.topic} names any of the {what} joints "
                          f"{', '.join(names)}")
    per: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []  # (msg idx, t, values)
    bad: tuple[int, int, int] | None = None  # (message, joint, its previous message)
    for j in range(len(names)):
        if not idx_of[j]:
            per.append((np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros((0, 3))))
            continue
        idx = np.concatenate(idx_of[j])
        order = np.argsort(idx, kind="stable")
        idx, v = idx[order], np.concatenate(val_of[j])[order]
        t = t_all[idx]
        back = np.flatnonzero(np.diff(t) <= 0)  # a joint's times must rise message by message
        if len(back):
            k = int(back[0])  # message idx[k + 1] is not after idx[k]
            cand = (int(idx[k + 1]), j, int(idx[k]))
            if bad is None or cand[0] < bad[0]:
                bad = cand
        per.append((idx, t, v))
    if bad is not None:
        i, j, p = bad
        raise RosbagError(f"{where}: topic {s.topic}: timestamps out of order for joint "
                          f"{names[j]}: message {i} at {seconds(int(t_all[i]))} s is not after "
                          f"message {p} at {seconds(int(t_all[p]))} s")
    times = np.unique(np.concatenate([t for _, t, _ in per]))
    out = np.full((3, len(times), len(names)), np.nan)  # (3, M, J): position, velocity, effort
    firsts = []
    for j, (_, t, v) in enumerate(per):
        seen = ~np.isnan(v[:, 0])  # a NaN position is no reading: the previous one holds
        t, v = t[seen], v[seen]
        if not len(t):
            firsts.append(None)
            continue
        at = np.searchsorted(t, times, side="right") - 1  # latest reading at or before
        out[:, :, j] = v[np.clip(at, 0, None)].T
        firsts.append(int(np.searchsorted(times, t[0])))
    never = [n for n, f in zip(names, firsts, strict=True) if f is None]
    if never:
        raise RosbagError(f"{where}: {s.topic} never carries {what} joint(s) {', '.join(never)}")
    first = max(firsts)
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


#: Fingers within this of the recording's widest opening (or 4 of the profile's width
#: noise sigmas, if more) are open: they hold nothing.
OPEN_TOL_M = 0.002


def _forces(s: Series) -> np.ndarray:
    """(N, 3) force of each WrenchStamped message (N)."""
    return np.array([[m.wrench.force.x, m.wrench.force.y, m.wrench.force.z]
                     for m in s.msgs], dtype=np.float64).reshape(len(s.msgs), 3)


def rest_reading(ft: Series, width: tuple[np.ndarray, np.ndarray], widest: float,
                 tol: float) -> np.ndarray | None:
    """The F/T sensor's reading with nothing held: the median force (3,) over its readings
    taken while the fingers were open (the width at that time within ``tol`` of ``widest``,
    the recording's widest opening); None when there is none.

    An open gripper holds nothing, whatever the episode's first reading held: the start of
    an episode cut mid-grasp includes the object, and taring there reads the hold as 0 N,
    its release as a grasp and the next grasp as a slip.
    """
    if not len(ft.msgs):
        return None
    opened = _hold(*width, ft.t_ns) >= widest - tol  # (N,)
    return np.median(_forces(ft)[opened], axis=0) if opened.any() else None


def force_series(f: Force, s: Series, where: str, rest: np.ndarray | None = None,
                 ) -> tuple[np.ndarray, np.ndarray]:
    """(t_ns, N) of an F/T sensor: ``|F|`` or one axis, less ``rest`` (its reading with
    nothing held, :func:`rest_reading`; the episode's first reading without one) when
    ``tare``."""
    if not len(s.msgs):
        raise RosbagError(f"{where}: {s.topic} has no message in the episode")
    xyz = _forces(s)  # (N, 3)
    if f.tare:
        xyz = xyz - (xyz[0] if rest is None else rest)
    value = np.linalg.norm(xyz, axis=1) if f.component == "norm" \
        else xyz[:, "xyz".index(f.component)]
    return s.t_ns, value


def _tare(mapping: Mapping, episode: dict[str, Series], recording: dict[str, Series],
          width: tuple[np.ndarray, np.ndarray], where: str) -> tuple[np.ndarray | None,
                                                                     list[str]]:
    """The F/T sensor's rest reading for this episode and a note where it is not the
    episode's own: its readings with the fingers open, else the recording's, else (None)
    the episode's first reading."""
    from judge.config import resolve_gripper

    f, g = mapping.force, mapping.gripper
    profile = resolve_gripper(mapping.gripper_record(), f"{where}: gripper")
    tol = max(OPEN_TOL_M, 4 * profile.width_noise_m)
    topic = g.width.topic or mapping.joints.topic
    whole = value_series(g.width, recording[topic], "position", where)
    widest = float(max(whole[1].max(), width[1].max()))
    rest = rest_reading(episode[f.topic], width, widest, tol)
    if rest is not None:
        return rest, []
    rest = rest_reading(recording[f.topic], whole, widest, tol)
    if rest is not None:
        return rest, [f"{f.topic}: tared at the recording's readings with the fingers open "
                      "(none in the episode)"]
    return None, [f"{f.topic}: no reading with the fingers open: tared at the episode's "
                  "first, which reads an object held then as 0 N"]


def build_signals(mapping: Mapping, series: dict[str, Series], t0_ns: int, where: str,
                  recording: dict[str, Series] | None = None) -> tuple[Signals, list[str]]:
    """The bundle's joint and gripper streams (times in s from ``t0_ns``); notes.

    ``series``: the episode's messages per topic; ``recording``: the whole recording's
    (default: the episode's), where an F/T sensor's tare looks for readings with the
    fingers open when the episode has none.
    """
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
        rest, tare_notes = None, []
        if mapping.force.tare:
            rest, tare_notes = _tare(mapping, series, recording or series, (wt, width), where)
        notes += tare_notes
        parts.append(force_series(mapping.force, series[mapping.force.topic], where, rest))
    elif g.effort is not None:
        parts.append(value_series(g.effort, series[g.effort.topic or js.topic], "effort", where))
    base = max(parts, key=lambda p: len(p[0]))[0]  # the densest input's times
    width_at = _hold(wt, width, base)
    effort_at = _hold(*parts[1], base) if len(parts) > 1 else np.zeros(len(base))
    return Signals(t=ts, joint_names=tuple(mapping.joints.names), position=table["position"],
                   velocity=velocity, effort=effort, gripper_t=(base - t0_ns) / 1e9,
                   gripper_width=width_at, gripper_force=effort_at), notes
