"""HTTP routes of the sequence-outcome contract (spec/outcomes.md), under ``/api/v1``.

Thin over :class:`judge.outcomes.store.OutcomeStore`, in the same FastAPI app as the
Judge API. Wire-compatible with the public clients of the contract: the key is accepted
in ``X-Avala-Api-Key`` as well as ``Authorization: Bearer``; list pages are
``{"results": [...], "next": URL|null, "previous": URL|null}`` whose URLs carry the
``cursor`` query parameter; history is a plain JSON array; every error is problem+json
with a string ``detail``; paths end with ``/`` exactly as in the contract. A key needs
``datasets:read`` (reads) or ``datasets:write`` (writes) and, per dataset, the access of
:meth:`OutcomeStore.access` (a dataset it may not read is a 404, one it may only read
answers a write with 403).
"""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Depends, FastAPI, Path, Query, Request
from fastapi.responses import JSONResponse

from judge.api import outcome_hooks
from judge.api.common import Caller
from judge.api.errors import ApiError
from judge.api.outcome_protocol import OutcomeHistory, OutcomeLabel, OutcomeLabelPage
from judge.api.protocol import (
    DatasetCreate,
    DatasetCreated,
    DatasetOut,
    DatasetPage,
    OutcomeLabelWrite,
    Problem,
    SequenceOut,
    SequencePage,
    ValidationProblem,
)
from judge.api.wire import (
    PREFIX,
    build_openapi,
    declare_storable_text,
    effective_routes,
    key_with,
)
from judge.outcomes.labels import OutcomeLabelError, TextError
from judge.outcomes.store import (
    CURSOR_PATTERN,
    Conflict,
    Forbidden,
    NotFound,
    OutcomeError,
    OutcomeStore,
    filter_pattern,
)


def _body(model: Any) -> dict[str, Any]:
    """``openapi_extra`` declaring a JSON request body of ``model`` (the body itself is read
    by the body guard and validated by the store, which names the field)."""
    return {"requestBody": {"required": True, "content": {"application/json": {
        "schema": model.model_json_schema(ref_template="#/components/schemas/{model}")}}}}
_R = {status: {"model": ValidationProblem if status == 422 else Problem, "description": what}
      for status, what in (
    (400, "A rule of the contract broken (detail names the field and the rule)"),
    (401, "Missing, malformed, unknown or revoked key"),
    (403, "The key lacks the right, may only read the dataset, or creates outside its "
          "namespace"),
    (404, "No such dataset (or not readable by the key), sequence or label"),
    (409, "The dataset exists already"),
    (413, "Body over the size limit"), (415, "Not application/json"),
    (422, "A query parameter out of range or unknown; a string that may not be stored"))}
Filter = Annotated[str | None, Query(max_length=2000)]
#: ``datasets.list``'s filters as the public Avala SDK sends them (issue 36 item 11).
NameF = Annotated[str | None, Query(max_length=100)]
VisibilityF = Annotated[str | None, Query(pattern="^(private|unlisted|public)$")]
DATA_TYPE, STATUS = "mcap", "created"  # what every dataset here is (DatasetOut says so)


def _enum_filter(name: str) -> Any:
    """A list filter's query parameter: one value or a comma list (the schema's pattern is
    :func:`judge.outcomes.store.parse_filter`'s rule; anything else is its 400)."""
    return Annotated[str | None, Query(max_length=2000, json_schema_extra={
        "pattern": filter_pattern(name)})]


OutcomeF, MembershipF = _enum_filter("outcome"), _enum_filter("evaluation_membership")
SourceF, AutonomyF = _enum_filter("source"), _enum_filter("autonomy_level")
Cursor = Annotated[str | None, Query(max_length=210, json_schema_extra={
    "pattern": f"^({CURSOR_PATTERN[1:-1]})?$"})]  # empty: the first page


def _ok(model: Any, what: str, status: int = 200) -> dict[Any, Any]:
    """``_R`` and the typed success answer (the route returns the store's document)."""
    return {**_R, status: {"model": model, "description": what}}
