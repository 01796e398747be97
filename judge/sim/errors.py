"""Errors of the physics generator, under the project root :class:`RcjudgeError`."""

from __future__ import annotations

from rcjudge.errors import InputError, RcjudgeError


class SimError(RcjudgeError, ValueError):
    """A bad request to the physics generator (unknown task, bad option, bad folder)."""


class SimDependencyError(RcjudgeError, ImportError):
    """The simulator stack (the ``sim`` extra or an EGL library) is missing."""


class TruthInputError(SimError, InputError):
    """A bundle folder or truth file ``truth-labels`` was given cannot be read (exit 1)."""
