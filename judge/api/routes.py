"""HTTP over :class:`judge.api.service.JudgeService`: the app, its body guard and errors.

:func:`create_app` includes one router per resource (:data:`ROUTERS`: the Judge API's in
:mod:`judge.api.routers`, then the sequence-outcome contract's) behind :class:`BodyGuard`,
each route thin over the service.

Every error is RFC 9457 ``application/problem+json`` with ``status`` equal to the HTTP
status. :class:`BodyGuard` (pure ASGI, before any route) checks the key of a request with a
body before reading it (401), caps the body (413), requires a JSON content type (415) and
parses it with the strict reader (:mod:`rcjudge.strict_json`) in a worker thread: invalid
UTF-8, a byte-order mark, NaN/Infinity, duplicate keys, numbers past 100 characters or out of
float range and nesting deeper than 32 are a 400; an integer past 64 bits or text that may
not be stored a 422 naming the field; never a 5xx. The parsed document is handed on in
``scope["state"]["json"]``.
"""

from __future__ import annotations

import json
import re
from functools import partial
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import Response
from starlette.exceptions import HTTPException as StarletteHTTPException

from judge.api import outcome_hooks, outcomes
from judge.api.errors import ApiError
from judge.api.routers import (
    attestations,
    coefficients,
    jobs,
    judgments,
    keys,
    labels,
    rejudge,
    runs,
    versions,
    webhooks,
)
from judge.api.service import JudgeService, validate_request
from judge.api.wire import (
    PREFIX,
    authenticate_headers,
    build_openapi,
    declare_storable_text,
    effective_routes,
    inline_schema,
    problem_response,
)
from judge.ensemble.taxonomy import load_taxonomy
from rcjudge import strict_json

MAX_BODY = 64 * 1024  # bytes, every route but the label write
#: ``PUT …/outcome/``: the contract's largest label (2 x 3,600 hand actions and 256
#: subtasks, every string at its longest, ASCII) is 6.75 MB; 16 MiB leaves 2.4x headroom.
LABEL_MAX_BODY = 16 * 2**20
_LABEL_WRITE = re.compile(r"^/api/v1/datasets/[^/]+/[^/]+/sequences/[^/]+/outcome/$")


def body_limit(method: str, path: str) -> int:
    """The byte limit of a request body on this route (issue 29: sized from the contract)."""
    return LABEL_MAX_BODY if method == "PUT" and _LABEL_WRITE.match(path) else MAX_BODY
