"""Availability of the simulator stack: one place that knows what the ``sim`` extra needs.

MuJoCo and Meta-World are imported only inside the functions that simulate, so importing
``judge.sim`` (or the CLI that registers ``rcjudge sim``) never loads them. Rendering is
offscreen through EGL (Mesa on a CPU machine: Debian ``libegl1 libegl-mesa0
libgl1-mesa-dri libopengl0``); the backend is chosen with ``MUJOCO_GL``, which this module
sets to ``egl`` unless the caller set it already.
"""

from __future__ import annotations

import ctypes.util
import importlib.util
import os

from judge.sim.errors import SimDependencyError

EXTRA_HINT = ("pip install -e '.[sim]' (metaworld, mujoco, packaging) and "
              "apt-get install libegl1 libegl-mesa0 libgl1-mesa-dri libopengl0")


def missing() -> list[str]:
    """What is missing for a rollout: Python packages and the EGL library, by name."""
    gone = [name for name in ("mujoco", "metaworld", "packaging")
            if importlib.util.find_spec(name) is None]
    if os.environ.get("MUJOCO_GL", "egl") == "egl" and ctypes.util.find_library("EGL") is None:
        gone.append("libEGL (Debian libegl1 + libegl-mesa0)")
    return gone


def require() -> None:
    """Set ``MUJOCO_GL`` (default ``egl``) and refuse with one line naming what is missing.

    Raises:
        SimDependencyError: a package or the EGL library is missing.
    """
    os.environ.setdefault("MUJOCO_GL", "egl")
    os.environ.setdefault("PYOPENGL_PLATFORM", os.environ["MUJOCO_GL"])
    if gone := missing():
        raise SimDependencyError(f"physics rollouts need {', '.join(gone)}: {EXTRA_HINT}")
