"""Fingers: contact events from what real grippers report — the opening width and effort.

Pure numpy, no I/O. Used by :func:`judge.bundle.contacts.detect_contacts` when the bundle
names a gripper profile whose effort is an actuator force (or nothing) rather than a
finger–object contact force (``docs/contacts.md``). A real gripper's motor effort is high
whenever the fingers are driven — closing, holding, opening, object or not — so it cannot
say *when* a grasp began; the width can:

* a hold already on at the first sample (an episode cut mid-grasp: the fingers at rest
  between their limits and, with an actuator effort, driven) is a **grasp** there, closed
  from the profile's open width, however short;
* the width is median-filtered (``smooth_s``) and its speed taken over ±``smooth_s``;
  a **close** is a run of closing speed (hysteresis: ``close_speed_mps`` on, half off);
* a close whose fingers reach the closed limit (``closed_width_m`` + margin) is a
  **miss**, at the first sample there;
* a close must bring the fingers ``min_travel_m`` closer and stop that far inside the
  open limit (an opening's overshoot settling back is no close);
* a close that stops above the closed limit is a **grasp**, at the first sample within
  ``stop_tol_m`` of the level the fingers settle at (the median width, over the
  ``settle_s`` after the close, of the samples slower than ``close_speed_mps``: a hold
  that ends within it keeps its own level) — unless the actuator effort there is below
  ``driven_effort`` and the fingers then stay put (parked where commanded: nothing held);
* a step up of at most ``rebound_m`` that comes to rest again is the grip resettling (the
  fingers rebounding from the impact): the hold goes on at the new level;
* with an actuator effort, a creep open that does not reopen the fingers while the
  actuator still drives them is still a hold (at the new level); the effort falling below
  ``driven_effort`` ends the hold (the grip let go), at that sample;
* the hold ends when the width leaves its level by ``hold_band_m``: a **slip** when it
  collapses toward closed, a **release** when within ``open_window_s`` it reopens to
  ``open_fraction`` of its pre-close width, else a slip (the fingers loosened and the
  object slid out). The event time is where the motion that left the band began: walked
  back from there while the width keeps moving the same way and is more than
  ``stop_tol_m`` off the level;
* an event's ``peak`` is the hold width in mm (a miss: the width at the closed limit);
* after a miss, release or slip, the next close counts once the fingers have reopened
  ``rearm_fraction`` of the way from closed to open (a closed gripper bouncing against
  itself is not a new miss).

Tolerances never go below the profile's width noise (3–4 sigmas).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from judge.bundle.events import TIME_EPS_S, ContactEvent, hysteresis, running_median, segments
from judge.config import FingerConfig, GripperProfile


def _speed(t: np.ndarray, w: np.ndarray, h: int) -> np.ndarray:
    """d(width)/dt over ±h samples (one-sided at the edges). (N,)"""
    n = len(w)
    i = np.arange(n)
    lo, hi = np.maximum(i - h, 0), np.minimum(i + h, n - 1)
    return (w[hi] - w[lo]) / np.maximum(t[hi] - t[lo], 1e-12)


def _first(mask: np.ndarray, start: int = 0) -> int | None:
    hit = np.flatnonzero(mask[start:])
    return start + int(hit[0]) if len(hit) else None


@dataclass(frozen=True)
class _Run:
    """One run's smoothed width, its speed and effort, and the tolerances in force."""

    t: np.ndarray  # (N,) s
    w: np.ndarray  # (N,) median-filtered width (m)
    v: np.ndarray  # (N,) its speed (m/s)
    e: np.ndarray | None  # (N,) median-filtered actuator effort; None without one
    gripper: GripperProfile
    cfg: FingerConfig
    tol: float  # within this of the hold level: stopped there (m)
    band: float  # leaving the level by more ends the hold (m)
    rearm: float  # after an event, the width a new close must start from (m)
    settle: int  # samples
    window: int  # samples


