"""The HTTP surface held still: both OpenAPI documents and the route table of the app
``rcjudge serve`` builds (the Judge API, the sequence-outcome routes, the review page) and of
``rcjudge review serve``'s, against a snapshot taken before the routes became one router per
resource (issue 40 item 6).

``tests/fixtures/api_surface.json`` was written by ``python -m tests.api.test_api_surface``
on main at 4091362 (before the split), and rewritten once since for a change meant: the
judgment request's body written inline, not a 59th component schema (issue 40 item 4).
Rewrite it that way only for a change of the surface that is meant, and say so in the commit.

The documents are compared as JSON values (every key and value, lists in order); the route
table as a sorted list of (path, methods, name, in the schema or not). The order routes are
registered in can only matter where two routes match one URL: no two do
(:func:`test_no_two_routes_match_one_url`), so the table's order is not part of the surface.
"""

from __future__ import annotations

import json
import re
import sys
import tempfile
from pathlib import Path
from typing import Any

from fastapi.testclient import TestClient

from judge.api.routes import create_app
from judge.api.service import JudgeService
from tests.api.conftest import TMP_ROOTS, fake_judges

SNAPSHOT = Path(__file__).resolve().parents[1] / "fixtures" / "api_surface.json"


def flat(routes: list) -> list:
    """Every route, an included router's routes in its place (FastAPI from 0.137.2 keeps an
    included router as one entry of ``app.routes``; earlier ones copy its routes in)."""
    try:
        from fastapi.routing import iter_route_contexts
    except ImportError:
        return list(routes)
    return list(iter_route_contexts(routes))


def table(routes: list) -> list[dict[str, Any]]:
    """(path, methods, name, in the schema) of every route, sorted."""
    rows = [{"path": r.path, "methods": sorted(r.methods or ()), "name": r.name,
             "in_schema": bool(getattr(r, "include_in_schema", True))} for r in flat(routes)]
    return sorted(rows, key=lambda r: (r["path"], r["methods"], r["name"]))


def serve_app(service: JudgeService) -> Any:
    """The app as ``rcjudge serve`` builds it without the verdict screen."""
    from judge.review.routes import KeyDesk, add_review

    app = create_app(service)
    add_review(app, KeyDesk(service))
    return app


def surface(service: JudgeService, folder: Path) -> dict[str, Any]:
    """Both schemas as served (each with its webhooks), and the route tables."""
    from judge.ledgers.store import Ledger
    from judge.review.routes import LocalDesk, local_app

    app = serve_app(service)
    with TestClient(app) as c:
        judge_api, outcomes = c.get("/openapi.json"), c.get("/api/v1/openapi.json")
    assert judge_api.status_code == outcomes.status_code == 200
    ledger = Ledger.open(f"sqlite:///{folder / 'review.db'}")
    try:
        local = local_app(LocalDesk(ledger, "tiny", "operator"))
    finally:
        ledger.close()
    return {"openapi": judge_api.json(), "outcomes_openapi": outcomes.json(),
            "routes": table(app.routes), "webhooks": table(app.webhooks.routes),
            "review_serve_routes": table(local.routes)}


def test_the_surface_is_the_snapshots(service, tmp_path):
    want = json.loads(SNAPSHOT.read_text(encoding="utf-8"))
    got = json.loads(json.dumps(surface(service, tmp_path)))  # as the file holds it
    assert set(got) == set(want)
    for part in sorted(want):
        assert got[part] == want[part], part
    assert len(got["openapi"]["paths"]) == 22  # the Judge API: 22 paths, 25 operations
    assert sum(len(ops) for ops in got["openapi"]["paths"].values()) == 25


def _sample(path: str) -> str:
    return re.sub(r"\{[^}]+\}", "p1", path)


def test_no_two_routes_match_one_url(service):
    """A URL made from each route's path (every parameter ``p1``) is matched by the routes
    of that path only, so no route shadows another whatever their order."""
    from starlette.routing import Match

    app = serve_app(service)
    routes = [r for r in flat(app.routes) if hasattr(r, "matches")]
    clashes = []
    for r in routes:
        url = _sample(r.path)
        scope = {"type": "http", "path": url, "root_path": "", "method": "GET"}
        hits = {o.path for o in routes if o.matches(scope)[0] != Match.NONE}
        if hits != {r.path}:
            clashes.append((url, sorted(hits)))
    assert clashes == []


if __name__ == "__main__":
    with tempfile.TemporaryDirectory() as tmp:
        svc = JudgeService(f"sqlite:///{tmp}/surface.db", judges=fake_judges(),
                           bundle_roots=TMP_ROOTS)
        try:
            doc = surface(svc, Path(tmp))
        finally:
            svc.close()
    SNAPSHOT.write_text(json.dumps(doc, indent=1, sort_keys=True, ensure_ascii=False) + "\n",
                        encoding="utf-8")
    print(f"{SNAPSHOT}: {SNAPSHOT.stat().st_size} bytes", file=sys.stderr)
