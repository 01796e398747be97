"""Generate: physics rollouts written as real bundles, with ``truth.json`` beside them.

Rollout ``i`` of a set with seed ``S`` and ``T`` tasks runs task ``tasks[i % T]``; it is
that task's ``k = i // T``-th rollout, in seed group ``g = k // group_size``. The env seed
(initial object and goal placement) comes from ``(S, task, g)``, so the ``group_size``
rollouts of a task's group share initial conditions (``seed_group``); the perturbation
and the camera poses are drawn per rollout from ``rng(S, i)``. The same
config and index always give the same bundle, byte for byte, in any worker.

Bundles go through ``judge.bundle.create.assemble_bundle`` (the code path of
``rcjudge bundle create``); frames are encoded by ``judge.bundle.transcode.encode_frames``
(H.264 Annex B, no B-frames, SPS/PPS on every keyframe).
"""

from __future__ import annotations

import hashlib
import json
import os
import signal
import sys
import time
import zlib
from collections import Counter
from concurrent.futures import ProcessPoolExecutor
from dataclasses import replace
from multiprocessing import get_context
from pathlib import Path
from typing import Any, Literal

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, ValidationError, ValidationInfo, field_validator

from judge.sim.cameras import CAMERAS, CameraRanges, draw_poses
from judge.sim.errors import SimError
from judge.sim.labels import LabelRules, label
from judge.sim.perturb import KINDS, Perturbation, draw, kinds_for
from judge.sim.tasks import TASKS, SimTask, resolve_tasks
from rcjudge.errors import describe_validation

START_NS = 1_795_000_000_000_000_000  # 2026-11-18, t = 0 of simulated runs
CONTROL_HZ = 80  # Meta-World: 5 physics steps of 2.5 ms per control step


