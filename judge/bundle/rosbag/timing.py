"""Timing: each message's time, and what a channel's times say (drops, clock jumps, stops).

Pure numpy. A message's time is its own ``header.stamp`` (``timestamp`` for foxglove_msgs),
and its log time (when the recorder received it) only where the stamp is zero: the stamp is
when the sensor sampled, the log time adds transport and scheduling delay that differs by
topic (a camera frame arrives tens of ms after it was exposed; a 1 kHz F/T message ~1 ms),
so stamps line cameras up with forces and log times do not. Times out of order are refused;
drops, clock jumps and a channel that stops before its episode ends are reported, never
smoothed over.
"""

from __future__ import annotations

import numpy as np

from judge.bundle.rosbag.mapping import RosbagError

DROP_FACTOR = 1.5  # a gap longer than this many median periods lost frames
JUMP_S = 0.5  # the stamp's offset from the log time changing by more than this: a clock jump
STOP_PERIODS = 5  # a channel ending more than this many periods (and 1 s) before its episode


def seconds(ns: int) -> str:
    """Integer ns as exact seconds text: ``1790000000.200000000``."""
    ns = int(ns)
    return f"{ns // 1_000_000_000}.{ns % 1_000_000_000:09d}"


def chosen(stamp_ns: np.ndarray, log_ns: np.ndarray) -> np.ndarray:
    """(N,) int64 ns: the stamp, or the log time where the stamp is 0."""
    return np.where(stamp_ns != 0, stamp_ns, log_ns)


def check_order(t_ns: np.ndarray, where: str) -> None:
    """Refuse times that do not strictly increase, naming the first message that breaks it."""
    bad = np.flatnonzero(np.diff(t_ns) <= 0)
    if len(bad):
        i = int(bad[0]) + 1
        raise RosbagError(f"{where}: timestamps out of order: message {i} at "
                          f"{seconds(t_ns[i])} s is not after message {i - 1} at "
                          f"{seconds(t_ns[i - 1])} s")


def period_s(t_ns: np.ndarray) -> float:
    """The median spacing (s) of increasing times; 0 with fewer than two."""
    return float(np.median(np.diff(t_ns))) / 1e9 if len(t_ns) > 1 else 0.0


def report(t_ns: np.ndarray, stamp_ns: np.ndarray, log_ns: np.ndarray, end_ns: int,
           t0_ns: int) -> dict:
    """Rate, drops, clock jumps and an early stop of one channel in one episode.

    Args:
        t_ns: (N,) the channel's chosen times (ns), strictly increasing.
        stamp_ns: (N,) its stamps (0 where none); log_ns: (N,) its log times.
        end_ns: the episode's last message time; t0_ns: the episode's t = 0.
    """
    out: dict = {"messages": len(t_ns), "rate_hz": 0.0, "from_log_time": int(
        np.sum(stamp_ns == 0)), "dropped": 0, "gaps": [], "clock_jumps": [], "stopped_at": None}
    if len(t_ns) < 2:
        return out
    dt = np.diff(t_ns).astype(np.float64)  # (N-1,) ns
    med = float(np.median(dt))
    out["rate_hz"] = round(1e9 / med, 3)
    stamped = stamp_ns != 0
    offset = (stamp_ns - log_ns).astype(np.float64)
    both = stamped[1:] & stamped[:-1]
    jump = both & (np.abs(np.diff(offset)) > JUMP_S * 1e9)  # (N-1,) the stamp's clock moved
    jumps = np.flatnonzero(jump)
    long = np.flatnonzero((dt > DROP_FACTOR * med) & ~jump)  # a jump's gap is no drop
    out["dropped"] = int(sum(round(dt[i] / med) - 1 for i in long))
    out["gaps"] = [[round(float(t_ns[i] - t0_ns) / 1e9, 3), round(float(dt[i]) / 1e9, 3)]
                   for i in long[:10]]
    out["clock_jumps"] = [[round(float(t_ns[i + 1] - t0_ns) / 1e9, 3),
                           round(float(offset[i + 1] - offset[i]) / 1e9, 3)] for i in jumps[:10]]
    if end_ns - t_ns[-1] > max(STOP_PERIODS * med, 1e9):
        out["stopped_at"] = round(float(t_ns[-1] - t0_ns) / 1e9, 3)
    return out


def joint_report(joints: list[tuple[str, ...]], t_ns: np.ndarray, stamp_ns: np.ndarray,
                 log_ns: np.ndarray, end_ns: int, t0_ns: int) -> dict:
    """:func:`report` of a JointState topic whose messages carry these ``joints`` (names).

    Partial messages (arm and fingers published apart, each on its own clock) interleave:
    their merged times are no one periodic stream, and gaps between them are no drops. So
    each set of joints is reported on its own times; the topic's entry is the report of its
    largest set with the messages, stamp-less messages and drops of all sets, and
    ``groups`` (one report per set, with its ``joints``, in order of first message). A topic
    whose messages all carry the same joints gets the plain :func:`report`.
    """
    order: dict[tuple[str, ...], list[int]] = {}
    for i, names in enumerate(joints):
        order.setdefault(names, []).append(i)
    if len(order) < 2:
        return report(t_ns, stamp_ns, log_ns, end_ns, t0_ns)
    groups = []
    for names, idx in order.items():
        k = np.array(idx)
        groups.append({"joints": list(names),
                       **report(t_ns[k], stamp_ns[k], log_ns[k], end_ns, t0_ns)})
    main = max(groups, key=lambda g: g["messages"])
    out = {k: v for k, v in main.items() if k != "joints"}
    out.update(messages=len(t_ns), from_log_time=sum(g["from_log_time"] for g in groups),
               dropped=sum(g["dropped"] for g in groups),
               gaps=sorted(x for g in groups for x in g["gaps"])[:10], groups=groups)
    return out


def notes(topic: str, r: dict) -> list[str]:
    """The report's findings as lines a person reads (empty when the channel is clean)."""
    lines = []
    if r["dropped"]:
        first = ", ".join(f"{a:.3f} s (+{b:.3f} s)" for a, b in r["gaps"][:3])
        lines.append(f"{topic}: {r['dropped']} message(s) missing in {len(r['gaps'])} gap(s) "
                     f"at {r['rate_hz']} Hz (first at {first})")
    for at, by in r["clock_jumps"]:
        lines.append(f"{topic}: clock jump at {at:.3f} s: header.stamp moved {by:+.3f} s "
                     "against the log time")
    if r["stopped_at"] is not None:
        lines.append(f"{topic}: stops at {r['stopped_at']:.3f} s, before the episode ends")
    if r["from_log_time"]:
        lines.append(f"{topic}: {r['from_log_time']} message(s) without header.stamp: "
                     "placed at their log time")
    return lines
