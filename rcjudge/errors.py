"""The root of every error rcjudge raises on purpose, shared by all packages.

``judge``, ``models`` and ``verdict`` each subclass :class:`RcjudgeError` (and a
built-in such as ``ValueError``); the CLI prints any of them as one line and exits 2.
Every message names the file/field, the bad value and what was expected.
"""

from __future__ import annotations


class RcjudgeError(Exception):
    """Root of every error rcjudge raises on purpose."""


def describe_validation(exc) -> str:
    """A pydantic ValidationError as one line: ``field.path: message; …``."""
    return "; ".join(f"{'.'.join(str(p) for p in e['loc']) or '<root>'}: {e['msg']}"
                     for e in exc.errors())
