"""HTTP over :class:`judge.api.service.JudgeService`: FastAPI routes, thin.

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
from typing import Annotated, Any

from fastapi import Depends, FastAPI, Header, Path, Query, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import Response
from starlette.exceptions import HTTPException as StarletteHTTPException

from judge.api.common import Caller, Reply, iso
from judge.api.errors import ApiError
from judge.api.outcomes import register as register_outcomes
from judge.api.protocol import (
    NOT_BLANK,
    Attestation,
    AttestationList,
    CalibrationDisagreementEvent,
    CalibrationSet,
    CoefficientsPublishedEvent,
    CoefficientsTable,
    Job,
    JudgeVersionList,
    JudgeVersionResponse,
    JudgmentCompletedEvent,
    JudgmentList,
    JudgmentRequest,
    JudgmentResponse,
    KeyInfo,
    LabelList,
    LabelRequest,
    LabelResponse,
    Problem,
    RejudgeCompletedEvent,
    RejudgeJob,
    RejudgeRequest,
    RunList,
    RunResponse,
    TaxonomyResponse,
    Usage,
    ValidationProblem,
    WebhookDeliveryList,
    WebhookEndpointList,
    WebhookEndpointRequest,
    WebhookEndpointWithSecret,
    WebhookTestResult,
)
from judge.api.service import JudgeService, validate_request
from judge.api.wire import (
    PREFIX,
    PROBLEM,
    authenticate_headers,
    build_openapi,
    declare_storable_text,
    key_caller,
    problem_response,
    refuse_unknown_query,
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


def _reply(r: Reply) -> Response:
    return Response(r.body, status_code=r.status, headers=r.headers,
                    media_type="application/json" if r.status < 400 else PROBLEM)


_ERRORS = {401: {"model": Problem, "description": "Missing, malformed, unknown or revoked key"},
           403: {"model": Problem, "description": "The key lacks the right"}}
_BODY_ERRORS = {400: {"model": Problem, "description": "Malformed JSON"},
                413: {"model": Problem, "description": "Body over the size limit"},
                415: {"model": Problem, "description": "Not application/json"},
                422: {"model": ValidationProblem, "description": "Invalid request"}}


def caller(request: Request) -> Caller:
    """The dependency every endpoint takes: the calling key (401 otherwise). The header is
    read here, not declared as a parameter: the schema's ``securitySchemes`` describe it.
    A request with a body was authenticated by :class:`BodyGuard` already: that caller."""
    return key_caller(request)


Auth = Annotated[Caller, Depends(caller)]


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


def allowed_methods(app: Any, scope: dict) -> str:
    """``Allow`` for the scope's path: the methods of every route of that path, and OPTIONS."""
    from starlette.routing import Match

    methods = {"OPTIONS"}
    for route in app.router.routes:
        match, _ = route.matches({**scope, "method": "GET"}) if hasattr(route, "matches") \
            else (Match.NONE, None)
        if match != Match.NONE:
            methods |= set(getattr(route, "methods", None) or ())
    return ", ".join(sorted(methods))


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

    @app.exception_handler(RequestValidationError)
    async def _invalid(request: Request, exc: RequestValidationError) -> Response:
        if request.method == "POST" and request.url.path == "/v1/judgments":
            try:  # the 11 attribution fields first, every missing one named
                validate_request(request.scope.get("state", {}).get("json"))
            except ApiError as named:
                return await _api_error(request, named)
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

    @app.exception_handler(Exception)
    async def _crash(request: Request, exc: Exception) -> Response:
        return problem_response(500, f"internal error ({type(exc).__name__})", request.url.path)

    @app.post("/v1/judgments", dependencies=need("judgments:write"),
              response_model=JudgmentResponse, tags=["judgments"],
              status_code=200,
              responses={**_ERRORS, **_BODY_ERRORS,
                         202: {"model": Job, "description": "Accepted (Prefer: respond-async)"},
                         409: {"model": Problem,
                               "description": "The first request with this key is in flight"}})
    def post_judgment(body: JudgmentRequest, request: Request, who: Auth,
                      idempotency_key: IdempotencyKey = None,
                      prefer: Annotated[str | None, Header()] = None) -> Response:
        """Judge one run: intake, frames, three models, vote, ledgers, metering."""
        doc = request.scope.get("state", {}).get("json")
        wants_async = prefer is not None and "respond-async" in prefer.lower()
        return _reply(service.submit(who, doc, idempotency_key, wants_async))

    @app.get("/v1/jobs/{job_id}", dependencies=need("judgments:read"),
             response_model=Job, tags=["judgments"],
             responses={**_ERRORS, 404: {"model": Problem, "description": "No such job"}})
    def get_job(job_id: str, who: Auth) -> Job:
        """An asynchronous judging job and, once finished, its judgment or problem."""
        return service.job(who, job_id)

    @app.get("/v1/usage", dependencies=need("usage:read"),
             response_model=Usage, tags=["metering"],
             responses={**_ERRORS, 422: _BODY_ERRORS[422]})
    def get_usage(who: Auth, cursor: UsageCursor = None, limit: Limit = 50) -> dict:
        """The calling key's judged calls, their exact sum, and a page of the charges."""
        return service.usage(who, cursor, limit)

    @app.get("/v1/keys/me", dependencies=need(None), response_model=KeyInfo, tags=["keys"],
             responses=_ERRORS)
    def get_key(who: Auth) -> KeyInfo:
        """The calling key's id, mode and rights_granted."""
        return KeyInfo(key_id=who.key_id, name=who.name, mode=who.mode,
                       rights_granted=list(who.rights), created_at=iso(who.created_at))

    _404 = {**_ERRORS, 404: {"model": Problem, "description": "Not found for this key"}}
    _W404 = {**_404, **_BODY_ERRORS}

    @app.get("/v1/judgments", dependencies=need("judgments:read"),
             response_model=JudgmentList, tags=["judgments"],
             responses={**_ERRORS, 404: _404[404], 422: _BODY_ERRORS[422]})
    def list_judgments(who: Auth, cursor: JudgmentCursor = None, limit: Limit = 50) -> dict:
        """The key's judgments, newest first."""
        return service.list_judgments(who, cursor, limit)

    @app.get("/v1/judgments/{judgment_id}", dependencies=need("judgments:read"),
             response_model=JudgmentResponse,
             tags=["judgments"], responses=_404)
    def get_judgment(judgment_id: Id, who: Auth) -> JudgmentResponse:
        """One judgment of the key's."""
        return service.get_judgment(who, judgment_id)

    @app.get("/v1/runs", dependencies=need("runs:read"),
             response_model=RunList, tags=["runs"],
             responses={**_ERRORS, 422: _BODY_ERRORS[422]})
    def list_runs(who: Auth, cursor: Cursor = None, limit: Limit = 50) -> dict:
        """The key's runs (what happened; a tier-B task id is never shown)."""
        return service.list_runs(who, cursor, limit)

    @app.get("/v1/runs/{run_id}", dependencies=need("runs:read"),
             response_model=RunResponse, tags=["runs"], responses=_404)
    def get_run(run_id: Id, who: Auth) -> RunResponse:
        """One run of the key's."""
        return service.get_run(who, run_id)

    @app.post("/v1/runs/{run_id}/labels", dependencies=need("labels:write"),
              response_model=LabelResponse, status_code=201,
              tags=["labels"], responses={**_W404, 200: {"model": LabelResponse,
                                                         "description": "Already recorded"}})
    def post_label(run_id: RunId, body: LabelRequest, who: Auth) -> Response:
        """Record what a person said about a run (kept beside the judge's verdict)."""
        new, label = service.add_label(who, run_id, body)
        return Response(label.model_dump_json(), status_code=201 if new else 200,
                        media_type="application/json")

    @app.get("/v1/runs/{run_id}/labels", dependencies=need("labels:read"),
             response_model=LabelList, tags=["labels"],
             responses=_404)
    def list_labels(run_id: Id, who: Auth) -> dict:
        """Every label of a run, oldest first."""
        return service.list_labels(who, run_id)

    @app.get("/v1/calibration-set", dependencies=need("labels:read"),
             response_model=CalibrationSet, tags=["labels"],
             responses={**_ERRORS, 422: _BODY_ERRORS[422]})
    def calibration_set(who: Auth, judge_version: Filter = None) -> dict:
        """The key's judgments that disagree with their run's current label."""
        return service.calibration_set(who, judge_version)

    @app.get("/v1/taxonomy", dependencies=need("taxonomy:read"),
             response_model=TaxonomyResponse, tags=["taxonomy"],
             responses=_ERRORS)
    def taxonomy(who: Auth) -> TaxonomyResponse:
        """The failure taxonomy and which classes count against the policy."""
        return service.taxonomy(who)

    @app.get("/v1/judge-versions", dependencies=need("taxonomy:read"),
             response_model=JudgeVersionList, tags=["taxonomy"],
             responses=_ERRORS)
    def judge_versions(who: Auth) -> dict:
        """Every judge version this server knows."""
        return {"data": service.judge_versions(who)}

    @app.get("/v1/judge-versions/{name}", dependencies=need("taxonomy:read"),
             response_model=JudgeVersionResponse,
             tags=["taxonomy"], responses=_404)
    def judge_version(name: Id, who: Auth) -> JudgeVersionResponse:
        """One judge version: its models and recorded fingerprint."""
        return service.judge_version(who, name)

    @app.post("/v1/rejudge-jobs", dependencies=need("rejudge:write"),
              response_model=RejudgeJob, status_code=202,
              tags=["rejudge"], responses={**_ERRORS, **_BODY_ERRORS})
    def start_rejudge(body: RejudgeRequest, who: Auth) -> Response:
        """Re-judge the key's runs with another judge version (new rows, none overwritten)."""
        job = service.start_rejudge(who, body)
        return Response(job.model_dump_json(), status_code=202, media_type="application/json",
                        headers={"Location": f"/v1/rejudge-jobs/{job.job_id}"})

    @app.get("/v1/rejudge-jobs/{job_id}", dependencies=need("rejudge:read"),
             response_model=RejudgeJob, tags=["rejudge"],
             responses=_404)
    def get_rejudge(job_id: Id, who: Auth) -> RejudgeJob:
        """A re-judge job's progress."""
        return service.rejudge_job(who, job_id)

    @app.get("/v1/coefficients", dependencies=need("coefficients:read"),
             response_model=CoefficientsTable, tags=["coefficients"],
             responses={**_ERRORS, 422: _BODY_ERRORS[422]})
    def coefficients(who: Auth, policy: Filter = None, body: Filter = None,
                     task_family: Filter = None, tier: Filter = None,
                     judge_version: Filter = None) -> dict:
        """The public coefficients table; a cell with n < 40 shows ``insufficient``.

        Filters return every published cell covering the values; on tier B a too narrow
        query is answered with the coarser cell that contains it (``broadened``).
        """
        return service.coefficients(who, policy=policy, body=body, task_family=task_family,
                                    tier=tier, judge_version=judge_version)

    @app.get("/v1/attestations", dependencies=need("attestations:read"),
             response_model=AttestationList, tags=["attestations"],
             responses=_ERRORS)
    def attestations(who: Auth) -> dict:
        """Attestations (read only: issued offline by ``rcjudge attestations import``)."""
        return service.attestations(who)

    @app.get("/v1/attestations/{attestation_id}", dependencies=need("attestations:read"),
             response_model=Attestation,
             tags=["attestations"], responses=_404)
    def attestation(attestation_id: Id, who: Auth) -> Attestation:
        """One attestation."""
        return service.attestation(who, attestation_id)

    @app.post("/v1/webhook-endpoints", dependencies=need("webhooks:write"),
              response_model=WebhookEndpointWithSecret,
              status_code=201, tags=["webhooks"], responses={**_ERRORS, **_BODY_ERRORS})
    def create_endpoint(body: WebhookEndpointRequest, who: Auth) -> Response:
        """Subscribe a URL to event types; the signing secret is shown in this answer only."""
        ep = service.create_endpoint(who, body)
        return Response(ep.model_dump_json(), status_code=201, media_type="application/json")

    @app.get("/v1/webhook-endpoints", dependencies=need("webhooks:read"),
             response_model=WebhookEndpointList, tags=["webhooks"],
             responses=_ERRORS)
    def list_endpoints(who: Auth) -> dict:
        """The key's webhook endpoints."""
        return service.list_endpoints(who)

    @app.delete("/v1/webhook-endpoints/{endpoint_id}", dependencies=need("webhooks:write"),
                status_code=204, tags=["webhooks"],
                responses=_404, response_class=Response)
    def delete_endpoint(endpoint_id: Id, who: Auth) -> Response:
        """Delete a webhook endpoint."""
        service.delete_endpoint(who, endpoint_id)
        return Response(status_code=204)

    @app.post("/v1/webhook-endpoints/{endpoint_id}/rotate-secret",
              dependencies=need("webhooks:write"), response_model=WebhookEndpointWithSecret,
              tags=["webhooks"], responses=_404)
    def rotate_secret(endpoint_id: Id, who: Auth) -> WebhookEndpointWithSecret:
        """A new signing secret (the old one stops signing at once)."""
        return service.rotate_secret(who, endpoint_id)

    @app.get("/v1/webhook-endpoints/{endpoint_id}/deliveries", dependencies=need("webhooks:read"),
             response_model=WebhookDeliveryList, tags=["webhooks"], responses=_404)
    def deliveries(endpoint_id: Id, who: Auth) -> dict:
        """Every delivery attempt to an endpoint, oldest first."""
        return service.deliveries(who, endpoint_id)

    @app.post("/v1/webhook-endpoints/{endpoint_id}/test", dependencies=need("webhooks:write"),
              response_model=WebhookTestResult,
              status_code=202, tags=["webhooks"], responses=_404)
    def send_test(endpoint_id: Id, who: Auth) -> Response:
        """Send a sample event of the endpoint's first event type."""
        out = service.send_test(who, endpoint_id)
        return Response(json.dumps(out, sort_keys=True, separators=(",", ":")),
                        status_code=202, media_type="application/json")

    @app.webhooks.post("judgment.completed")
    def judgment_completed(body: JudgmentCompletedEvent) -> None:
        """Sent when a charged judgment is written."""

    @app.webhooks.post("rejudge.completed")
    def rejudge_completed(body: RejudgeCompletedEvent) -> None:
        """Sent when a re-judge job finishes."""

    @app.webhooks.post("coefficients.published")
    def coefficients_published(body: CoefficientsPublishedEvent) -> None:
        """Sent when a block of rows is released into the public table."""

    @app.webhooks.post("calibration.disagreement")
    def calibration_disagreement(body: CalibrationDisagreementEvent) -> None:
        """Sent when an operator label disagrees with a judgment of the run."""

    register_outcomes(app)
    app.openapi = lambda: openapi(app)
    return app


def openapi(app: FastAPI) -> dict[str, Any]:
    """The Judge API's schema (every route but the sequence-outcome contract's, which has
    its own: ``judge.api.outcomes.openapi``)."""
    if app.openapi_schema:
        return app.openapi_schema
    routes = [r for r in app.routes if not getattr(r, "path", "").startswith(PREFIX)]
    spec = build_openapi(app, routes, app.title, app.description, app.webhooks.routes)
    declare_storable_text(spec)
    # the service checks failure_class against the taxonomy: the schema lists it
    label = spec["components"]["schemas"]["LabelRequest"]["properties"]["failure_class"]
    label["anyOf"] = [{"type": "string", "enum": sorted(load_taxonomy().classes)},
                      {"type": "null"}]
    spec.setdefault("components", {})["securitySchemes"] = {
        "bearer": {"type": "http", "scheme": "bearer"}}
    spec["security"] = [{"bearer": []}]
    app.openapi_schema = spec
    return app.openapi_schema
