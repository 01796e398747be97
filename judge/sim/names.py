"""Names the ``rcjudge sim`` parser offers before any simulator code (numpy, MuJoCo) loads."""

from __future__ import annotations

#: The perturbations of a scripted expert (:mod:`judge.sim.perturb`).
KINDS = ("none", "release", "weak_grip", "offset", "slow", "crash", "idle")
