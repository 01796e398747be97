"""The Meta-World tasks the physics generator knows: env, expert, object, success threshold.

Pure data (no simulator import). Each task names the Meta-World v3 environment, the
scripted expert's policy class, the bodies that make up the manipulated object (for
contact bookkeeping) and the task's own success criterion: Meta-World's
``info["success"]`` is ``info["obj_to_target"] <= threshold`` for each of these tasks.

A robot contact counts as hitting the *scene* when the other body is the table, the floor,
the table's rim (:data:`SCENE_BODIES`) or a task's obstacle (the wall of pick-place-wall).
Task fixtures (drawer case, button box, peg box) are not scene: the experts press on them.

drawer-open gets no ``crash`` perturbation: its hand starts 15 cm from the handle, and a
crash on the way down lands on the drawer (the object) and often pulls it open.

door-open is left out: its expert pushes the door past the target on most seeds, so the
task's criterion no longer holds at the end of the episode (``docs/sim.md``).
"""

from __future__ import annotations

from dataclasses import dataclass

from judge.sim.errors import SimError

SCENE_BODIES = ("world", "tablelink", "RetainingWall")


@dataclass(frozen=True)
class SimTask:
    """One Meta-World task as the generator uses it."""

    key: str  # CLI name, e.g. "pick-place"
    env_name: str  # metaworld.env_dict.ALL_V3_ENVIRONMENTS key
    policy: str  # class name in metaworld.policies
    object_bodies: tuple[str, ...]  # bodies whose geoms are "the object"
    threshold_m: float  # info["success"] == (obj_to_target <= threshold_m)
    grasp: bool  # the expert grasps and carries the object
    obstacles: tuple[str, ...] = ()  # bodies that count as scene besides SCENE_BODIES
    skip_perturbations: tuple[str, ...] = ()  # perturbation kinds that do not apply

    @property
    def task_id(self) -> str:
        """The catalog id (configs/tasks.yaml)."""
        return "metaworld." + self.key.replace("-", "_")


TASKS: dict[str, SimTask] = {t.key: t for t in (
    SimTask("pick-place", "pick-place-v3", "SawyerPickPlaceV3Policy", ("obj",), 0.07, True),
    SimTask("pick-place-wall", "pick-place-wall-v3", "SawyerPickPlaceWallV3Policy", ("obj",),
            0.07, True, obstacles=("wall",)),
    SimTask("drawer-open", "drawer-open-v3", "SawyerDrawerOpenV3Policy", ("drawer_link",),
            0.03, False, skip_perturbations=("crash",)),
    SimTask("button-press-topdown", "button-press-topdown-v3",
            "SawyerButtonPressTopdownV3Policy", ("button",), 0.024, False),
    SimTask("peg-insert-side", "peg-insert-side-v3", "SawyerPegInsertionSideV3Policy",
            ("peg",), 0.07, True),
)}


def resolve_tasks(names: str | list[str] | tuple[str, ...]) -> tuple[SimTask, ...]:
    """Task keys (a comma list or a sequence; ``all`` for every task) -> tasks, in order.

    Raises:
        SimError: an unknown key, naming the known ones.
    """
    keys = [n.strip() for n in names.split(",")] if isinstance(names, str) else list(names)
    keys = [k for k in keys if k]
    if keys == ["all"]:
        return tuple(TASKS.values())
    unknown = [k for k in keys if k not in TASKS]
    if unknown or not keys:
        raise SimError(f"--tasks {','.join(keys) or '(none)'}: unknown task(s) "
                       f"{', '.join(unknown) or '(none given)'}; known: "
                       f"{', '.join(TASKS)} (or all)")
    return tuple(dict.fromkeys(TASKS[k] for k in keys))
