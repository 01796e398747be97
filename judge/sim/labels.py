"""Labels from the physics trace: attempt, success, failure class, contact times. Pure numpy.

Nothing here knows which perturbation was injected: every label is a rule over what the
simulator recorded (``judge.sim.physics``). The rules and their thresholds are
:class:`LabelRules` (defaults documented in ``docs/sim.md``):

* **success** — the task's own criterion, Meta-World's ``info["success"]``, holds at every
  sample of the final ``success_window_s`` (and the run was attempted).
* **attempt** — the tool centre came within ``attempt_radius_m`` of the object, or covered
  ``attempt_fraction`` of its starting distance to it, or a robot geom touched the object
  with more than ``touch_n``.
* **contact events** — grip force (the weaker finger's normal force on the object) through
  hysteresis ``grip_on_n`` / ``grip_off_n``, segments shorter than ``min_grip_s`` dropped:
  ``grasp`` at onset; at offset, ``release`` when the fingers opened to
  ``open_fraction`` of their start width within ``open_window_s``, else ``slip``;
  ``impact`` at the peak of each robot–scene contact episode above ``collision_n``.
* **failure class** (only when success is false; first rule that matches):
  1. not attempted → ``task.no_attempt``;
  2. else the *earliest* of these events names the class:
     an impact → ``motion.collision``;
     a grasp lost with the object lifted (``lift_m`` above its start at the offset) that
     then fell ``fall_m`` within ``fall_window_s``: a ``slip`` → ``grasp.slip``, a
     ``release`` with the object within the task's threshold of the goal in x-y →
     ``placement.dropped``, elsewhere → ``grasp.premature_release``;
     in a grasping task, the fingers closing (opening below ``closed_fraction`` of the
     start) in a run that never gripped the object → ``grasp.miss``;
  3. none of them, but still progressing at the end — the potential
     ``|tool − object| + metric`` fell by ``progress_m`` over the last
     ``progress_window_s`` → ``task.timeout``;
  4. otherwise → ``task.incomplete``.
* **near_threshold** — the final metric is within ``near_band`` × threshold of the
  threshold (either side); such rollouts are kept and flagged.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from judge.bundle.events import hysteresis, segments


@dataclass(frozen=True)
class Trace:
    """What one rollout did, one sample per control step (the reset state first)."""

    dt: float  # s between samples
    q: np.ndarray  # (N, 7) arm joint positions (rad)
    qd: np.ndarray  # (N, 7) arm joint velocities (rad/s)
    tau: np.ndarray  # (N, 7) mocap-weld generalised force on each arm joint (Nm)
    width: np.ndarray  # (N,) finger opening (m)
    grip: np.ndarray  # (N,) weaker finger's normal force on the object (N)
    actuator: np.ndarray  # (N,) mean |force| of the finger actuators (N)
    touch: np.ndarray  # (N,) robot–object normal force, any robot geom (N)
    scene: np.ndarray  # (N,) robot–scene normal force (N)
    tcp: np.ndarray  # (N, 3) tool centre (m)
    obj: np.ndarray  # (N, 3) object point (m)
    goal: np.ndarray  # (3,) goal (m)
    metric: np.ndarray  # (N,) the task's success metric (m)
    success: np.ndarray  # (N,) bool, info["success"]
    threshold: float  # success when metric <= threshold (m)
    grasp_task: bool  # the task is a grasp-and-carry task

    @property
    def t(self) -> np.ndarray:
        return np.arange(len(self.width)) * self.dt  # (N,) s

    @classmethod
    def from_rows(cls, rows: list[dict], dt: float, threshold: float,
                  grasp_task: bool) -> Trace:
        def col(k: str) -> np.ndarray:
            return np.asarray([r[k] for r in rows], dtype=np.float64)

        return cls(dt=dt, q=col("q"), qd=col("qd"), tau=col("tau"), width=col("width"),
                   grip=col("grip"), actuator=col("actuator"), touch=col("touch"),
                   scene=col("scene"), tcp=col("tcp"),
                   obj=col("obj"), goal=np.asarray(rows[-1]["goal"], dtype=np.float64),
                   metric=col("metric"), success=col("success").astype(bool),
                   threshold=threshold, grasp_task=grasp_task)


class LabelRules(BaseModel):
    """Thresholds of the labelling rules (module docstring)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    success_window_s: float = Field(0.1, ge=0, description="Success must hold this long at "
                                    "the end (s).")
    attempt_radius_m: float = Field(0.08, gt=0, description="Tool–object distance that "
                                    "counts as reaching (m).")
    attempt_fraction: float = Field(0.5, gt=0, lt=1, description="Or: tool–object distance "
                                    "down to this fraction of its start.")
    touch_n: float = Field(1.0, gt=0, description="Or: any robot–object contact above this (N).")
    grip_on_n: float = Field(3.0, gt=0, description="Grip force that starts a grasp (N).")
    grip_off_n: float = Field(1.0, ge=0, description="Grip force below which it ends (N).")
    min_grip_s: float = Field(0.05, ge=0, description="Shorter grip episodes are ignored (s).")
    open_fraction: float = Field(0.9, gt=0, le=1, description="Fingers opened: width back to "
                                 "this fraction of the start width.")
    open_window_s: float = Field(0.25, gt=0, description="... within this long after the "
                                 "grip ended (s).")
    lift_m: float = Field(0.01, ge=0, description="Object this far above its start at the "
                          "offset counts as lifted (m).")
    fall_m: float = Field(0.02, gt=0, description="Drop that counts as falling (m).")
    fall_window_s: float = Field(0.5, gt=0, description="... within this long (s).")
    closed_fraction: float = Field(0.3, gt=0, lt=1, description="Fingers closed: width below "
                                   "this fraction of the start width.")
    collision_n: float = Field(150.0, gt=0, description="Robot–scene normal force that is a "
                               "collision (N).")
    progress_window_s: float = Field(1.0, gt=0, description="Progress look-back at the end (s).")
    progress_m: float = Field(0.01, gt=0, description="Potential decrease that is progress (m).")
    near_band: float = Field(0.2, ge=0, le=1, description="Near-threshold band, a fraction "
                             "of the threshold on either side.")


