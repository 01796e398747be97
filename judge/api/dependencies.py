"""What every router of the Judge API declares: the key and its right, the service, the
path and query parameter types, and the error answers each route documents.

Below ``judge.api.routers`` in the imports (each router imports this module, it imports
none of them). The routes read the service from ``request.app.state.service`` (set by
:func:`judge.api.routes.create_app`), so a router is a module-level ``APIRouter`` with no
closure over the app.
"""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import Depends, Header, Path, Query, Request
from fastapi.responses import Response

from judge.api.common import Caller, Reply
from judge.api.protocol import NOT_BLANK, Problem, ValidationProblem
from judge.api.service import JudgeService
from judge.api.wire import PROBLEM, key_caller, refuse_unknown_query


def reply(r: Reply) -> Response:
    """A service's ready answer as an HTTP response (problem+json from 400 on)."""
    return Response(r.body, status_code=r.status, headers=r.headers,
                    media_type="application/json" if r.status < 400 else PROBLEM)


ERRORS = {401: {"model": Problem, "description": "Missing, malformed, unknown or revoked key"},
          403: {"model": Problem, "description": "The key lacks the right"}}
BODY_ERRORS = {400: {"model": Problem, "description": "Malformed JSON"},
               413: {"model": Problem, "description": "Body over the size limit"},
               415: {"model": Problem, "description": "Not application/json"},
               422: {"model": ValidationProblem, "description": "Invalid request"}}
NOT_FOUND = {**ERRORS, 404: {"model": Problem, "description": "Not found for this key"}}
NOT_FOUND_WRITE = {**NOT_FOUND, **BODY_ERRORS}


def caller(request: Request) -> Caller:
    """The dependency every endpoint takes: the calling key (401 otherwise). The header is
    read here, not declared as a parameter: the schema's ``securitySchemes`` describe it.
    A request with a body was authenticated by :class:`judge.api.routes.BodyGuard` already:
    that caller."""
    return key_caller(request)


Auth = Annotated[Caller, Depends(caller)]


def the_service(request: Request) -> JudgeService:
    """The service the app serves (``app.state.service``)."""
    return request.app.state.service


Service = Annotated[JudgeService, Depends(the_service)]


def need(right: str | None) -> list[Any]:
    """A route's right, checked before its body or parameters are validated (403); then
    no query parameter the route does not declare (422). ``None``: any valid key."""

    def check(request: Request, who: Caller = Depends(caller)) -> None:  # noqa: B008
        if right is not None:
            request.app.state.service.require(who, right)
        refuse_unknown_query(request)

    return [Depends(check)]

Id = Annotated[str, Path(min_length=1, max_length=200)]
#: A label's run: checked as a label file's ``run_id`` (not blank, no NUL) before the run.
RunId = Annotated[str, Path(min_length=1, max_length=200, json_schema_extra={
    "pattern": NOT_BLANK})]
Cursor = Annotated[str | None, Query(max_length=200)]
Filter = Cursor
# the rules the service checks itself (its messages name them), declared in the schema
UsageCursor = Annotated[str | None, Query(max_length=200, json_schema_extra={
    "pattern": r"^us_[0-9]{1,18}$"})]
JudgmentCursor = Annotated[str | None, Query(max_length=200, json_schema_extra={
    "pattern": r"^(jd_[0-9]{1,18})?$"})]  # empty: the first page
#: ``Idempotency-Key``: 1-255 printable ASCII characters (``JudgeService.submit``).
IdempotencyKey = Annotated[str | None, Header(json_schema_extra={
    "pattern": r"^[!-~]([ -~]{0,253}[!-~])?$"})]
Limit = Annotated[int, Query(ge=1, le=100)]
