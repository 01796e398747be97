"""``rcjudge serve``: the verdict screen over HTTP (FastAPI), thin over :mod:`.render`.

The app holds one :class:`ScreenState` (this round's cards and their check
report, the previous round's saved cards, the grade result file path) and
renders the same page ``rcjudge verdict --html`` writes. The grade file is
read on every request, so a figure appears once the runner has written one.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from fastapi import FastAPI
from fastapi.responses import HTMLResponse, JSONResponse

from verdict.grade import read_result
from verdict.screen.render import render_page


@dataclass
class ScreenState:
    """What the screen shows; ``cards`` is None before new records are loaded."""

    cards: list[dict[str, Any]] | None
    report: dict[str, Any] | None = None
    previous: list[dict[str, Any]] | None = None
    grade_path: str | None = None
    title: str = ""

    def page(self) -> str:
        """Render the page now (re-reading the grade result file)."""
        return render_page(self.cards, self.report, self.previous,
                           read_result(self.grade_path), self.grade_path, self.title)


def create_app(state: ScreenState) -> FastAPI:
    """A FastAPI app serving ``/`` (the page), ``/api/cards``, ``/api/checks``, ``/healthz``."""
    app = FastAPI(title="rcjudge verdict screen", docs_url=None, redoc_url=None)

    @app.get("/", response_class=HTMLResponse)
    def page() -> HTMLResponse:
        return HTMLResponse(state.page())

    @app.get("/api/cards")
    def cards() -> JSONResponse:
        return JSONResponse({"current": state.cards, "previous": state.previous})

    @app.get("/api/checks")
    def checks() -> JSONResponse:
        return JSONResponse(state.report)

    @app.get("/healthz")
    def health() -> dict[str, str]:
        return {"status": "ok"}

    return app
