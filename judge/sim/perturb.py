"""Perturbed experts: what is injected into Meta-World's scripted policies. Pure numpy.

A :class:`Perturbation` is drawn per rollout (kind + parameters) and recorded in
``truth.json`` as ``perturbation``. It is what was *done* to the policy, never the label:
labels are computed afterwards from the physics trace (``judge.sim.labels``), so a
perturbation that happens not to matter (a slip that holds, a slow expert that still
finishes) is labelled by what happened.

Kinds (``intended`` is only the class the perturbation aims at):

* ``none`` — the expert as it is.
* ``release`` — open the gripper after lifting (``where="transport"``: ``delay_s`` after
  lift-off; ``"over_goal"``: once the object's distance to the goal is down to
  ``goal_frac`` of its start), then carry on to the goal with the hand empty. Aims at
  ``grasp.premature_release`` / ``placement.dropped``.
* ``weak_grip`` — ``delay_s`` after lift-off the grip command drops to ``effort`` (the
  finger servo's target, about where the fingers already are), so the squeeze nearly
  vanishes. Aims at ``grasp.slip``.
* ``offset`` — the expert sees the object shifted by ``(dx, dy)``. Aims at ``grasp.miss``.
* ``slow`` — the arm holds still, gripper open, for ``hesitate_frac`` of the episode, then
  the expert runs with every motion command scaled by ``factor``. Aims at ``task.timeout``.
  (Slowing alone, below ~0.3, makes the expert close its fingers while still descending
  and press the puck into the table, where it stays wedged: not a timeout.)
* ``crash`` — once the hand–object distance is down to ``trigger_frac`` of its start, drive
  the hand's target down, sideways (``side``: ±x) and back toward the base, so that it
  meets the table rather than the object, until the target is ``depth_m`` below the table
  top (past the usual mocap limit); then a protective stop: the target snaps back 2 cm
  above the hand and the arm holds still. Aims at ``motion.collision``.
* ``idle`` — the arm drifts between ``waypoints`` near its start pose, gripper open, and
  never reaches for the object. Aims at ``task.no_attempt``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from judge.sim.names import KINDS
from judge.sim.tasks import SimTask

GRASP_ONLY = frozenset({"release", "weak_grip", "offset"})
INTENDED = {"none": None, "release": "grasp.premature_release", "weak_grip": "grasp.slip",
            "offset": "grasp.miss", "slow": "task.timeout", "crash": "motion.collision",
            "idle": "task.no_attempt"}
LIFT_M = 0.03  # object this far above its start counts as lifted (trigger of release/weak grip)
OBJ = slice(4, 7)  # object position in a Meta-World observation
OBJ_PREV = slice(22, 25)  # ... and its copy in the stacked previous frame


@dataclass(frozen=True)
class Perturbation:
    """What is injected into the expert for one rollout."""

    kind: str
    params: dict[str, Any] = field(default_factory=dict)

    def as_dict(self) -> dict:
        return {"kind": self.kind, "intended": INTENDED[self.kind],
                "params": {k: (round(v, 4) if isinstance(v, float) else v)
                           for k, v in self.params.items()}}


def kinds_for(task: SimTask) -> tuple[str, ...]:
    """Perturbation kinds that make sense for a task (grasp-only kinds need a grasp)."""
    return tuple(k for k in KINDS[1:] if (task.grasp or k not in GRASP_ONLY)
                 and k not in task.skip_perturbations)


def draw(rng: np.random.Generator, kind: str) -> Perturbation:
    """Parameters of one perturbation of ``kind``."""
    if kind == "none":
        return Perturbation("none")
    if kind == "release":
        if rng.random() < 0.4:
            return Perturbation(kind, {"where": "over_goal",
                                       "goal_frac": float(rng.uniform(0.1, 0.3))})
        return Perturbation(kind, {"where": "transport", "delay_s": float(rng.uniform(0.0, 0.15))})
    if kind == "weak_grip":
        return Perturbation(kind, {"effort": float(rng.uniform(0.022, 0.03)),
                                   "delay_s": float(rng.uniform(0.02, 0.15))})
    if kind == "offset":
        dx = float(rng.choice([-1.0, 1.0]) * rng.uniform(0.035, 0.06))
        return Perturbation(kind, {"dx": dx, "dy": float(rng.uniform(-0.01, 0.01))})
    if kind == "slow":
        return Perturbation(kind, {"hesitate_frac": float(rng.uniform(0.45, 0.75)),
                                   "factor": float(rng.uniform(0.5, 0.8))})
    if kind == "crash":
        return Perturbation(kind, {"trigger_frac": float(rng.uniform(0.3, 0.45)),
                                   "depth_m": float(rng.uniform(0.08, 0.15)),
                                   "side": float(rng.choice([-1.0, 1.0]))})
    if kind == "idle":
        wps = rng.uniform([-0.05, -0.05, -0.03], [0.05, 0.05, 0.03], size=(3, 3))
        return Perturbation(kind, {"waypoints": np.round(wps, 4).tolist()})
    raise ValueError(f"perturbation {kind!r}: expected one of {', '.join(KINDS)}")


class PerturbedExpert:
    """A Meta-World expert with one perturbation; ``act`` is called once per control step.

    ``env`` is the Meta-World env (duck-typed: ``mocap_low``, ``data.mocap_pos``, ``dt``,
    ``_target_pos``); only ``crash`` touches it (the mocap limit and the protective stop).
    """

    def __init__(self, expert: Any, pert: Perturbation, env: Any, obs0: np.ndarray,
                 steps: int) -> None:
        self.expert, self.p, self.env = expert, pert, env
        self.dt = float(env.dt)
        self.hand0 = obs0[:3].copy()
        self.obj0 = obs0[OBJ].copy()
        self.dist0 = max(float(np.linalg.norm(obs0[:3] - obs0[OBJ])), 1e-6)
        self.goal0 = float(np.linalg.norm(obs0[OBJ] - np.asarray(env._target_pos)))
        self.step = 0
        self.steps = steps  # length of the episode in control steps
        self.lifted_at: int | None = None
        self.fired_at: int | None = None  # step the perturbation took effect
        self.stopped_at: int | None = None  # crash: step of the protective stop
        self.last_grab = -1.0

    def act(self, obs: np.ndarray) -> np.ndarray:
        """Action (dx, dy, dz, grab) for this step's observation."""
        obs = obs.copy()  # some experts edit the observation they are given
        kind, par = self.p.kind, self.p.params
        if kind in ("offset", "slow"):
            self._fire()  # both act from the first step
        if kind == "offset":
            shift = np.array([par["dx"], par["dy"], 0.0])
            obs[OBJ] += shift
            obs[OBJ_PREV] += shift
        if self.lifted_at is None and obs[6] > self.obj0[2] + LIFT_M:
            self.lifted_at = self.step
        if kind == "idle":
            action = self._idle(obs)
        elif kind == "slow" and self.step < par["hesitate_frac"] * self.steps:
            action = np.array([0.0, 0.0, 0.0, -1.0])
        else:
            action = np.asarray(self.expert.get_action(obs.copy()), dtype=np.float64).copy()
        if kind == "slow":
            action[:3] *= par["factor"]
        elif kind == "release":
            action = self._release(obs, action)
        elif kind == "weak_grip":
            due = self.lifted_at is not None and (
                self.step >= self.lifted_at + par["delay_s"] / self.dt)
            if due:
                self._fire()
                if action[3] > 0:
                    action[3] = par["effort"]
        elif kind == "crash":
            action = self._crash(obs, action)
        self.step += 1
        self.last_grab = float(action[3])
        return action.astype(np.float32)

    def _fire(self) -> None:
        if self.fired_at is None:
            self.fired_at = self.step

    def _idle(self, obs: np.ndarray) -> np.ndarray:
        wps = np.asarray(self.p.params["waypoints"])
        seg = min(int(self.step * self.dt / 0.8), len(wps) - 1)  # a new waypoint every 0.8 s
        target = self.hand0 + wps[seg]
        self._fire()
        return np.concatenate([np.clip(4.0 * (target - obs[:3]), -0.5, 0.5), [-1.0]])

    def _release(self, obs: np.ndarray, action: np.ndarray) -> np.ndarray:
        par = self.p.params
        if self.fired_at is None and self.lifted_at is not None:
            goal = np.asarray(self.env._target_pos)
            if par["where"] == "over_goal":
                due = np.linalg.norm(obs[OBJ] - goal) <= par["goal_frac"] * self.goal0
            else:
                due = self.step >= self.lifted_at + par["delay_s"] / self.dt
            if due:
                self._fire()
        if self.fired_at is None:
            return action
        goal = np.asarray(self.env._target_pos)  # carry on to the goal, hand empty
        return np.concatenate([np.clip(10.0 * (goal - obs[:3]), -1.0, 1.0), [-1.0]])

    def _crash(self, obs: np.ndarray, action: np.ndarray) -> np.ndarray:
        par = self.p.params
        if self.fired_at is None:
            if np.linalg.norm(obs[:3] - obs[OBJ]) <= par["trigger_frac"] * self.dist0:
                self._fire()
                low = np.array(self.env.mocap_low, dtype=np.float64)
                low[2] = -0.3
                self.env.mocap_low = low
            else:
                return action
        if self.stopped_at is None and self.env.data.mocap_pos[0, 2] > -par["depth_m"]:
            return np.array([par["side"], -0.5, -1.0, self.last_grab])  # down, aside, back
        if self.stopped_at is None:  # protective stop: target back above the hand, hold
            self.stopped_at = self.step
            self.env.data.mocap_pos[0] = obs[:3] + np.array([0.0, 0.0, 0.02])
        return np.array([0.0, 0.0, 0.0, self.last_grab])