_NAME = r"^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$"  # judge.outcomes.store.parse_dataset's rule
Owner = Annotated[str, Path(pattern=_NAME)]
Slug = Annotated[str, Path(pattern=_NAME)]


Reader = Annotated[Caller, Depends(key_with("datasets:read"))]
Writer = Annotated[Caller, Depends(key_with("datasets:write"))]


def _store(request: Request, who: Caller) -> OutcomeStore:
    return OutcomeStore(request.app.state.service.modes[who.mode].engine)


def _call(fn, *args: Any, **kwargs: Any) -> Any:
    """Run a store call; its refusals become problem+json (404, 403, 400)."""
    try:
        return fn(*args, **kwargs)
    except NotFound as exc:
        raise ApiError(404, str(exc)) from None
    except Forbidden as exc:
        raise ApiError(403, str(exc)) from None
    except Conflict as exc:
        raise ApiError(409, str(exc)) from None
    except TextError as exc:
        raise ApiError(422, str(exc)) from None
    except (OutcomeLabelError, OutcomeError) as exc:
        raise ApiError(400, str(exc)) from None


def namespace_of(who: Caller, owner: str) -> None:
    """ApiError 403 unless ``owner`` is the key's namespace: its name, when the name is a
    valid dataset owner. Decided by the key and the request alone, before any dataset is
    looked up, so the answer says nothing of what exists in another namespace."""
    import re

    valid = re.match(_NAME, who.name) is not None
    if owner == who.name and valid:
        return
    if not valid:
        raise ApiError(403, f"owner {owner!r}: key {who.key_id} creates datasets only in its "
                       f"own namespace, and its name {who.name!r} is none (1-100 letters, "
                       "digits, '.', '_' or '-'); the operator creates datasets for it "
                       "(rcjudge datasets create)")
    raise ApiError(403, f"owner {owner!r}: key {who.key_id} creates datasets only in its own "
                   f"namespace {who.name!r} (the key's name)")


def _page(request: Request, page: dict[str, Any], row: Any = None) -> dict[str, Any]:
    """The store's page with its cursors as URLs (``row`` maps each result, if given)."""
    def url(cursor: str | None) -> str | None:
        return None if cursor is None else str(request.url.include_query_params(cursor=cursor))

    results = page["results"] if row is None else [row(r) for r in page["results"]]
    return {"results": results, "next": url(page["next"]), "previous": url(page["previous"])}


def _dataset(row: dict[str, Any]) -> DatasetOut:
    """A store row of a dataset in the SDK's ``Dataset`` shape."""
    owner, _, slug = row["dataset"].partition("/")
    return DatasetOut(uid=row["dataset"], name=slug, slug=slug, owner_name=owner,
                      public=row["public"], access=row["access"], item_count=row["sequences"],
                      is_sequence=True, data_type=DATA_TYPE, status=STATUS,
                      created_at=row["created_at"])


def _sequence(dataset: str) -> Any:
    """Maps a store row of a sequence of ``dataset`` to the SDK's ``DatasetSequence`` shape."""
    def row(r: dict[str, Any]) -> SequenceOut:
        return SequenceOut(uid=r["sequence_uid"], dataset_uid=dataset,
                           bundle_hash=r["bundle_hash"], length_s=r["length_s"],
                           outcome=r["outcome"], outcome_version=r["outcome_version"],
                           evaluation_membership=r["evaluation_membership"])
    return row


