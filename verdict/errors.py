"""Errors of the verdict engine, rooted at the project's :class:`rcjudge.errors.RcjudgeError`.

``rcjudge`` prints any of these as one line; a refused table or cards file exits 1, a
usage error (a missing flag) 2. The messages name the file or table, the column, the bad
value and what was expected.
"""

from __future__ import annotations

from rcjudge.errors import InputError, RcjudgeError


class VerdictInputError(InputError, ValueError):
    """An input table or cards file cannot be used as given (exit 1)."""


class VerdictUsageError(RcjudgeError, ValueError):
    """The verdict command's flags do not go together, or one is missing (exit 2)."""
