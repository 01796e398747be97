"""What the HTTP modules of ``judge.api`` share: problem+json answers, the OpenAPI
builder, the sequence-outcome prefix and its key dependency.

Below ``routes``, ``outcomes`` and ``outcome_hooks`` in the imports (they import this
module, it imports none of them), so the routes register the outcome routes and those
their webhook routes, one way.
"""

from __future__ import annotations

import json
from typing import Annotated, Any

from fastapi import FastAPI, Header, Request
from fastapi.responses import Response

from judge.api.common import Caller
from judge.api.errors import problem

PREFIX = "/api/v1"  # the sequence-outcome contract's routes (spec/outcomes.md)
PROBLEM = "application/problem+json"


def problem_response(status: int, detail: str, instance: str | None = None,
                     headers: dict[str, str] | None = None, **extra: Any) -> Response:
    """An RFC 9457 problem+json answer (``status`` in the body equals the HTTP status)."""
    body = json.dumps(problem(status, detail, instance, **extra), ensure_ascii=False)
    return Response(body, status_code=status, media_type=PROBLEM, headers=headers)


def key_caller(request: Request, authorization: Annotated[str | None, Header()] = None,
               x_avala_api_key: Annotated[str | None, Header()] = None) -> Caller:
    """The calling key, sent as ``Authorization: Bearer`` or ``X-Avala-Api-Key`` (401
    otherwise)."""
    service = request.app.state.service
    if x_avala_api_key and not authorization:
        authorization = f"Bearer {x_avala_api_key.strip()}"
    return service.authenticate(authorization)


def build_openapi(app: FastAPI, routes: list, title: str, description: str,
                  webhooks: list | None = None) -> dict[str, Any]:
    """OpenAPI 3.1 of ``routes``, with FastAPI's default 422 shape replaced by
    :class:`ValidationProblem` and every problem answered as ``application/problem+json``."""
    from fastapi.openapi.utils import get_openapi

    spec = get_openapi(title=title, version=app.version, openapi_version="3.1.0",
                       description=description, routes=routes, webhooks=webhooks or [])
    ref = "#/components/schemas/HTTPValidationError"
    for section in ("paths", "webhooks"):
        for ops in spec.get(section, {}).values():
            for op in ops.values():
                for resp in op.get("responses", {}).values():
                    for media in list(resp.get("content", {})):
                        content = resp["content"][media]
                        if content.get("schema", {}).get("$ref") == ref:
                            content["schema"]["$ref"] = "#/components/schemas/ValidationProblem"
                    if "content" in resp and any(k.startswith("application/json")
                                                 for k in resp["content"]) and \
                            resp["content"].get("application/json", {}).get("schema", {}).get(
                                "$ref") in ("#/components/schemas/Problem",
                                            "#/components/schemas/ValidationProblem"):
                        resp["content"] = {PROBLEM: resp["content"]["application/json"]}
    for name in ("HTTPValidationError", "ValidationError"):
        spec.get("components", {}).get("schemas", {}).pop(name, None)
    return spec