def openapi(app: FastAPI) -> dict[str, Any]:
    """The sequence-outcome contract's own OpenAPI 3.1 schema: the routes under ``PREFIX``
    (the Judge API's ``/openapi.json`` keeps its 25 operations)."""
    if getattr(app.state, "outcomes_openapi", None) is None:
        routes = [r for r in effective_routes(app.routes)
                  if (getattr(r, "path", None) or "").startswith(PREFIX)
                  and getattr(r, "include_in_schema", False)]
        app.state.outcomes_openapi = build_openapi(
            app, routes, "rcjudge sequence outcomes",
            "Datasets, sequences and versioned outcome labels, and the quality-target "
            "alert webhook (docs/outcomes.md).", outcome_hooks.events.routes)
        spec = app.state.outcomes_openapi
        schemas = spec.setdefault("components", {}).setdefault("schemas", {})
        for ops in spec["paths"].values():
            for op in ops.values():
                body = op.get("requestBody", {}).get("content", {}).get("application/json")
                if body:
                    schemas.update(body["schema"].pop("$defs", {}))
        declare_storable_text(spec)
        spec["components"]["securitySchemes"] = {
            "bearer": {"type": "http", "scheme": "bearer"},
            "avalaApiKey": {"type": "apiKey", "in": "header", "name": "X-Avala-Api-Key"}}
        spec["security"] = [{"bearer": []}, {"avalaApiKey": []}]
    return app.state.outcomes_openapi


#: The dataset, sequence and outcome-label routes, and their schema at ``PREFIX/openapi.json``.
router = APIRouter()
_TAGS = ["sequence outcomes"]


@router.get(f"{PREFIX}/openapi.json", include_in_schema=False)
def outcomes_schema(request: Request) -> JSONResponse:
    return JSONResponse(openapi(request.app))


@router.get(f"{PREFIX}/datasets/", tags=_TAGS, responses=_R, response_model=DatasetPage)
def list_datasets(request: Request, who: Reader, cursor: Cursor = None,
                  limit: Annotated[int, Query(ge=1, le=100)] = 100,
                  name: NameF = None, visibility: VisibilityF = None,
                  data_type: Filter = None, status: Filter = None) -> dict[str, Any]:
    """The datasets the key may read, by uid (owner/slug), at most 100 a page; the public
    SDK's filters: ``name`` (a case-insensitive part of the name), ``visibility``,
    ``data_type`` and ``status`` (every dataset here is ``mcap`` and ``created``)."""
    if data_type not in (None, DATA_TYPE) or status not in (None, STATUS) \
            or visibility == "unlisted":  # nothing here is of that kind: an empty page
        return {"results": [], "next": None, "previous": None}
    page = _call(_store(request, who).dataset_page, who.key_id, limit=limit, cursor=cursor,
                 slug_contains=name,
                 public=None if visibility is None else visibility == "public")
    return _page(request, page, _dataset)


@router.post(f"{PREFIX}/datasets/", tags=_TAGS, status_code=201, responses={
    **_R, 201: {"model": DatasetCreated, "description": "Created"}},
    openapi_extra=_body(DatasetCreate))
def create_dataset(request: Request, who: Writer) -> JSONResponse:
    """Create ``{"owner", "slug", "public"}`` in the key's namespace (``owner``: the
    key's name); the creating key may edit it."""
    doc = request.scope.get("state", {}).get("json")
    if not isinstance(doc, dict) or not isinstance(doc.get("owner"), str) or \
            not isinstance(doc.get("slug"), str):
        raise ApiError(400, "body: expected {\"owner\": str, \"slug\": str, "
                       "\"public\": bool}")
    public = doc.get("public", False)
    if not isinstance(public, bool):
        raise ApiError(400, f"public: must be true or false (got {public!r})")
    namespace_of(who, doc["owner"])
    store = _store(request, who)
    ds = _call(store.create_dataset, f"{doc['owner']}/{doc['slug']}", public=public,
               key_id=who.key_id)
    return JSONResponse({"dataset": ds.name, "public": ds.public, "access": "edit"},
                        status_code=201)


_BASE = f"{PREFIX}/datasets/{{owner}}/{{slug}}"


@router.get(f"{_BASE}/", tags=_TAGS, responses=_R, response_model=DatasetOut)
def get_dataset(owner: Owner, slug: Slug, request: Request, who: Reader) -> DatasetOut:
    """The dataset; 404 when the key may not read it."""
    return _dataset(_call(_store(request, who).describe, f"{owner}/{slug}", who.key_id))


