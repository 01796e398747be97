"""``/v1/runs``: the key's runs (what happened)."""

from __future__ import annotations

from fastapi import APIRouter

from judge.api.dependencies import (
    BODY_ERRORS,
    ERRORS,
    NOT_FOUND,
    Auth,
    Cursor,
    Id,
    Limit,
    Service,
    need,
)
from judge.api.protocol import RunList, RunResponse

router = APIRouter()


@router.get("/v1/runs", dependencies=need("runs:read"),
            response_model=RunList, tags=["runs"],
            responses={**ERRORS, 422: BODY_ERRORS[422]})
def list_runs(who: Auth, service: Service, cursor: Cursor = None, limit: Limit = 50) -> dict:
    """The key's runs (what happened; a tier-B task id is never shown)."""
    return service.list_runs(who, cursor, limit)


@router.get("/v1/runs/{run_id}", dependencies=need("runs:read"),
            response_model=RunResponse, tags=["runs"], responses=NOT_FOUND)
def get_run(run_id: Id, who: Auth, service: Service) -> RunResponse:
    """One run of the key's."""
    return service.get_run(who, run_id)
