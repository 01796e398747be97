"""Errors of the verdict engine, rooted at the project's :class:`rcjudge.errors.RcjudgeError`.

``rcjudge`` prints any of these as one line and exits 2; the messages name the
file or table, the column, the bad value and what was expected.
"""

from __future__ import annotations

from rcjudge.errors import RcjudgeError


class VerdictInputError(RcjudgeError, ValueError):
    """An input table or cards file cannot be used as given."""
