"""What the HTTP modules of ``judge.api`` share: problem+json answers, the OpenAPI
builder, the routes of an app as a flat list, the sequence-outcome prefix and its key
dependency.

Below ``routes``, ``dependencies``, the routers, ``outcomes`` and ``outcome_hooks`` in the
imports (they import this module, it imports none of them).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from fastapi import Depends, FastAPI, Request
from fastapi.responses import Response

from judge.api.common import Caller
from judge.api.errors import ApiError, problem

PREFIX = "/api/v1"  # the sequence-outcome contract's routes (spec/outcomes.md)
PROBLEM = "application/problem+json"
#: Text a request may store (:func:`judge.outcomes.text.problem`): no NUL, no lone
#: surrogate; the body guard refuses anything else with a 422 naming the field. The
#: pattern names the NUL only: a lone surrogate is no Unicode scalar value, so no I-JSON
#: string (RFC 7493, what JSON Schema's strings are) holds one to begin with.
STORABLE_TEXT = "^[^\\x00]*$"


def problem_response(status: int, detail: str, instance: str | None = None,
                     headers: dict[str, str] | None = None, **extra: Any) -> Response:
    """An RFC 9457 problem+json answer (``status`` in the body equals the HTTP status)."""
    body = json.dumps(problem(status, detail, instance, **extra), ensure_ascii=False)
    return Response(body, status_code=status, media_type=PROBLEM, headers=headers)


def authenticate_headers(service: Any, headers: Mapping[str, str], path: str) -> Caller:
    """The calling key from a request's headers (lower-case names), 401 otherwise:
    ``Authorization: Bearer``, or, under :data:`PREFIX` (the sequence-outcome routes the
    public SDK calls), ``X-Avala-Api-Key``. Blocking (one database read): the body guard
    runs it in a worker thread, before the body is read."""
    authorization = headers.get("authorization")
    x_avala_api_key = headers.get("x-avala-api-key")
    if path.startswith(PREFIX + "/") and x_avala_api_key and not authorization:
        # "X-Avala-Api-Key header: …", not "X-Avala-Api-Key: …": the public SDK redacts
        # "X-Avala-Api-Key: <word>" from every message as if it echoed a key
        return service.authenticate(f"Bearer {x_avala_api_key.strip()}",
                                    "X-Avala-Api-Key header")
    return service.authenticate(authorization)


def key_caller(request: Request) -> Caller:
    """The calling key (401 otherwise; the schema's ``securitySchemes`` describe the
    headers): the one :class:`judge.api.routes.BodyGuard` authenticated before reading the
    request's body, else from the headers now (:func:`authenticate_headers`)."""
    who = request.scope.get("state", {}).get("caller")
    if who is not None:
        return who
    return authenticate_headers(request.app.state.service, request.headers, request.url.path)


def effective_routes(routes: Sequence[Any]) -> list[Any]:
    """``routes`` with each included router's routes in its place, each with its full path,
    methods and name. FastAPI from 0.137.2 keeps an included router as one entry of
    ``app.routes`` (``fastapi.routing.iter_route_contexts`` expands it); earlier ones copy
    its routes in (0.137.0 and 0.137.1 did the first without the second: pyproject.toml
    excludes them)."""
    try:
        from fastapi.routing import iter_route_contexts
    except ImportError:  # before 0.137: the routes are the app's own already
        return list(routes)
    return list(iter_route_contexts(routes))


def key_with(right: str) -> Any:
    """A dependency: the calling key (:func:`key_caller`) holding ``right`` (403), asking
    only for query parameters the route declares (:func:`refuse_unknown_query`)."""

    def check(request: Request, who: Caller = Depends(key_caller)) -> Caller:  # noqa: B008
        request.app.state.service.require(who, right)
        refuse_unknown_query(request)
        return who

    return check


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
    for ops in spec.get("paths", {}).values():
        for op in ops.values():
            for param in op.get("parameters", []):
                param["schema"] = _not_null(param["schema"])
    return spec