@dataclass(frozen=True)
class Labels:
    """The labels of one rollout."""

    attempt: bool
    success: bool
    failure_class: str | None
    near_threshold: bool
    final_metric: float  # m
    threshold: float  # m
    contacts: list[dict]  # [{"t", "kind", ...}] sorted by time
    min_tool_object_m: float

    def as_dict(self) -> dict:
        return {"attempt": self.attempt, "success": self.success,
                "failure_class": self.failure_class, "near_threshold": self.near_threshold,
                "final_distance_m": round(self.final_metric, 4),
                "threshold_m": self.threshold, "contacts": self.contacts,
                "min_tool_object_m": round(self.min_tool_object_m, 4)}


def grip_events(tr: Trace, rules: LabelRules) -> list[dict]:
    """Grasp onsets and release/slip offsets of the grip force, with the object's state."""
    t, events = tr.t, []
    open_w = float(tr.width[0])
    window = max(1, round(rules.open_window_s / tr.dt))
    fall_n = max(1, round(rules.fall_window_s / tr.dt))
    for a, b in segments(hysteresis(tr.grip, rules.grip_on_n, rules.grip_off_n)):
        if (b - a) * tr.dt < rules.min_grip_s:
            continue
        onset = a
        while onset > 0 and tr.grip[onset - 1] > rules.grip_off_n:
            onset -= 1
        events.append({"t": round(float(t[onset]), 4), "kind": "grasp",
                       "peak_n": round(float(tr.grip[a:b].max()), 1)})
        if b >= len(t):
            continue
        opened = bool(tr.width[b:b + window].max() >= rules.open_fraction * open_w)
        z = tr.obj[:, 2]
        lifted = bool(z[b] - z[0] >= rules.lift_m)
        fell = bool(z[b] - z[b:b + fall_n].min() >= rules.fall_m)
        xy = float(np.linalg.norm(tr.obj[b, :2] - tr.goal[:2]))
        events.append({"t": round(float(t[b]), 4), "kind": "release" if opened else "slip",
                       "lifted": lifted, "fell": fell, "goal_xy_m": round(xy, 4)})
    return events


def impact_events(tr: Trace, rules: LabelRules) -> list[dict]:
    """One ``impact`` per robot–scene contact episode above ``collision_n``, at its peak."""
    events = []
    for a, b in segments(tr.scene > rules.collision_n):
        p = a + int(np.argmax(tr.scene[a:b]))
        events.append({"t": round(float(tr.t[p]), 4), "kind": "impact",
                       "peak_n": round(float(tr.scene[p]), 1)})
    return events


def label(tr: Trace, rules: LabelRules | None = None) -> Labels:
    """Labels of a trace by the rules of the module docstring."""
    rules = rules or LabelRules()
    n_final = max(1, round(rules.success_window_s / tr.dt) + 1)
    held = bool(tr.success[-n_final:].all())
    dist = np.linalg.norm(tr.tcp - tr.obj, axis=1)  # (N,)
    attempt = bool(dist.min() <= rules.attempt_radius_m
                   or dist.min() <= rules.attempt_fraction * dist[0]
                   or tr.touch.max() > rules.touch_n)
    grips = grip_events(tr, rules)
    impacts = impact_events(tr, rules)
    contacts = sorted(grips + impacts, key=lambda e: (e["t"], e["kind"]))
    final = float(tr.metric[-1])
    near = bool(abs(final - tr.threshold) <= rules.near_band * tr.threshold)
    success = held and attempt  # a run nobody attempted cannot succeed
    fc = None if success else _failure_class(tr, rules, attempt, grips, impacts, dist)
    return Labels(attempt=attempt, success=success, failure_class=fc,
                  near_threshold=near, final_metric=final, threshold=tr.threshold,
                  contacts=contacts, min_tool_object_m=float(dist.min()))


def failure_events(tr: Trace, rules: LabelRules, grips: list[dict],
                   impacts: list[dict]) -> list[tuple[float, str]]:
    """(time, class) of every event that explains a failure, in time order."""
    found = [(e["t"], "motion.collision") for e in impacts]
    for e in grips:
        if e["kind"] in ("release", "slip") and e["lifted"] and e["fell"]:
            cls = ("grasp.slip" if e["kind"] == "slip" else "placement.dropped"
                   if e["goal_xy_m"] <= tr.threshold else "grasp.premature_release")
            found.append((e["t"], cls))
    closed = np.flatnonzero(tr.width < rules.closed_fraction * tr.width[0])
    if tr.grasp_task and len(closed) and not any(e["kind"] == "grasp" for e in grips):
        found.append((float(tr.t[closed[0]]), "grasp.miss"))
    return sorted(found)


def _failure_class(tr: Trace, rules: LabelRules, attempt: bool, grips: list[dict],
                   impacts: list[dict], dist: np.ndarray) -> str:
    if not attempt:
        return "task.no_attempt"
    if events := failure_events(tr, rules, grips, impacts):
        return events[0][1]
    back = max(1, round(rules.progress_window_s / tr.dt))
    potential = dist + tr.metric
    if len(potential) > back and potential[-back - 1] - potential[-1] >= rules.progress_m:
        return "task.timeout"
    return "task.incomplete"
