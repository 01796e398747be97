"""HTTP over :class:`judge.api.service.JudgeService`: FastAPI routes, thin.

Every error is RFC 9457 ``application/problem+json`` with ``status`` equal to the HTTP
status. :class:`BodyGuard` (pure ASGI, before any route) caps request bodies
(413), requires a JSON content type on bodies (415) and parses them strictly: invalid
UTF-8, NaN/Infinity, numbers past 100 digits or out of float range, and nesting deeper
than 32 are a 400, never a 5xx. The parsed document is handed on in
``scope["state"]["json"]``.
"""

from __future__ import annotations

import json
import math
from typing import Annotated, Any

from fastapi import Depends, FastAPI, Header, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, Response
from starlette.exceptions import HTTPException as StarletteHTTPException

from judge.api.errors import ApiError, problem
from judge.api.protocol import Job, JudgmentRequest, JudgmentResponse, KeyInfo, Problem, Usage
from judge.api.service import Caller, JudgeService, Reply, _iso, validate_request

MAX_BODY = 64 * 1024  # bytes
MAX_DEPTH = 32
MAX_DIGITS = 100
PROBLEM = "application/problem+json"


def problem_response(status: int, detail: str, instance: str | None = None,
                     headers: dict[str, str] | None = None, **extra: Any) -> Response:
    body = json.dumps(problem(status, detail, instance, **extra), ensure_ascii=False)
    return Response(body, status_code=status, media_type=PROBLEM, headers=headers)


class BadJson(ValueError):
    """The body is not acceptable JSON (the reason is the message)."""


def _int(text: str) -> int:
    if len(text.lstrip("-")) > MAX_DIGITS:
        raise BadJson(f"a number has more than {MAX_DIGITS} digits")
    return int(text)


def _float(text: str) -> float:
    if len(text) > MAX_DIGITS:
        raise BadJson(f"a number has more than {MAX_DIGITS} characters")
    value = float(text)
    if not math.isfinite(value):
        raise BadJson(f"number {text} is out of range")
    return value


def _constant(name: str) -> Any:
    raise BadJson(f"{name} is not JSON")


def _depth(doc: Any) -> int:
    deepest, stack = 0, [(doc, 1)]
    while stack:
        node, d = stack.pop()
        if isinstance(node, dict | list):
            deepest = max(deepest, d)
            stack.extend((v, d + 1) for v in (node.values() if isinstance(node, dict) else node))
    return deepest


def parse_json(raw: bytes) -> Any:
    """Strict JSON: UTF-8, no NaN/Infinity, bounded numbers and depth. Raises BadJson."""
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise BadJson(f"body is not valid UTF-8 (byte {exc.start})") from None
    try:
        doc = json.loads(text, parse_int=_int, parse_float=_float, parse_constant=_constant)
    except BadJson:
        raise
    except RecursionError:
        raise BadJson(f"JSON nested deeper than {MAX_DEPTH} levels") from None
    except ValueError as exc:  # JSONDecodeError, and int() past the digit limit
        raise BadJson(f"malformed JSON: {exc}") from None
    if _depth(doc) > MAX_DEPTH:
        raise BadJson(f"JSON nested deeper than {MAX_DEPTH} levels")
    return doc