class SimConfig(BaseModel):
    """How physics rollouts are made."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    seed: int = Field(0, ge=0, description="Seed of the whole set; rollout i uses (seed, i).")
    tasks: tuple[str, ...] = Field(tuple(TASKS), min_length=1, description="Task keys "
                                   "(judge.sim.tasks), cycled per group.")
    duration_s: float = Field(3.0, ge=1.0, le=30.0, description="Length of a rollout (s); "
                              "with min_duration_s, the longest.")
    min_duration_s: float | None = Field(
        None, ge=1.0, le=30.0, description="Each rollout's length drawn uniformly from "
        "[min_duration_s, duration_s] (to a frame), so that the time limit cuts some experts "
        "mid-task; unset: every rollout lasts duration_s.")
    width: int = Field(160, ge=64, le=1280, description="Frame width (px), even.")
    height: int = Field(120, ge=48, le=960, description="Frame height (px), even.")
    fps: int = Field(16, ge=4, le=40, description="Camera frame rate; frames are rendered at "
                     "the nearest control step (80 Hz), 16/20/40 land exactly.")
    gop_s: float = Field(0.5, gt=0, le=10, description="Keyframe interval (s).")
    failure_rate: float = Field(0.5, ge=0, le=1, description="Share of rollouts whose expert "
                                "is perturbed (drawn per rollout).")
    perturbation_mix: dict[str, float] = Field(
        default_factory=lambda: {k: 1.0 for k in KINDS[1:]},
        description="Perturbation kind -> weight, among the kinds a task allows.")
    perturbation: str | None = Field(None, description="Force one kind (or none) for every "
                                     "rollout.")
    group_size: int = Field(4, ge=1, le=1000, description="Rollouts sharing initial "
                            "conditions (a seed group).")
    gripper_signal: Literal["contact", "actuator"] = Field(
        "contact", description="What /gripper's effort is: the finger-object contact force, "
        "or (actuator) the finger actuators' force, as a real gripper reports it; such "
        "bundles name the gripper profile sawyer-sim.")
    cameras: CameraRanges = Field(default_factory=CameraRanges)
    labels: LabelRules = Field(default_factory=LabelRules)

    @field_validator("width", "height")
    @classmethod
    def _even(cls, v: int) -> int:
        if v % 2:
            raise ValueError(f"must be even for H.264 4:2:0, got {v}")
        return v

    @field_validator("tasks")
    @classmethod
    def _known(cls, v: tuple[str, ...]) -> tuple[str, ...]:
        return tuple(t.key for t in resolve_tasks(v))

    @field_validator("perturbation_mix")
    @classmethod
    def _mix(cls, v: dict[str, float]) -> dict[str, float]:
        bad = [k for k in v if k not in KINDS[1:]]
        if bad or any(w < 0 for w in v.values()) or not any(w > 0 for w in v.values()):
            raise ValueError(f"kinds {', '.join(KINDS[1:])} with weights >= 0, one > 0; "
                             f"got {v}")
        return v

    @field_validator("perturbation")
    @classmethod
    def _kind(cls, v: str | None) -> str | None:
        if v is not None and v not in KINDS:
            raise ValueError(f"{v!r} is not one of {', '.join(KINDS)}")
        return v

    @field_validator("min_duration_s")
    @classmethod
    def _below_duration(cls, v: float | None, info: ValidationInfo) -> float | None:
        longest = info.data.get("duration_s")
        if v is not None and longest is not None and v > longest:
            raise ValueError(f"above duration_s {longest}")
        return v

    def steps(self, duration_s: float) -> int:
        """Control steps of a rollout lasting ``duration_s``."""
        return round(duration_s * CONTROL_HZ)

    def frame_steps(self, duration_s: float) -> np.ndarray:
        """(F,) control-step indices the frames of a ``duration_s`` rollout are rendered at."""
        n = int(np.floor(duration_s * self.fps + 1e-9)) + 1
        return np.minimum(np.round(np.arange(n) * CONTROL_HZ / self.fps).astype(int),
                          self.steps(duration_s))


def make_config(**fields: Any) -> SimConfig:
    """A :class:`SimConfig`, or a one-line :class:`SimError` naming the bad field."""
    if "tasks" in fields:
        fields["tasks"] = tuple(t.key for t in resolve_tasks(fields["tasks"]))
    try:
        cfg = SimConfig(**fields)
    except ValidationError as exc:
        raise SimError(f"sim config: {describe_validation(exc)}") from None
    if cfg.perturbation not in (None, "none"):
        no = [t for t in cfg.tasks if cfg.perturbation not in kinds_for(TASKS[t])]
        if no:
            raise SimError(f"--perturbation {cfg.perturbation}: does not apply to "
                           f"{', '.join(no)}")
    return cfg


def run_id(cfg: SimConfig, index: int) -> str:
    return f"sim-{cfg.seed:04d}-{index:04d}"


def plan(cfg: SimConfig, index: int) -> dict:
    """What rollout ``index`` will be (task, env seed, perturbation, camera poses, length);
    no physics. The length is drawn last, so a set with ``min_duration_s`` has the same
    perturbations and poses as one without."""
    task = TASKS[cfg.tasks[index % len(cfg.tasks)]]
    group = index // len(cfg.tasks) // cfg.group_size
    task_key = zlib.crc32(task.key.encode())
    env_seed = int(np.random.SeedSequence([cfg.seed, task_key, group]).generate_state(1)[0] >> 1)
    rng = np.random.default_rng([cfg.seed, index])
    if cfg.perturbation is not None:
        kind = cfg.perturbation
    elif rng.random() < cfg.failure_rate:
        kinds = [k for k in kinds_for(task) if cfg.perturbation_mix.get(k, 0) > 0] or ["none"]
        w = np.array([cfg.perturbation_mix.get(k, 1.0) for k in kinds])
        kind = kinds[int(rng.choice(len(kinds), p=w / w.sum()))]
    else:
        kind = "none"
    pert, poses = draw(rng, kind), draw_poses(rng, cfg.cameras)
    duration = cfg.duration_s
    if cfg.min_duration_s is not None:  # to a whole frame, within the range
        lo = np.ceil(cfg.min_duration_s * cfg.fps - 1e-9)
        hi = np.floor(cfg.duration_s * cfg.fps + 1e-9)
        duration = float(rng.integers(lo, hi, endpoint=True)) / cfg.fps
    return {"task": task, "env_seed": env_seed, "group": group, "perturbation": pert,
            "poses": poses, "duration_s": duration}


def _policy_checkpoint(task: SimTask) -> str:
    import importlib

    module = importlib.import_module("metaworld.policies")
    cls = getattr(module, task.policy)
    source = Path(sys.modules[cls.__module__].__file__).read_bytes()
    return "sha256:" + hashlib.sha256(source).hexdigest()


def attribution_for(task: SimTask, env_seed: int, versions: dict[str, str],
                    mount_h_mm: float) -> dict:
    """The attribution of one simulated run: the 11 required fields, env and seed."""
    return {
        "policy": {"vendor": "metaworld", "name": f"scripted-expert/{task.key}",
                   "version": versions["metaworld"], "checkpoint": _policy_checkpoint(task)},
        "body": {"arm": "Sawyer (MuJoCo, mocap-driven)", "hand": "parallel-jaw", "dof": 8,
                 "mount_h_mm": mount_h_mm, "calibrated_at": "2026-06-01"},
        "task": {"id": task.task_id, "tier": "A"},
        "env": {"simulator": f"mujoco {versions['mujoco']}",
                "suite": f"metaworld {versions['metaworld']}", "env": task.env_name,
                "control_hz": CONTROL_HZ},
        "seed": env_seed,
        "reset": {"type": "simulated", "seconds": 0.0},
    }


def write_rollout(out: str | Path, cfg: SimConfig, index: int) -> dict:
    """Simulate, render, encode and write rollout ``index``; returns its truth."""
    from judge.bundle.create import assemble_bundle
    from judge.bundle.streams import Signals
    from judge.bundle.transcode import encode_frames
    from judge.sim.physics import ARM_JOINTS, Render, rollout

    p = plan(cfg, index)
    task: SimTask = p["task"]
    pert: Perturbation = p["perturbation"]
    steps = cfg.frame_steps(p["duration_s"])
    ro = rollout(task, p["env_seed"], pert, cfg.steps(p["duration_s"]), p["poses"],
                 Render(cfg.width, cfg.height, steps), planned_steps=cfg.steps(cfg.duration_s))
    trace, frames, fired = ro.trace, ro.frames, ro.fired_step
    lab = label(trace, cfg.labels)
    gop = max(1, round(cfg.gop_s * cfg.fps))
    times = steps * trace.dt  # (F,) s, the control steps the frames were rendered at
    cameras = [replace(encode_frames(iter(frames[c]), cfg.width, cfg.height, cfg.fps, gop, c),
                       t=times) for c in CAMERAS]
    t = trace.t
    actuator = cfg.gripper_signal == "actuator"
    signals = Signals(t=t, joint_names=ARM_JOINTS, position=trace.q, velocity=trace.qd,
                      effort=trace.tau, gripper_t=t, gripper_width=trace.width,
                      gripper_force=trace.actuator if actuator else trace.grip)
    rid = run_id(cfg, index)
    truth = {
        "run_id": rid, "task_id": task.task_id, "task": task.key, "env": task.env_name,
        **{k: v for k, v in lab.as_dict().items() if k != "contacts"},
        "seed": cfg.seed, "index": index, "env_seed": p["env_seed"],
        "seed_group": f"{task.task_id}:{p['env_seed']}",
        "initial": {"object": [round(float(v), 4) for v in trace.obj[0]],
                    "goal": [round(float(v), 4) for v in trace.goal]},
        "perturbation": {**pert.as_dict(),
                         "fired_t": None if fired is None else round(fired * trace.dt, 4)},
        "contacts": lab.contacts,
        "camera_poses": {c: p["poses"][c].as_dict() for c in CAMERAS},
        "duration_s": p["duration_s"], "fps": cfg.fps, "cameras": list(CAMERAS),
        "control_hz": CONTROL_HZ, "versions": ro.versions,
    }
    attribution = attribution_for(task, p["env_seed"], ro.versions, ro.mount_h_mm)
    assemble_bundle(Path(out) / rid, cameras, signals, attribution,
                    START_NS + index * 10**12,
                    unlisted={"truth.json": (json.dumps(truth, indent=2) + "\n").encode()},
                    gripper={"profile": "sawyer-sim"} if actuator else None)
    return truth


def _one(args: tuple[str, SimConfig, int]) -> dict:
    """One rollout in a worker process (see :func:`_die_with_parent`)."""
    try:
        return write_rollout(*args)
    except SystemExit as stop:  # SIGTERM mid-rollout (_die_with_parent): the bundle being
        # written has removed its temporary folder; leave now, or the pool waits for more work
        os._exit(stop.code if isinstance(stop.code, int) else 1)


PR_SET_PDEATHSIG = 1  # linux/prctl.h


def _die_with_parent(parent: int) -> None:
    """A worker's initializer: the worker is sent SIGTERM when the process that started it
    dies (however it dies: a kill, SIGKILL, a crash), and SIGTERM ends it through Python, so
    a bundle it was writing leaves no temporary folder behind (:func:`_one`). Linux (prctl);
    elsewhere a worker may outlive a killed parent."""
    import ctypes

    def stop(signum: int, frame: object) -> None:
        raise SystemExit(128 + signum)

    signal.signal(signal.SIGTERM, stop)
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(PR_SET_PDEATHSIG, signal.SIGTERM)
    except (OSError, AttributeError):  # not Linux
        return
    if os.getppid() != parent:  # the parent died before prctl: nobody will signal
        os._exit(1)


def write_sim_set(out: str | Path, n: int, config: SimConfig | None = None, workers: int = 1,
                  progress: bool = False) -> tuple[list[Path], dict]:
    """Write ``n`` rollouts under ``out`` on ``workers`` processes; (folders, summary).

    Deterministic for a given config, whatever ``workers``. Existing run folders are never
    overwritten: the call refuses before simulating anything.
    """
    cfg = config or SimConfig()
    if n < 1 or workers < 1:
        raise SimError(f"--n {n} / --workers {workers}: both must be at least 1")
    out = Path(out)
    if out.exists() and not out.is_dir():
        raise SimError(f"--out {out}: is a file, expected a folder")
    taken = [run_id(cfg, i) for i in range(n) if (out / run_id(cfg, i)).exists()]
    if taken:
        raise SimError(f"--out {out}: {taken[0]} already exists ({len(taken)} of {n}); "
                       "bundles are never overwritten (another --out or --seed)")
    from judge.sim import deps

    deps.require()
    out.mkdir(parents=True, exist_ok=True)
    from rcjudge.progress import Progress

    meter = Progress(n, progress, "sim")
    start = time.perf_counter()
    truths: list[dict] = []
    jobs = [(str(out), cfg, i) for i in range(n)]
    if workers == 1:
        results = (write_rollout(*job) for job in jobs)
        pool = None
    else:
        pool = ProcessPoolExecutor(max_workers=min(workers, n), mp_context=get_context("spawn"),
                                   initializer=_die_with_parent, initargs=(os.getpid(),))
        results = pool.map(_one, jobs)
    try:
        for truth in results:
            truths.append(truth)
            meter.step()
    finally:
        if pool is not None:
            pool.shutdown(cancel_futures=True)
        meter.close()
    return [out / t["run_id"] for t in truths], summarize(truths, time.perf_counter() - start,
                                                           workers)


def summarize(truths: list[dict], seconds: float, workers: int) -> dict:
    """Counts of outcomes and the rate of a finished set."""
    outcomes = Counter("success" if t["success"] else t["failure_class"] for t in truths)
    return {"rollouts": len(truths), "outcomes": dict(sorted(outcomes.items())),
            "near_threshold": sum(bool(t["near_threshold"]) for t in truths),
            "perturbations": dict(sorted(Counter(t["perturbation"]["kind"]
                                                 for t in truths).items())),
            "seconds": round(seconds, 2), "workers": workers,
            "rollouts_per_min": round(60.0 * len(truths) / max(seconds, 1e-9), 2)}


def summary_line(s: dict) -> str:
    """The one-line summary the CLI prints last."""
    outcomes = ", ".join(f"{k} {v}" for k, v in s["outcomes"].items())
    return (f"sim: {s['rollouts']} rollouts ({outcomes}); near-threshold {s['near_threshold']}; "
            f"{s['rollouts_per_min']} rollouts/min ({s['workers']} worker(s), {s['seconds']} s)")
