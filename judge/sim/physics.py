"""Physics: one Meta-World rollout on MuJoCo, recorded as a trace plus rendered frames.

The only module of the generator that imports ``mujoco`` and ``metaworld``, and only
inside its functions (``judge.sim.deps.require`` runs first and sets ``MUJOCO_GL``).

The env is built the way its scripted experts work (``docs/sim.md``): fully observable
(the goal is in the observation; the partially observable default zeroes it and the
experts fail silently), a fresh random initial state per ``env_seed``, no step limit of its
own. Every control step (``env.dt`` = 12.5 ms, 80 Hz) records, from MuJoCo's state:

* the arm's 7 joint positions and velocities, and as *effort* the generalised force the
  mocap weld applies to each joint (``J_eqᵀ f_eq`` over the weld's constraint rows): the
  Sawyer here has no arm motors, the weld drags the hand and this is the torque a motor
  would have had to give, gravity, inertia and contact reactions included;
* the finger opening (distance between the two claw bodies, m);
* finger–object contact force: per side, the summed normal force (``mj_contactForce``) of
  contacts between that finger's geoms and the object's geoms; the grip force is the
  smaller side (a squeeze needs both; one finger pushing is not a grip);
* the gripper's actuator force (the finger actuators' mean ``|actuator_force|``, ~400 N
  a finger whenever driven, open or closed): what a real gripper reports as its effort,
  written instead of the grip force with ``gripper_signal="actuator"``;
* robot–object contact force (any robot geom, one side is enough) and robot–scene force
  (robot geoms against the table, floor, rim or a task's obstacle; not task fixtures such
  as the drawer case or the button box, which the experts press on);
* tool centre, object point (the object position the env observes), goal, the task's
  success metric and ``info["success"]``.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass

import numpy as np

from judge.sim import deps
from judge.sim.cameras import CAMERAS, CameraPose
from judge.sim.labels import Trace
from judge.sim.perturb import Perturbation, PerturbedExpert
from judge.sim.tasks import SCENE_BODIES, SimTask

ARM_JOINTS = tuple(f"right_j{i}" for i in range(7))


@dataclass(frozen=True)
class Rollout:
    """One simulated rollout."""

    trace: Trace
    frames: dict[str, np.ndarray]  # camera -> (F, H, W, 3) uint8 (empty without rendering)
    fired_step: int | None  # control step the perturbation took effect, None if never
    mount_h_mm: float  # height of the arm's base link above the floor
    versions: dict[str, str]  # metaworld, mujoco


@dataclass(frozen=True)
class Render:
    """Rendering options."""

    width: int
    height: int
    frame_steps: np.ndarray  # (F,) control-step indices (sample indices) to render


def make_env(task: SimTask, env_seed: int):
    """A Meta-World v3 env in the state its scripted expert needs, reset to ``env_seed``."""
    deps.require()
    from metaworld.env_dict import ALL_V3_ENVIRONMENTS

    env = ALL_V3_ENVIRONMENTS[task.env_name]()
    env._partially_observable = False
    try:
        del env.sawyer_observation_space  # cached with the goal zeroed
    except AttributeError:
        pass
    env._freeze_rand_vec = False
    env.seeded_rand_vec = True
    env._set_task_called = True
    env.max_path_length = 1 << 30
    env.seed(env_seed)
    obs, _ = env.reset(seed=env_seed)
    return env, obs


def _mount_height_mm(env) -> float:
    """Height of the arm's base link above the floor the table stands on (mm).

    The scene has no floor geom; the table stands where its lowest box geom ends.
    """
    import mujoco

    m, d = env.model, env.data
    table = m.body("tablelink").id
    feet = min(float(d.geom_xpos[g, 2] - m.geom_size[g, 2]) for g in range(m.ngeom)
               if m.geom_bodyid[g] == table and m.geom_type[g] == mujoco.mjtGeom.mjGEOM_BOX)
    return round((float(d.body("right_arm_base_link").xpos[2]) - feet) * 1000.0, 1)


def _subtree(model, root: int) -> set[int]:
    """Body ids of ``root`` and everything below it."""
    ids = {root}
    for b in range(model.nbody):
        p = b
        while p > 0:
            if p == root:
                ids.add(b)
                break
            p = int(model.body_parentid[p])
    return ids


class _Probe:
    """Reads one sample of the trace from MuJoCo's state."""

    def __init__(self, env, task: SimTask) -> None:
        import mujoco

        self.mj, self.env = mujoco, env
        m = env.model
        self.m, self.d = m, env.data
        robot = _subtree(m, m.body("right_arm_base_link").id)
        obj = set().union(*(_subtree(m, m.body(b).id) for b in task.object_bodies))
        scene = {m.body(b).id for b in SCENE_BODIES + task.obstacles}
        left = _subtree(m, m.body("leftclaw").id) | _subtree(m, m.body("leftpad").id)
        right = _subtree(m, m.body("rightclaw").id) | _subtree(m, m.body("rightpad").id)
        body = m.geom_bodyid
        self.g_robot = {g for g in range(m.ngeom) if body[g] in robot}
        self.g_obj = {g for g in range(m.ngeom) if body[g] in obj}
        self.g_scene = {g for g in range(m.ngeom) if body[g] in scene}
        self.g_left = {g for g in range(m.ngeom) if body[g] in left}
        self.g_right = {g for g in range(m.ngeom) if body[g] in right}
        self.qpos = [m.jnt_qposadr[m.joint(j).id] for j in ARM_JOINTS]
        self.dof = [m.jnt_dofadr[m.joint(j).id] for j in ARM_JOINTS]
        self.f6 = np.zeros(6)
        self.task = task
        self.grip_act = [i for i in range(m.nu) if m.actuator_trntype[i] == 0
                         and m.actuator_trnid[i, 0] not in
                         {m.joint(j).id for j in ARM_JOINTS}]  # the finger actuators

    def forces(self) -> tuple[float, float, float]:
        """(grip, touch, scene) normal forces in N."""
        fl = fr = touch = scene = 0.0
        d = self.d
        for i in range(d.ncon):
            c = d.contact[i]
            g1, g2 = int(c.geom1), int(c.geom2)
            r1, r2 = g1 in self.g_robot, g2 in self.g_robot
            if r1 == r2:
                continue  # robot-robot or neither
            rg, other = (g1, g2) if r1 else (g2, g1)
            self.mj.mj_contactForce(self.m, d, i, self.f6)
            fn = abs(float(self.f6[0]))
            if other in self.g_obj:
                touch += fn
                fl += fn if rg in self.g_left else 0.0
                fr += fn if rg in self.g_right else 0.0
            elif other in self.g_scene:
                scene += fn
        return min(fl, fr), touch, scene

    def weld_effort(self) -> np.ndarray:
        """Generalised force of the equality (mocap weld) rows on the arm joints (Nm). (7,)"""
        m, d = self.m, self.d
        n = d.nefc
        if n == 0:
            return np.zeros(len(self.dof))
        eq = np.asarray(d.efc_type[:n]) == self.mj.mjtConstraint.mjCNSTR_EQUALITY
        if self.mj.mj_isSparse(m):
            dense = np.zeros((n, m.nv))
            self.mj.mju_sparse2dense(dense, d.efc_J, d.efc_J_rownnz[:n], d.efc_J_rowadr[:n],
                                     d.efc_J_colind)
        else:
            dense = np.asarray(d.efc_J[: n * m.nv]).reshape(n, m.nv)
        tau = dense[eq].T @ np.asarray(d.efc_force[:n])[eq]  # (nv,)
        return tau[self.dof]

    def sample(self, obs: np.ndarray, info: dict) -> dict:
        env, d = self.env, self.d
        grip, touch, scene = self.forces()
        obj = np.asarray(obs[4:7], dtype=np.float64).copy()
        goal = np.asarray(env._target_pos, dtype=np.float64).copy()
        metric = float(info["obj_to_target"])
        return {
            "q": d.qpos[self.qpos].copy(), "qd": d.qvel[self.dof].copy(),
            "tau": self.weld_effort(),
            "width": float(np.linalg.norm(d.body("rightclaw").xpos - d.body("leftclaw").xpos)),
            "grip": grip, "touch": touch, "scene": scene,
            "actuator": float(np.abs(d.actuator_force[self.grip_act]).mean())
            if self.grip_act else 0.0,
            "tcp": np.asarray(env.tcp_center, dtype=np.float64).copy(), "obj": obj,
            "goal": goal, "metric": metric, "success": bool(info["success"]),
        }


