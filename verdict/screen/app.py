"""``rcjudge serve``: the verdict screen over HTTP (FastAPI), thin over :mod:`.render`.

The app holds one :class:`ScreenState` (this round's cards and their check
report, the previous round's saved cards, the grade result file path) and
renders the same page ``rcjudge verdict --html`` writes. The grade file is
read on every request, so a figure appears once the runner has written one.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from fastapi import FastAPI, HTTPException
from fastapi.responses import FileResponse, HTMLResponse, JSONResponse

from verdict.grade import read_result
from verdict.screen.rates import CardRate
from verdict.screen.render import render_page
from verdict.screen.runs import RunLink


@dataclass
class ScreenState:
    """What the screen shows; ``cards`` is None before new records are loaded."""

    cards: list[dict[str, Any]] | None
    report: dict[str, Any] | None = None
    previous: list[dict[str, Any]] | None = None
    grade_path: str | None = None
    title: str = ""
    runs: dict[str, list[RunLink]] | None = None  # task_id -> runs linked to explain pages
    explain_dir: str | None = None  # served under /explain/
    rates: dict[str, CardRate] | None = None  # task_id -> the rectified rate of its cell
    checks_note: str = ""  # why ``report`` is None (verdict.screen.checks_file)

    def page(self) -> str:
        """Render the page now (re-reading the grade result file)."""
        return render_page(self.cards, self.report, self.previous,
                           read_result(self.grade_path), self.grade_path, self.title,
                           self.runs, self.rates, self.checks_note)


def create_app(state: ScreenState) -> FastAPI:
    """A FastAPI app serving ``/`` (the page), ``/api/cards``, ``/api/checks``, ``/healthz``.

    With ``state.explain_dir``, ``/explain/NAME.html`` serves that folder's explain pages
    (a plain file name only: no sub-folders, nothing outside it).
    """
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

    @app.get("/explain/{name}", response_class=FileResponse)
    def explain(name: str) -> FileResponse:
        folder = Path(state.explain_dir) if state.explain_dir else None
        if (folder is None or not name.endswith(".html") or name.startswith(".")
                or "/" in name or "\\" in name or not (folder / name).is_file()):
            raise HTTPException(status_code=404, detail=f"no explain page {name!r}")
        return FileResponse(folder / name, media_type="text/html; charset=utf-8")

    @app.get("/healthz")
    def health() -> dict[str, str]:
        return {"status": "ok"}

    return app
