"""Old command spellings, kept working for one release with a one-line notice.

A package's ``register`` adds an old spelling as a hidden subcommand (``add_parser``
without ``help``: not in ``--help``) whose ``func`` is :func:`renamed`'s wrapper: it
prints ``rcjudge: 'OLD' is now 'NEW'; the old spelling goes in the next release`` on
stderr and runs the new command. docs/cli.md lists every alias.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable

Command = Callable[[argparse.Namespace], int]


def notice(old: str, new: str) -> None:
    """The one stderr line an old spelling prints before it runs."""
    print(f"rcjudge: '{old}' is now '{new}'; the old spelling goes in the next release",
          file=sys.stderr)


def renamed(old: str, new: str, func: Command) -> Command:
    """``func`` behind a notice that ``old`` is now spelt ``new``."""

    def run(args: argparse.Namespace) -> int:
        notice(old, new)
        return func(args)

    return run
