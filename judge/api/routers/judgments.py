"""``/v1/judgments``: judge one run, list and read the key's judgments."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Header, Request
from fastapi.responses import Response

from judge.api.dependencies import (
    BODY_ERRORS,
    ERRORS,
    NOT_FOUND,
    Auth,
    Id,
    IdempotencyKey,
    JudgmentCursor,
    Limit,
    Service,
    need,
    reply,
)
from judge.api.protocol import Job, JudgmentList, JudgmentRequest, JudgmentResponse, Problem

router = APIRouter()


@router.post("/v1/judgments", dependencies=need("judgments:write"),
             response_model=JudgmentResponse, tags=["judgments"],
             status_code=200,
             responses={**ERRORS, **BODY_ERRORS,
                        202: {"model": Job, "description": "Accepted (Prefer: respond-async)"},
                        409: {"model": Problem,
                              "description": "The first request with this key is in flight"}})
def post_judgment(body: JudgmentRequest, request: Request, who: Auth, service: Service,
                  idempotency_key: IdempotencyKey = None,
                  prefer: Annotated[str | None, Header()] = None) -> Response:
    """Judge one run: intake, frames, three models, vote, ledgers, metering."""
    doc = request.scope.get("state", {}).get("json")
    wants_async = prefer is not None and "respond-async" in prefer.lower()
    return reply(service.submit(who, doc, idempotency_key, wants_async))


@router.get("/v1/judgments", dependencies=need("judgments:read"),
            response_model=JudgmentList, tags=["judgments"],
            responses={**ERRORS, 404: NOT_FOUND[404], 422: BODY_ERRORS[422]})
def list_judgments(who: Auth, service: Service, cursor: JudgmentCursor = None,
                   limit: Limit = 50) -> dict:
    """The key's judgments, newest first."""
    return service.list_judgments(who, cursor, limit)


@router.get("/v1/judgments/{judgment_id}", dependencies=need("judgments:read"),
            response_model=JudgmentResponse,
            tags=["judgments"], responses=NOT_FOUND)
def get_judgment(judgment_id: Id, who: Auth, service: Service) -> JudgmentResponse:
    """One judgment of the key's."""
    return service.get_judgment(who, judgment_id)
