"""The root of every error rcjudge raises on purpose, shared by all packages.

``judge``, ``models`` and ``verdict`` each subclass :class:`RcjudgeError` (and a
built-in such as ``ValueError``); the CLI prints any of them as one line and exits 2.
Every message names the file/field, the bad value and what was expected.
"""

from __future__ import annotations


class RcjudgeError(Exception):
    """Root of every error rcjudge raises on purpose."""


class InputError(RcjudgeError):
    """An input given to a command (a bundle, a recording, a dataset) is unusable.

    The commands that read inputs (``judge``, ``batch``, ``rejudge``, ``import``,
    ``bundle create``) exit 1 for it; a usage or setup error exits 2 (``rcjudge --help``).
    """


def describe_validation(exc) -> str:
    """A pydantic ValidationError as one line: ``field.path: message (got VALUE); …``.

    The bad value is named when it is a scalar the message does not already show.
    """
    parts = []
    for e in exc.errors():
        where = ".".join(str(p) for p in e["loc"]) or "<root>"
        got = e.get("input")
        shown = repr(got) if len(repr(got)) <= 60 else repr(got)[:57] + "..."
        named = (e["type"] != "missing" and isinstance(got, str | int | float | bool)
                 and repr(got) not in e["msg"])
        parts.append(f"{where}: {e['msg']}" + (f" (got {shown})" if named else ""))
    return "; ".join(parts)