def _not_null(schema: dict[str, Any]) -> dict[str, Any]:
    """A parameter's schema without FastAPI's ``anyOf [..., null]``: a query or header
    parameter is absent or a string, never JSON null (absent means its default)."""
    options = schema.get("anyOf")
    if not options or {"type": "null"} not in options:
        return schema
    rest = [o for o in options if o != {"type": "null"}]
    if len(rest) != 1:
        return {**schema, "anyOf": rest}
    merged = {k: v for k, v in schema.items() if k != "anyOf"}
    return {**rest[0], **merged}


def declare_storable_text(spec: dict[str, Any]) -> None:
    """Give every free string of every request body (and every object key) the
    :data:`STORABLE_TEXT` pattern the body guard enforces; a string that already has a
    pattern, an enum, a const or a format keeps it. In place."""
    schemas = spec.get("components", {}).get("schemas", {})
    done: set[str] = set()

    def walk(node: Any) -> None:
        if isinstance(node, list):
            for item in node:
                walk(item)
            return
        if not isinstance(node, dict):
            return
        ref = node.get("$ref", "")
        if ref.startswith("#/components/schemas/"):
            name = ref.rsplit("/", 1)[1]
            if name not in done:
                done.add(name)
                walk(schemas.get(name))
            return
        if node.get("type") == "string" and not {"pattern", "enum", "const", "format"} & set(node):
            node["pattern"] = STORABLE_TEXT
        if node.get("type") == "object" and node.get("additionalProperties") not in (None, False):
            names = node.setdefault("propertyNames", {})
            if not {"pattern", "enum", "const"} & set(names):
                names["pattern"] = STORABLE_TEXT
        for key in ("properties", "$defs"):
            for sub in (node.get(key) or {}).values():
                walk(sub)
        for key in ("items", "additionalProperties", "anyOf", "oneOf", "allOf"):
            walk(node.get(key))

    for ops in spec.get("paths", {}).values():
        for op in ops.values():
            for media in op.get("requestBody", {}).get("content", {}).values():
                walk(media.get("schema"))


def inline_schema(spec: dict[str, Any], name: str) -> None:
    """Write component schema ``name`` in place of every ``$ref`` to it and drop it from the
    components (a request-only shape the contract does not count as a schema of its own,
    validated the same). In place."""
    import copy

    schemas = spec.get("components", {}).get("schemas", {})
    target = schemas.pop(name)
    ref = f"#/components/schemas/{name}"

    def walk(node: Any) -> None:
        if isinstance(node, list):
            for item in node:
                walk(item)
        elif isinstance(node, dict):
            if node.get("$ref") == ref:
                rest = {k: v for k, v in node.items() if k != "$ref"}
                node.clear()
                node.update({**copy.deepcopy(target), **rest})
                return
            for value in node.values():
                walk(value)

    walk(spec)


def _query_names(route: Any) -> frozenset[str]:
    names = getattr(route, "_rcjudge_query_names", None)
    if names is None:  # the route's query parameters and its dependencies', once
        found, stack = set(), [route.dependant]
        while stack:
            dependant = stack.pop()
            found |= {p.alias for p in dependant.query_params}
            stack.extend(dependant.dependencies)
        names = route._rcjudge_query_names = frozenset(found)
    return names


def refuse_unknown_query(request: Request) -> None:
    """422 naming the first query parameter the route does not declare, or one given more
    than once (every declared one is a single value); called once the key and its right
    were checked, so a 401/403 comes first as for every other parameter."""
    route = request.scope.get("route")
    if route is None or not hasattr(route, "dependant"):
        return
    known = _query_names(route)
    seen: set[str] = set()
    for name, _ in request.query_params.multi_items():
        if name not in known:
            allowed = ", ".join(sorted(known)) or "none"
            raise ApiError(422, f"query parameter {name!r}: unknown here (allowed: {allowed})",
                           param=name)
        if name in seen:
            raise ApiError(422, f"query parameter {name!r}: given more than once", param=name)
        seen.add(name)