class BodyGuard:
    """ASGI middleware: every request body is read only from a known key, within its size
    limit, with a JSON content type, and parsed by the strict reader off the event loop.

    Order (issue 36 item 7): the key is checked first, from the headers alone, before one
    byte of the body is read (an unknown caller's 15 MB is never read); then the size limit
    (413), the content type (415), and :func:`rcjudge.strict_json.loads` in a worker thread
    (the event loop keeps answering other keys while a large body is parsed). A document that
    is no acceptable JSON is a 400; a well-formed one whose field holds a value no column can
    take (an integer past 64 bits, a NUL) a 422 naming the field. The checked caller is
    handed on in ``scope["state"]["caller"]`` (the routes' key dependency uses it), the
    parsed document in ``scope["state"]["json"]``.
    """

    def __init__(self, app: Any, max_body: int = MAX_BODY) -> None:
        self.app, self.max_body = app, max_body

    async def __call__(self, scope: dict, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        from anyio import to_thread

        path = scope.get("path", "")
        limit = body_limit(scope.get("method", ""), path) if self.max_body == MAX_BODY \
            else self.max_body

        async def refuse(status: int, detail: str, headers: dict[str, str] | None = None,
                         **extra: Any) -> None:
            await problem_response(status, detail, path, headers, **extra)(scope, receive, send)

        headers = {k.decode("latin-1").lower(): v.decode("latin-1")
                   for k, v in scope.get("headers", [])}
        length = headers.get("content-length")
        if length is None and "transfer-encoding" not in headers:
            return await self.app(scope, receive, send)  # no body: nothing to guard
        if length is not None and not length.isdigit():
            return await refuse(400, "Content-Length: not a number")
        service = getattr(getattr(scope.get("app"), "state", None), "service", None)
        if service is not None and length != "0":
            try:
                who = await to_thread.run_sync(authenticate_headers, service, headers, path)
            except ApiError as exc:
                return await refuse(exc.status, exc.detail, exc.headers, **exc.extra)
            scope.setdefault("state", {})["caller"] = who
        if length is not None and int(length) > limit:
            return await refuse(413, f"request body of {length} bytes is over the "
                                f"{limit}-byte limit")
        chunks, size = [], 0
        while True:
            message = await receive()
            if message["type"] == "http.disconnect":
                return None
            chunk = message.get("body", b"")
            size += len(chunk)
            if size > limit:
                return await refuse(413, f"request body is over the {limit}-byte limit")
            chunks.append(chunk)
            if not message.get("more_body", False):
                break
        raw = b"".join(chunks)
        if raw:
            ctype = headers.get("content-type", "").split(";")[0].strip().lower()
            if ctype != "application/json" and not ctype.endswith("+json"):
                return await refuse(415, f"Content-Type {ctype or '(none)'!r}: "
                                    "send application/json")
            try:
                doc = await to_thread.run_sync(partial(strict_json.loads, raw,
                                                       max_bytes=limit))
            except strict_json.StrictJsonError as exc:
                detail = str(exc) if exc.field else f"request body: {exc.described()}"
                if exc.syntax:
                    return await refuse(400, detail)
                return await refuse(422, detail, invalid_params=[
                    {"name": exc.field or "(request body)", "reason": exc.reason}])
            scope.setdefault("state", {})["json"] = doc
        sent = False

        async def replay() -> dict:
            nonlocal sent
            if sent:
                return await receive()
            sent = True
            return {"type": "http.request", "body": raw, "more_body": False}

        return await self.app(scope, replay, send)


def allowed_methods(app: Any, scope: dict) -> str:
    """``Allow`` for the scope's path: the methods of every route of that path, and OPTIONS."""
    from starlette.routing import Match

    methods = {"OPTIONS"}
    for route in effective_routes(app.router.routes):
        match, _ = route.matches({**scope, "method": "GET"}) if hasattr(route, "matches") \
            else (Match.NONE, None)
        if match != Match.NONE:
            methods |= set(getattr(route, "methods", None) or ())
    return ", ".join(sorted(methods))


async def api_error(request: Request, exc: ApiError) -> Response:
    """An :class:`ApiError` as problem+json."""
    return problem_response(exc.status, exc.detail, request.url.path, exc.headers, **exc.extra)


async def http_error(request: Request, exc: StarletteHTTPException) -> Response:
    """Starlette's 404 and 405 as problem+json naming the path (405: with ``Allow``; an
    ``OPTIONS`` request: 204 with ``Allow``)."""
    detail = exc.detail if isinstance(exc.detail, str) else json.dumps(exc.detail)
    headers = getattr(exc, "headers", None)
    if exc.status_code == 405:
        allow = allowed_methods(request.app, request.scope)
        if request.method == "OPTIONS":
            return Response(status_code=204, headers={"Allow": allow})
        headers = {**(headers or {}), "Allow": allow}
        detail = f"{request.method} is not allowed on {request.url.path}"
    elif exc.status_code == 404:
        detail = f"no such endpoint: {request.url.path}"
    return problem_response(exc.status_code, detail, request.url.path, headers)


async def invalid_request(request: Request, exc: RequestValidationError) -> Response:
    """A request FastAPI's validation refused: 422 naming every field (``POST
    /v1/judgments``: the 11 attribution fields first, every missing one named)."""
    if request.method == "POST" and request.url.path == "/v1/judgments":
        try:  # the 11 attribution fields first, every missing one named
            validate_request(request.scope.get("state", {}).get("json"))
        except ApiError as named:
            return await api_error(request, named)
    parts, params = [], []
    for e in exc.errors():
        loc = [str(p) for p in e.get("loc", ())]
        where = ".".join(p for p in loc if p != "body") or "body"
        # body fields by their dotted path in the body (as ``missing`` names them),
        # query, path and header parameters by their name
        name = ".".join(loc[1:]) if loc[:1] in (["body"], ["query"], ["path"], ["header"]) \
            else ".".join(loc)
        name = name or "(request body)"
        parts.append(f"{where}: {e.get('msg', 'invalid')}")
        params.append({"name": name, "reason": str(e.get("msg", "invalid"))})
    return problem_response(422, "; ".join(parts) or "invalid request", request.url.path,
                            invalid_params=params)


async def crash(request: Request, exc: Exception) -> Response:
    """Anything else: a 500 naming the exception's type only."""
    return problem_response(500, f"internal error ({type(exc).__name__})", request.url.path)


#: The routers in the order they are included: the Judge API's (``judge.api.routers``), then
#: the sequence-outcome contract's subscriptions and routes (``/api/v1``).
ROUTERS = (judgments.router, jobs.router, keys.router, runs.router, labels.router,
           versions.router, rejudge.router, coefficients.router, attestations.router,
           webhooks.router, outcome_hooks.router, outcomes.router)


def create_app(service: JudgeService) -> FastAPI:
    """The FastAPI app serving ``service``: the body guard, problem+json errors, and
    :data:`ROUTERS`."""
    app = FastAPI(title="rcjudge Judge API", version="1.0.0",
                  description="One run in, one verdict out (spec/judge_api.md).")
    app.state.service = service
    app.add_middleware(BodyGuard)
    app.add_exception_handler(ApiError, api_error)
    app.add_exception_handler(StarletteHTTPException, http_error)
    app.add_exception_handler(RequestValidationError, invalid_request)
    app.add_exception_handler(Exception, crash)
    for router in ROUTERS:
        app.include_router(router)
    app.webhooks.include_router(webhooks.events)
    app.openapi = lambda: openapi(app)
    return app


def openapi(app: FastAPI) -> dict[str, Any]:
    """The Judge API's schema (every route but the sequence-outcome contract's, which has
    its own: ``judge.api.outcomes.openapi``)."""
    if app.openapi_schema:
        return app.openapi_schema
    routes = [r for r in effective_routes(app.routes)
              if not (getattr(r, "path", None) or "").startswith(PREFIX)]
    spec = build_openapi(app, routes, app.title, app.description, app.webhooks.routes)
    declare_storable_text(spec)
    inline_schema(spec, "BodyRequest")  # the spec counts 58 schemas: Body's request form inline
    # the service checks failure_class against the taxonomy: the schema lists it
    label = spec["components"]["schemas"]["LabelRequest"]["properties"]["failure_class"]
    label["anyOf"] = [{"type": "string", "enum": sorted(load_taxonomy().classes)},
                      {"type": "null"}]
    spec.setdefault("components", {})["securitySchemes"] = {
        "bearer": {"type": "http", "scheme": "bearer"}}
    spec["security"] = [{"bearer": []}]
    app.openapi_schema = spec
    return app.openapi_schema