@router.get(f"{_BASE}/sequences/{{sequence_uid}}/outcome/", tags=_TAGS, response_model=None,
            responses=_ok(OutcomeLabel, "The current label"))
def get_outcome(owner: Owner, slug: Slug, sequence_uid: str, request: Request,
                who: Reader) -> dict[str, Any]:
    """The sequence's current label; 404 when it has none."""
    return _call(_store(request, who).get_label, f"{owner}/{slug}", sequence_uid,
                 key_id=who.key_id)


@router.put(f"{_BASE}/sequences/{{sequence_uid}}/outcome/", tags=_TAGS, response_model=None,
            responses=_ok(OutcomeLabel, "The new current label"),
            openapi_extra=_body(OutcomeLabelWrite))
def put_outcome(owner: Owner, slug: Slug, sequence_uid: str, request: Request,
                who: Writer) -> dict[str, Any]:
    """Write a new current label (the whole label; omitted optional fields unset)."""
    doc = request.scope.get("state", {}).get("json")
    return _call(_store(request, who).put_label, f"{owner}/{slug}", sequence_uid, doc,
                 key_id=who.key_id)


@router.get(f"{_BASE}/sequences/{{sequence_uid}}/outcome/history/", tags=_TAGS,
            response_model=None, responses=_ok(OutcomeHistory, "Every version, newest first"))
def outcome_history(owner: Owner, slug: Slug, sequence_uid: str, request: Request,
                    who: Reader) -> list[dict[str, Any]]:
    """Every version of the label, newest first (a plain array)."""
    return _call(_store(request, who).history, f"{owner}/{slug}", sequence_uid,
                 key_id=who.key_id)


@router.get(f"{_BASE}/sequence-outcomes/", tags=_TAGS, response_model=None,
            responses=_ok(OutcomeLabelPage, "A page of current labels"))
def list_outcomes(owner: Owner, slug: Slug, request: Request, who: Reader,
                  outcome: OutcomeF = None, evaluation_membership: MembershipF = None,
                  source: SourceF = None, autonomy_level: AutonomyF = None,
                  model_version: Filter = None, cursor: Cursor = None,
                  limit: Annotated[int, Query(ge=1, le=100)] = 100) -> dict[str, Any]:
    """Current labels of the dataset, by sequence uid, at most 100 a page."""
    page = _call(_store(request, who).list_labels, f"{owner}/{slug}", key_id=who.key_id,
                 filters={"outcome": outcome, "evaluation_membership": evaluation_membership,
                          "source": source, "autonomy_level": autonomy_level},
                 model_version=model_version, limit=limit, cursor=cursor)
    return _page(request, page)


@router.get(f"{_BASE}/sequences/", tags=_TAGS, responses=_R, response_model=SequencePage)
def list_sequences(owner: Owner, slug: Slug, request: Request, who: Reader,
                   outcome: OutcomeF = None, evaluation_membership: MembershipF = None,
                   cursor: Cursor = None,
                   limit: Annotated[int, Query(ge=1, le=100)] = 100) -> dict[str, Any]:
    """The dataset's sequences, filtered by their current label when a filter is given."""
    page = _call(_store(request, who).list_sequences, f"{owner}/{slug}",
                 key_id=who.key_id, filters={"outcome": outcome,
                                             "evaluation_membership": evaluation_membership},
                 limit=limit, cursor=cursor)
    return _page(request, page, _sequence(f"{owner}/{slug}"))


@router.get(f"{_BASE}/sequences/{{sequence_uid}}/", tags=_TAGS, responses=_R,
            response_model=SequenceOut)
def get_sequence(owner: Owner, slug: Slug, sequence_uid: str, request: Request,
                 who: Reader) -> SequenceOut:
    """One sequence of the dataset, with its current label's outcome."""
    row = _call(_store(request, who).get_sequence, f"{owner}/{slug}", sequence_uid,
                key_id=who.key_id)
    return _sequence(f"{owner}/{slug}")(row)