def _renderer(env, render: Render):
    import mujoco

    m = env.model
    m.vis.quality.offsamples = 0  # no anti-aliasing (cost)
    m.vis.global_.offwidth = max(m.vis.global_.offwidth, render.width)
    m.vis.global_.offheight = max(m.vis.global_.offheight, render.height)
    for i in range(m.nsite):  # only the goal marker stays visible
        if m.site(i).name != "goal":
            m.site_rgba[i, 3] = 0.0
    r = mujoco.Renderer(m, render.height, render.width)
    r.scene.flags[mujoco.mjtRndFlag.mjRND_SHADOW] = 0
    r.scene.flags[mujoco.mjtRndFlag.mjRND_REFLECTION] = 0
    return r


def _camera(pose: CameraPose):
    import mujoco

    cam = mujoco.MjvCamera()
    cam.type = mujoco.mjtCamera.mjCAMERA_FREE
    cam.lookat[:] = pose.lookat
    cam.distance, cam.azimuth, cam.elevation = pose.distance, pose.azimuth, pose.elevation
    return cam


def versions() -> dict[str, str]:
    """Versions of the simulator stack (recorded in truth.json and the attribution)."""
    from importlib.metadata import version

    return {"metaworld": version("metaworld"), "mujoco": version("mujoco")}