def finger_events(t: np.ndarray, width: np.ndarray, effort: np.ndarray,
                  gripper: GripperProfile, cfg: FingerConfig | None = None,
                  min_contact_s: float = 0.05) -> list[ContactEvent]:
    """Grasp, miss, release and slip events from the width (and actuator effort).

    Args:
        t: (N,) seconds; width: (N,) finger opening (m); effort: (N,) the /gripper effort.
        gripper: the gripper's limits, noise and what its effort is.
        cfg: detection settings.
        min_contact_s: holds shorter than this are ignored (a bump, not a grasp).
    """
    cfg = cfg or FingerConfig()
    n = len(t)
    if n < 5:
        return []
    rate = (n - 1) / (t[-1] - t[0])
    sigma = gripper.width_noise_m
    h = max(1, round(cfg.smooth_s * rate))
    w = running_median(np.asarray(width, dtype=np.float64), 2 * h + 1)  # (N,)
    actuator = gripper.effort == "actuator"
    e = running_median(np.asarray(effort, dtype=np.float64), 2 * h + 1) if actuator else None
    closed = gripper.closed_width_m + max(cfg.closed_margin_m, 4 * sigma)
    v = _speed(t, w, h)
    run = _Run(t, w, v, e, gripper, cfg, tol=max(cfg.stop_tol_m, 3 * sigma),
               band=max(cfg.hold_band_m, 4 * sigma),
               rearm=gripper.closed_width_m + cfg.rearm_fraction * (gripper.open_width_m
                                                                    - gripper.closed_width_m),
               settle=max(1, round(cfg.settle_s * rate)),
               window=max(1, round(cfg.open_window_s * rate)))
    settle, band = run.settle, run.band
    events: list[ContactEvent] = []
    i = 0  # closes starting before i are not counted (inside a hold, or not re-armed)
    level = _held_at_start(run, closed)
    if level is not None:  # closed before the episode (from open, as far as it can tell):
        i = _hold(run, events, 0, 0, level, gripper.open_width_m, 0.0)  # no blip however short
    for a, b in segments(hysteresis(-v, cfg.close_speed_mps, cfg.close_speed_mps / 2)):
        if a < i:
            continue
        stop = min(b, n - 1)
        still = w[stop:stop + settle][np.abs(v[stop:stop + settle]) < cfg.close_speed_mps]
        level = float(np.median(still)) if len(still) else float(w[stop])
        reached = _first(w <= closed, a)
        if reached is not None and reached < stop + settle:
            events.append(ContactEvent(float(t[reached]), "miss", float(t[a]),
                                       float(t[reached]), 1e3 * float(w[reached]),
                                       1e3 * float(w[reached]), "mm"))
            i = _rearmed(w, run.rearm, reached, n)
            continue
        if (w[a] - level < cfg.min_travel_m
                or level > gripper.open_width_m - cfg.min_travel_m):
            continue  # settling (an opening's overshoot), not a close onto anything
        after = w[stop + settle:stop + 2 * settle]
        if (actuator and np.median(e[stop:stop + settle]) < gripper.driven_effort
                and (not len(after) or np.abs(after - level).max() <= band)):
            continue  # stopped where commanded and stay: no longer driven, nothing held
        onset = _first(w[: stop + 1] <= level + run.tol, a)
        onset = stop if onset is None else onset
        i = _hold(run, events, onset, stop, level, float(w[a]), min_contact_s)
    return events


def _held_at_start(run: _Run, closed: float) -> float | None:
    """The level of a hold already on at the first sample (an episode cut mid-grasp), or
    None. The fingers at rest from the start — within ``hold_band_m`` of the first width,
    for ``settle_s`` or until they leave it (a hold may end soon after the cut) — above the
    closed limit (+margin), ``min_travel_m`` inside the open one, and, with an actuator
    effort, driven. The level is their median width there."""
    cfg = run.cfg
    k = _first(np.abs(run.w - run.w[0]) > run.band)
    k = min(run.settle, len(run.w) if k is None else k)
    if k < 2:
        return None
    level = float(np.median(run.w[:k]))
    if level <= closed or level > run.gripper.open_width_m - cfg.min_travel_m:
        return None
    if run.e is not None and np.median(run.e[:k]) < run.gripper.driven_effort:
        return None  # parked where commanded: nothing held
    return level


def _hold(run: _Run, events: list[ContactEvent], onset: int, stop: int, level: float,
          pre: float, min_contact_s: float) -> int:
    """Follow the hold that reached ``level`` at ``onset`` (the close stopped at ``stop``;
    the fingers closed from ``pre``) to its end; append its grasp and release/slip to
    ``events``. Returns where the next close may start."""
    t, w, n = run.t, run.w, len(run.t)
    leave, level, dropped = _hold_end(w, run.v, run.e, level, min(stop + run.settle, n - 1),
                                      pre, run.gripper, run.cfg, run.band, run.settle,
                                      run.window)
    if leave is None:  # still holding at the end
        events.append(ContactEvent(float(t[onset]), "grasp", float(t[onset]), None,
                                   1e3 * level, 1e3 * level, "mm"))
        return n
    end = leave
    while not dropped and end > stop and abs(w[end - 1] - level) > run.tol and (
            (w[end - 1] < w[end]) == (w[leave] > level)):
        end -= 1  # back along the motion that ended the hold, to where it began
    if t[end] - t[onset] < min_contact_s - TIME_EPS_S:
        return leave
    if w[leave] < level - run.band:
        kind = "slip"
    else:
        kind = ("release" if w[end:end + run.window].max() >= run.cfg.open_fraction * pre
                else "slip")
    events.append(ContactEvent(float(t[onset]), "grasp", float(t[onset]), float(t[end]),
                               1e3 * level, 1e3 * level, "mm"))
    events.append(ContactEvent(float(t[end]), kind, float(t[onset]), float(t[end]),
                               1e3 * level, 1e3 * level, "mm"))
    return _rearmed(w, run.rearm, end, n)


