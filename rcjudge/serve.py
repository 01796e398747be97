"""``rcjudge serve``: one server for the Judge API and, when asked, the verdict screen.

``rcjudge serve [--db URL] [--host H] [--port P] [--bundle-root URI]…`` serves the HTTP Judge API
(``judge.api``: ``/v1/…``, ``/openapi.json``, ``/docs``). Given any of the verdict
screen's inputs (``--cards``, the three tables + ``--artifact``, ``--previous``) it
serves the screen in the same process too, at the paths it always had (``/``,
``/api/cards``, ``/api/checks``, ``/healthz``), kept out of the API's OpenAPI schema.
It serves the review queue's page too, ``/review?judge=V`` (``judge.review``): a key with
``labels:write`` labels its own runs there (docs/review.md).
``--no-api`` serves the screen alone, opening no database (the command as it was before
the API existed). The screen's inputs are read and checked before any database is
opened, so bad input exits 2 with nothing created. ``rcjudge api serve`` stays: the API
alone, on port 8000. docs/api.md ("Commands") says why.
"""

from __future__ import annotations

import argparse
from typing import Any

from rcjudge.errors import RcjudgeError

DEFAULT_PORT = 8765  # the screen's port since before the API; kept so its URL still works
SCREEN_PATHS = ("/", "/api/cards", "/api/checks", "/healthz")


class ServeError(RcjudgeError, ValueError):
    """``rcjudge serve`` was given flags that do not go together."""


def register(sub: argparse._SubParsersAction) -> None:
    from verdict.cli import screen_args

    p = sub.add_parser("serve", help="serve the Judge API (and the verdict screen when "
                       "given its inputs)")
    p.add_argument("--db", default=None, help="Judge API: live database URL (default: "
                   "$RCJUDGE_DB or the data dir's rcjudge.db)")
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--port", type=int, default=DEFAULT_PORT)
    from judge.api.cli import bundle_root_arg

    bundle_root_arg(p)
    p.add_argument("--no-api", action="store_true",
                   help="serve only the verdict screen (no database is opened)")
    screen_args(p)
    p.set_defaults(func=_cmd_serve)


def add_screen(api: Any, screen: Any) -> None:
    """Put the screen's routes into the API's app, outside its OpenAPI schema."""
    from fastapi.routing import APIRoute

    taken = {getattr(r, "path", None) for r in api.router.routes}
    for route in screen.router.routes:
        if isinstance(route, APIRoute) and route.path in SCREEN_PATHS:
            if route.path in taken:
                raise ServeError(f"the verdict screen's {route.path} is already an API path")
            route.include_in_schema = False
            api.router.routes.append(route)


def build(args: argparse.Namespace) -> tuple[Any, Any]:
    """(the app to serve, the JudgeService to close or None) for ``rcjudge serve``'s args."""
    from verdict.cli import screen_app, wants_screen

    if args.no_api and args.db is not None:
        raise ServeError("--db: the Judge API's database; not used with --no-api")
    if args.no_api and args.bundle_root:
        raise ServeError("--bundle-root: where the Judge API reads bundles; not used with "
                         "--no-api")
    screen = screen_app(args) if args.no_api or wants_screen(args) else None
    if args.no_api:
        return screen, None
    from judge.api.routes import create_app
    from judge.api.service import JudgeService
    from judge.review.routes import KeyDesk, add_review

    service = JudgeService(args.db, workers=1, bundle_roots=args.bundle_root)
    app = create_app(service)
    add_review(app, KeyDesk(service))  # /review: the review queue's page, with API keys
    if screen is not None:
        add_screen(app, screen)
    return app, service


def _cmd_serve(args: argparse.Namespace) -> int:
    from judge.api.server import serve

    app, service = build(args)
    try:
        serve(app, args.host, args.port)
    finally:
        if service is not None:
            service.close()
    return 0