def rollout(task: SimTask, env_seed: int, pert: Perturbation, steps: int,
            poses: dict[str, CameraPose] | None = None, render: Render | None = None,
            planned_steps: int | None = None) -> Rollout:
    """Run the perturbed expert for ``steps`` control steps.

    The trace has ``steps + 1`` samples: the reset state, then one after each step;
    frames are rendered (given ``render`` and ``poses``) at ``render.frame_steps``.
    ``planned_steps`` (default ``steps``) is the episode the perturbation is planned for
    (``slow`` hesitates for a share of it): with more than ``steps``, the time limit cuts
    the run, which is then the start of the longer one.
    """
    deps.require()
    from metaworld import policies

    env, obs = make_env(task, env_seed)
    renderer = None
    try:
        mount = _mount_height_mm(env)
        expert = PerturbedExpert(getattr(policies, task.policy)(), pert, env, obs,
                                  planned_steps or steps)
        probe = _Probe(env, task)
        rows = [probe.sample(obs, env.evaluate_state(obs, np.zeros(4, np.float32))[1])]
        frames: dict[str, list[np.ndarray]] = {c: [] for c in CAMERAS}
        wanted: set[int] = set()
        if render is not None and poses is not None:
            renderer = _renderer(env, render)
            cams = {c: _camera(poses[c]) for c in CAMERAS}
            wanted = {int(k) for k in render.frame_steps}
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # the experts' "constant(s) may be too high"
            for k in range(steps + 1):
                if k:
                    obs, _, _, _, info = env.step(expert.act(obs))
                    rows.append(probe.sample(obs, info))
                if k in wanted:
                    for c in CAMERAS:
                        renderer.update_scene(env.data, camera=cams[c])
                        frames[c].append(renderer.render().copy())  # (H, W, 3) uint8
    finally:
        if renderer is not None:
            renderer.close()
        env.close()
    trace = Trace.from_rows(rows, dt=float(env.dt), threshold=task.threshold_m,
                            grasp_task=task.grasp)
    out = {c: np.stack(v) if v else np.zeros((0, 0, 0, 3), np.uint8) for c, v in frames.items()}
    return Rollout(trace, out, expert.fired_at, mount, versions())