class BodyGuard:
    """ASGI middleware: size limit, content type and strict JSON for every request body."""

    def __init__(self, app: Any, max_body: int = MAX_BODY) -> None:
        self.app, self.max_body = app, max_body

    async def __call__(self, scope: dict, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        path = scope.get("path", "")

        async def refuse(status: int, detail: str) -> None:
            await problem_response(status, detail, path)(scope, receive, send)

        headers = {k.decode("latin-1").lower(): v.decode("latin-1")
                   for k, v in scope.get("headers", [])}
        length = headers.get("content-length")
        if length is not None:
            if not length.isdigit():
                return await refuse(400, "Content-Length: not a number")
            if int(length) > self.max_body:
                return await refuse(413, f"request body of {length} bytes is over the "
                                    f"{self.max_body}-byte limit")
        chunks, size = [], 0
        while True:
            message = await receive()
            if message["type"] == "http.disconnect":
                return None
            chunk = message.get("body", b"")
            size += len(chunk)
            if size > self.max_body:
                return await refuse(413, f"request body is over the {self.max_body}-byte limit")
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
                doc = parse_json(raw)
            except BadJson as exc:
                return await refuse(400, str(exc))
            scope.setdefault("state", {})["json"] = doc
        sent = False

        async def replay() -> dict:
            nonlocal sent
            if sent:
                return await receive()
            sent = True
            return {"type": "http.request", "body": raw, "more_body": False}

        return await self.app(scope, replay, send)


def _reply(r: Reply) -> Response:
    return Response(r.body, status_code=r.status, headers=r.headers,
                    media_type="application/json" if r.status < 400 else PROBLEM)


_ERRORS = {401: {"model": Problem, "description": "Missing, malformed, unknown or revoked key"},
           403: {"model": Problem, "description": "The key lacks the right"}}
_BODY_ERRORS = {400: {"model": Problem, "description": "Malformed JSON"},
                413: {"model": Problem, "description": "Body over the size limit"},
                415: {"model": Problem, "description": "Not application/json"},
                422: {"model": Problem, "description": "Invalid request"}}


def caller(request: Request,
           authorization: Annotated[str | None, Header()] = None) -> Caller:
    """The dependency every endpoint takes: the calling key (401 otherwise)."""
    return request.app.state.service.authenticate(authorization)


Auth = Annotated[Caller, Depends(caller)]


def create_app(service: JudgeService) -> FastAPI:
    """The FastAPI app serving ``service``."""
    app = FastAPI(title="rcjudge Judge API", version="1.0.0",
                  description="One run in, one verdict out (spec/judge_api.md).")
    app.state.service = service
    app.add_middleware(BodyGuard)

    @app.exception_handler(ApiError)
    async def _api_error(request: Request, exc: ApiError) -> Response:
        return problem_response(exc.status, exc.detail, request.url.path, exc.headers,
                                **exc.extra)

    @app.exception_handler(StarletteHTTPException)
    async def _http_error(request: Request, exc: StarletteHTTPException) -> Response:
        detail = exc.detail if isinstance(exc.detail, str) else json.dumps(exc.detail)
        if exc.status_code == 405:
            detail = f"{request.method} is not allowed on {request.url.path}"
        elif exc.status_code == 404:
            detail = f"no such endpoint: {request.url.path}"
        return problem_response(exc.status_code, detail, request.url.path,
                                getattr(exc, "headers", None))

    @app.exception_handler(RequestValidationError)
    async def _invalid(request: Request, exc: RequestValidationError) -> Response:
        if request.method == "POST" and request.url.path == "/v1/judgments":
            try:  # the 11 attribution fields first, every missing one named
                validate_request(request.scope.get("state", {}).get("json"))
            except ApiError as named:
                return await _api_error(request, named)
        parts = []
        for e in exc.errors():
            where = ".".join(str(p) for p in e.get("loc", ()) if p != "body") or "body"
            parts.append(f"{where}: {e.get('msg', 'invalid')}")
        return problem_response(422, "; ".join(parts) or "invalid request", request.url.path)

    @app.exception_handler(Exception)
    async def _crash(request: Request, exc: Exception) -> Response:
        return problem_response(500, f"internal error ({type(exc).__name__})", request.url.path)

    @app.post("/v1/judgments", response_model=JudgmentResponse, tags=["judgments"],
              status_code=200,
              responses={**_ERRORS, **_BODY_ERRORS,
                         202: {"model": Job, "description": "Accepted (Prefer: respond-async)"},
                         409: {"model": Problem,
                               "description": "The first request with this key is in flight"}})
    def post_judgment(body: JudgmentRequest, request: Request, who: Auth,
                      idempotency_key: Annotated[str | None, Header()] = None,
                      prefer: Annotated[str | None, Header()] = None) -> Response:
        """Judge one run: intake, frames, three models, vote, ledgers, metering."""
        doc = request.scope.get("state", {}).get("json")
        wants_async = prefer is not None and "respond-async" in prefer.lower()
        return _reply(service.submit(who, doc, idempotency_key, wants_async))

    @app.get("/v1/jobs/{job_id}", response_model=Job, tags=["judgments"],
             responses={**_ERRORS, 404: {"model": Problem, "description": "No such job"}})
    def get_job(job_id: str, who: Auth) -> Job:
        """An asynchronous judging job and, once finished, its judgment or problem."""
        return service.job(who, job_id)

    @app.get("/v1/usage", response_model=Usage, tags=["metering"], responses=_ERRORS)
    def get_usage(who: Auth) -> dict:
        """The calling key's judged calls and their exact sum."""
        return service.usage(who)

    @app.get("/v1/keys/me", response_model=KeyInfo, tags=["keys"], responses=_ERRORS)
    def get_key(who: Auth) -> KeyInfo:
        """The calling key's id, mode and rights_granted."""
        return KeyInfo(key_id=who.key_id, name=who.name, mode=who.mode,
                       rights_granted=list(who.rights), created_at=_iso(who.created_at))

    return app