def _hold_end(w: np.ndarray, v: np.ndarray, e: np.ndarray | None, level: float, start: int,
              pre: float, gripper: GripperProfile, cfg: FingerConfig, band: float,
              settle: int, window: int) -> tuple[int | None, float, bool]:
    """Where a hold at ``level`` ends: (index or None, the level then, effort dropped).

    The width leaving the level by ``band`` ends it — except a step up that is a rebound
    (at most ``rebound_m``, at rest again), or, with an actuator effort still driving, a
    creep open that does not reopen the fingers: the hold goes on at the new level. An
    actuator effort falling below ``driven_effort`` ends it too (the grip let go).
    """
    driven = gripper.driven_effort
    j = start
    while True:
        away = np.abs(w - level) > band
        if e is not None:
            away |= e < driven
        leave = _first(away, j)
        if leave is None:
            return None, level, False
        if e is not None and e[leave] < driven:
            return leave, level, True
        if w[leave] < level:
            return leave, level, False
        rest = _first(np.abs(v[leave:leave + settle]) < cfg.close_speed_mps / 2)
        if rest is not None and w[leave + rest] - level <= cfg.rebound_m:
            level, j = float(w[leave + rest]), leave + rest  # a rebound: at rest again
            continue
        if e is not None and w[leave:leave + window].max() < cfg.open_fraction * pre:
            level, j = float(w[leave]), leave + 1  # creeping open, still driven: still held
            continue
        return leave, level, False


def _rearmed(w: np.ndarray, rearm: float, start: int, n: int) -> int:
    """First index at or after ``start`` where the fingers have reopened to ``rearm``."""
    k = _first(w >= rearm, start)
    return n if k is None else k


#: Without a profile, an effort above ``force_on_n`` on at least this share of the samples
#: where the fingers move freely is an actuator's (driven, object or not), not a contact
#: force (~0 until the fingers meet something, which stops them): measured on bench.synth,
#: contact forces 0–0.21 of them, actuator efforts 0.96–0.99.
ACTUATOR_SHARE = 0.6
#: A width beyond the profile's open limit by this factor is in other units than metres.
WIDTH_SLACK = 1.25


def gripper_warnings(signals, gripper: GripperProfile | None, force_on_n: float,
                     cfg: FingerConfig | None = None) -> list[str]:
    """What may make the gripper's contacts wrong, as sentences (empty when nothing does):
    an actuator effort read as a contact force for want of a profile, or a width the
    profile's limits (metres) cannot describe."""
    cfg = cfg or FingerConfig()
    t, width, effort = signals.gripper_t, signals.gripper_width, signals.gripper_force
    if len(t) < 5 or t[-1] <= t[0]:
        return []
    w = np.asarray(width, dtype=np.float64)
    if gripper is not None:
        top = gripper.open_width_m * WIDTH_SLACK + 4 * gripper.width_noise_m
        if w.max() > top:
            return [f"/gripper width reaches {w.max():g}, beyond the profile's open_width_m "
                    f"{gripper.open_width_m:g} m: is the width in other units (mm, a register "
                    "count, a fraction)? The finger detector reads metres; convert it"]
        return []
    h = max(1, round(cfg.smooth_s * (len(t) - 1) / (t[-1] - t[0])))
    moving = np.abs(_speed(t, running_median(w, 2 * h + 1), h)) > cfg.close_speed_mps
    if moving.sum() < 10:
        return []
    share = float((np.asarray(effort)[moving] > force_on_n).mean())
    if share < ACTUATOR_SHARE:
        return []
    return [f"no gripper profile, yet /gripper's effort is above {force_on_n:g} on "
            f"{share:.0%} of the samples where the fingers move freely: it looks like an "
            "actuator's effort, which the force detector misreads as contact; name the "
            "gripper's profile (bundle create --gripper, configs/grippers.yaml)"]
