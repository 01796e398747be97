"""The root of every error rcjudge raises on purpose, shared by all packages.

``judge``, ``models`` and ``verdict`` each subclass :class:`RcjudgeError` (and a
built-in such as ``ValueError``); the CLI prints any of them as one line and exits 2, or 1
for an :class:`InputError` (``rcjudge --help``, docs/cli.md).
Every message names the file/field, the bad value and what was expected.
"""

from __future__ import annotations

import unicodedata


class RcjudgeError(Exception):
    """Root of every error rcjudge raises on purpose."""

    def lines(self) -> list[str]:
        """What the CLI prints, a line each (each escaped by :func:`one_line`): the message,
        or, for an error that lists several problems, its header and one line a problem."""
        return [str(self)]


class InputError(RcjudgeError):
    """An input given to a command (a bundle, a recording, a dataset) is unusable.

    Every command exits 1 for it, naming the input on one stderr line; a usage or setup
    error exits 2 (``rcjudge --help``).
    """


def describe_validation(exc) -> str:
    """A pydantic ValidationError as one line: ``field.path: message (got VALUE); …``.

    The bad value is named when it is a scalar the message does not already show.
    """
    parts = []
    for e in exc.errors():
        where = ".".join(str(p) for p in e["loc"]) or "<root>"
        got = e.get("input")
        named = (e["type"] != "missing" and isinstance(got, str | int | float | bool)
                 and repr(got) not in e["msg"])
        parts.append(f"{where}: {e['msg']}" + (f" (got {shown(got)})" if named else ""))
    return "; ".join(parts)


def shown(value: object, limit: int = 60) -> str:
    """``repr(value)`` for a message, cut to ``limit`` characters (a refusal of a 1 MB value
    never echoes the 1 MB back)."""
    text = repr(value)
    return text if len(text) <= limit else text[:limit - 3] + "..."


_ESCAPED_CATEGORIES = ("Cc", "Cs", "Zl", "Zp")  # controls, surrogates, line/para separators


def one_line(text: str) -> str:
    """``text`` as one printable line: control characters, lone surrogates and line/paragraph
    separators escaped (``\\n``, ``\\x1b``, ``\\ud800``, ``\\u2028``), everything else
    kept (Korean stays Korean).

    How every error is printed (``rcjudge: error: …``) and every problem ``detail`` is
    written, so a folder name holding a newline cannot split or forge a line.
    """
    if text.isprintable():
        return text
    out = []
    for ch in text:
        if ch.isprintable() or unicodedata.category(ch) not in _ESCAPED_CATEGORIES:
            out.append(ch)
        else:
            out.append(ch.encode("unicode_escape").decode("ascii"))
    return "".join(out)
