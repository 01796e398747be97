"""``rcjudge serve --only review``: the review page alone, for one operator on this machine.

``rcjudge serve --only review --judge V [--db URL] [--labeller NAME] [--port P]`` serves
``/review`` (``judge.review.routes``) over one ledger with no API keys, so it listens on
loopback only: ``--host`` must be ``127.0.0.1``, ``::1`` or ``localhost``. Every label it
writes has ``labeled_by`` the operator: ``--labeller`` if given, else
``$RCJUDGE_LABELLER``, else the login name of the user who started it (``getpass``). To
label with API keys (several people, another machine), open ``/review?judge=V`` of
``rcjudge serve``: there a label's ``labeled_by`` is the key's name.
"""

from __future__ import annotations

import argparse
import getpass
import os
from typing import Any

from judge.errors import JudgeError

LOOPBACK = ("127.0.0.1", "::1", "localhost")
DEFAULT_PORT = 8766


class ReviewServeError(JudgeError, ValueError):
    """``rcjudge review serve`` was given flags it cannot serve with."""


def labeller_name(given: str | None) -> str:
    """``--labeller``, else ``$RCJUDGE_LABELLER``, else the login name."""
    for name in (given, os.environ.get("RCJUDGE_LABELLER")):
        if name is not None:
            if not name.strip():
                raise ReviewServeError("--labeller: empty; expected the operator's name")
            return name.strip()
    try:
        return getpass.getuser()
    except (KeyError, OSError):  # no login name (a container without a passwd entry)
        raise ReviewServeError("--labeller: no login name to label as; give --labeller "
                               "NAME or set $RCJUDGE_LABELLER") from None


def build(args: argparse.Namespace) -> tuple[Any, Any]:
    """The app of ``review serve`` and the ledger to close; flags checked first."""
    from judge.ledgers.store import Ledger
    from judge.review.routes import LocalDesk, local_app

    if args.host not in LOOPBACK:
        raise ReviewServeError(f"--host {args.host}: review serve has no keys, so it listens "
                               "on loopback only (127.0.0.1, ::1, localhost); to label from "
                               "elsewhere use rcjudge serve, whose /review takes API keys")
    name = labeller_name(args.labeller)
    ledger = Ledger.open(args.db)
    try:
        desk = LocalDesk(ledger, args.judge, name)
    except BaseException:
        ledger.close()
        raise
    return local_app(desk), ledger
