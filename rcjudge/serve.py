"""``rcjudge serve``: one server, one port, for the Judge API, the review page and the
verdict screen.

``rcjudge serve [--db URL|PATH] [--host H] [--port P] [--bundle-root URI]…`` serves, on
port 8765 by default:

- the HTTP Judge API (``judge.api``: ``/v1/…``, ``/openapi.json``, ``/docs``);
- the review queue's page, ``/review?judge=V`` (``judge.review``): a key with
  ``labels:write`` labels the runs it may see there (docs/review.md);
- the verdict screen, when given any of its inputs (``--cards``, the three tables +
  ``--artifact``, ``--previous``), at the paths it always had (``/``, ``/api/cards``,
  ``/api/checks``, ``/healthz``), kept out of the API's OpenAPI schema.

``--only api,review,screen`` (a comma list) leaves the other parts off: ``--only api`` is
the API alone; ``--only screen`` the screen alone, opening no database; ``--only review``
the review page alone, with no API keys, so for one operator on loopback labelling as
``--labeller`` (``judge.review.cli``). The screen's inputs are read and checked before any
database is opened, so bad input exits 2 with nothing created.

The old spellings stay one release as hidden aliases with a notice (docs/cli.md):
``api serve`` (port 8000) is ``serve --only api``, ``review serve`` (port 8766) is
``serve --only review``, ``serve --no-api`` is ``serve --only screen``.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from rcjudge.aliases import notice, renamed
from rcjudge.errors import RcjudgeError

DEFAULT_PORT = 8765  # the screen's port since before the API; kept so its URL still works
SCREEN_PATHS = ("/", "/api/cards", "/api/checks", "/healthz")
PARTS = ("api", "review", "screen")


class ServeError(RcjudgeError, ValueError):
    """``rcjudge serve`` was given flags that do not go together."""


def _common(p: argparse.ArgumentParser, port: int) -> None:
    from judge.api.cli import bundle_root_arg
    from judge.ledgers.cli import db_arg

    db_arg(p)
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--port", type=int, default=port)
    bundle_root_arg(p)


def _review_args(p: argparse.ArgumentParser, required: bool) -> None:
    p.add_argument("--judge", required=required, metavar="VERSION",
                   help="--only review: the judge version whose queue to label (name or YAML "
                   "file)")
    p.add_argument("--labeller", metavar="NAME", help="--only review: labeled_by of every "
                   "label (default: $RCJUDGE_LABELLER, else your login name)")


def register(sub: argparse._SubParsersAction) -> None:
    """serve: ``serve`` (and the hidden ``serve --no-api``)."""
    from verdict.cli import screen_args

    p = sub.add_parser("serve", help="one server: the Judge API, the review page and (given "
                       "its inputs) the verdict screen, on one port (docs/cli.md)")
    _common(p, DEFAULT_PORT)
    p.add_argument("--only", metavar="PART[,PART]", help="serve only these parts of "
                   f"{','.join(PARTS)} (default: api and review, and screen when given its "
                   "inputs); screen alone opens no database; review alone has no keys and "
                   "listens on loopback only")
    _review_args(p, required=False)
    p.add_argument("--no-api", action="store_true", help=argparse.SUPPRESS)  # --only screen
    screen_args(p)
    p.set_defaults(func=_cmd_serve)


def _subcommands(parser: argparse.ArgumentParser) -> argparse._SubParsersAction:
    return next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))


def register_aliases(sub: argparse._SubParsersAction) -> None:
    """The old ``api serve`` and ``review serve``, hidden, each on its old port."""
    from judge.review.cli import DEFAULT_PORT as REVIEW_PORT

    p = _subcommands(sub.choices["api"]).add_parser("serve")
    _common(p, 8000)
    p.set_defaults(func=renamed("api serve", "serve --only api", _cmd_serve),
                   only="api", no_api=False)
    p = _subcommands(sub.choices["review"]).add_parser("serve")
    _common(p, REVIEW_PORT)
    _review_args(p, required=True)
    p.set_defaults(func=renamed("review serve", "serve --only review", _cmd_serve),
                   only="review", no_api=False)


def parts(args: argparse.Namespace) -> frozenset[str]:
    """The parts ``args`` asks for (``--only``, ``--no-api``, or the default)."""
    from verdict.cli import wants_screen

    only = getattr(args, "only", None)
    if getattr(args, "no_api", False):
        if only is not None:
            raise ServeError("--no-api: the old spelling of --only screen; not with --only")
        return frozenset({"screen"})
    if only is None:
        return frozenset({"api", "review"} | ({"screen"} if wants_screen(args) else set()))
    asked = [x.strip() for x in only.split(",") if x.strip()]
    bad = [x for x in asked if x not in PARTS]
    if bad or not asked:
        raise ServeError(f"--only {only!r}: expected a comma list of {', '.join(PARTS)}")
    return frozenset(asked)


def add_screen(app: Any, screen: Any) -> None:
    """Put the screen's routes into ``app``, outside its OpenAPI schema; a path ``app``
    serves already (its routers' included: :func:`judge.api.wire.effective_routes`) is
    refused."""
    from fastapi.routing import APIRoute

    from judge.api.wire import effective_routes

    taken = {getattr(r, "path", None) for r in effective_routes(app.router.routes)}
    for route in screen.router.routes:
        if isinstance(route, APIRoute) and route.path in SCREEN_PATHS:
            if route.path in taken:
                raise ServeError(f"the verdict screen's {route.path} is already an API path")
            route.include_in_schema = False
            app.router.routes.append(route)


def _check(args: argparse.Namespace, want: frozenset[str]) -> None:
    """Flags given for a part left off: refused, naming the flag."""
    alone = "--no-api" if getattr(args, "no_api", False) else "--only screen"
    if "api" not in want and "review" not in want:
        if args.db is not None:
            raise ServeError(f"--db: the Judge API's database; not used with {alone}")
        if args.bundle_root:
            raise ServeError("--bundle-root: where the Judge API reads bundles; not used with "
                             f"{alone}")
    if "api" in want and (getattr(args, "judge", None) or getattr(args, "labeller", None)):
        raise ServeError("--judge/--labeller: for the review page alone (--only review); "
                         "with the API the page's queue is chosen by ?judge=V and labels "
                         "are the key's")
    if "review" in want and "api" not in want and not getattr(args, "judge", None):
        raise ServeError("--only review: give --judge VERSION, the version whose queue to "
                         "label")


def build(args: argparse.Namespace) -> tuple[Any, Any]:
    """(the app to serve, what to close after or None) for ``rcjudge serve``'s args."""
    from verdict.cli import screen_app

    want = parts(args)
    _check(args, want)
    screen = screen_app(args) if "screen" in want else None
    if "api" not in want and "review" not in want:
        return screen, None
    if "api" not in want:  # the review page alone: one operator, no keys, loopback
        from judge.review.cli import build as build_review

        app, ledger = build_review(args)
        if screen is not None:
            add_screen(app, screen)
        return app, ledger
    from judge.api.routes import create_app
    from judge.api.service import JudgeService

    service = JudgeService(args.db, workers=1, bundle_roots=args.bundle_root)
    app = create_app(service)
    if "review" in want:
        from judge.review.routes import KeyDesk, add_review

        add_review(app, KeyDesk(service))  # /review: the review queue's page, with API keys
    if screen is not None:
        add_screen(app, screen)
    return app, service


def _cmd_serve(args: argparse.Namespace) -> int:
    from judge.api.server import serve

    if getattr(args, "no_api", False):
        notice("serve --no-api", "serve --only screen")
    app, closing = build(args)
    if getattr(app.state, "labeller", None) is not None:
        print(f"review page: http://{args.host}:{args.port}/review (labelling as "
              f"{app.state.labeller})", file=sys.stderr)
    try:
        serve(app, args.host, args.port)
    finally:
        if closing is not None:
            closing.close()
    return 0
