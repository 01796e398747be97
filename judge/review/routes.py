"""HTTP of the review page: ``GET /review`` and its JSON calls under ``/review/api``.

Two desks serve the same routes:

* :class:`KeyDesk` (``rcjudge serve``; judge versions read by name as ``/v1/judge-versions``
  reads them, their models never loaded for the page): every call carries an API key with
  ``labels:write`` (``Authorization: Bearer``; the page asks for it once per tab). The key's
  mode database is labelled, its queue is computed over the key's own runs and labels only
  (as ``GET /v1/runs``; no other key's run moves a rank or score), undo reaches only
  labels of its runs,
  and a label is written by :meth:`judge.api.service.JudgeService.add_label` — the check,
  the ownership rule and the ``calibration.disagreement`` event of ``POST /v1/runs/{id}/
  labels`` — with ``labeled_by`` the key's name.
* :class:`LocalDesk` (``rcjudge review serve``): one ledger and one judge version on
  loopback, no keys; ``labeled_by`` is the operator named when it was started.

Both check a label with :func:`judge.api.catalog.checked_label` (what ``labels import``
checks, :func:`judge.ledgers.labels.check_label`): a refusal is a 422 naming the field.

Calls: ``GET /review/api/session?judge=V`` (who labels, the taxonomy), ``POST
/review/api/next`` (the first pick not excluded, drawn as a card), ``POST
/review/api/labels`` (201 the stored label), ``DELETE /review/api/labels/{id}`` (undo).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from fastapi import FastAPI, Header, Query, Request
from fastapi.responses import HTMLResponse, JSONResponse, Response
from pydantic import BaseModel, ConfigDict, Field, StrictBool, ValidationError

from judge.api.catalog import checked_label
from judge.api.errors import ApiError
from judge.ensemble.version import JudgeVersion
from judge.errors import JudgeError
from judge.ledgers.review import Review, StoredStrategy
from judge.ledgers.rounds import SAMPLING_STRATEGIES
from judge.ledgers.store import Ledger
from rcjudge.errors import RcjudgeError

Name = Field(min_length=1, max_length=200)


class _Body(BaseModel):
    model_config = ConfigDict(extra="forbid")


class NextRequest(_Body):
    """``POST /review/api/next``: the first pick of the queue not in ``exclude``.

    A sampling strategy (``sample``, ``sample-uniform``) serves the runs its rounds of the
    version drew and nobody labelled yet; when there is none, it draws a round of ``n``
    (``judge.learn.draw``) and serves its draws."""

    judge_version: str = Name
    strategy: StoredStrategy = "committee"
    exclude: list[str] = Field(default_factory=list, max_length=10_000,
                               description="Runs the page holds or skipped.")
    n: int = Field(20, ge=1, le=10_000, description="A new sampling round's expected draws.")


class PickIn(_Body):
    """The pick a label answers, as the page was given it (a sampling round's pick with its
    round and inclusion probability, checked against the round's recorded draw)."""

    strategy: StoredStrategy
    rank: int = Field(ge=1)
    score: float
    reason: str = Field(max_length=2000)
    round_id: int | None = Field(None, ge=1)
    pi: float | None = Field(None, gt=0, le=1)


class ReviewLabel(_Body):
    """``POST /review/api/labels``: what the labeller said about one run."""

    run_id: str = Name
    judge_version: str = Name
    pick: PickIn
    attempt: StrictBool
    success: StrictBool
    failure_class: str | None = Field(None, max_length=200)
    note: str | None = Field(None, max_length=2000)


def _body(request: Request, model: type[_Body]) -> Any:
    """The request's JSON (parsed by :class:`judge.api.routes.BodyGuard`) as ``model``;
    ApiError 422 naming every field at fault."""
    doc = request.scope.get("state", {}).get("json")
    try:
        return model.model_validate(doc)
    except ValidationError as exc:
        params = [{"name": ".".join(str(p) for p in e["loc"]) or "(request body)",
                   "reason": e["msg"]} for e in exc.errors()]
        raise ApiError(422, "; ".join(f"{p['name']}: {p['reason']}" for p in params),
                       invalid_params=params) from None


class LocalDesk:
    """One ledger, one judge version, one operator: ``rcjudge review serve``."""

    auth = "operator"

    def __init__(self, ledger: Ledger, judge_version: str, labeller: str) -> None:
        from judge.ensemble.version import load_judge_version

        self._ledger, self.labeller_name = ledger, labeller
        self._version = load_judge_version(judge_version)
        self.judge_version = self._version.name

    def who(self, authorization: str | None) -> str:
        return self.labeller_name

    def ledger(self, who: Any) -> Ledger:
        return self._ledger

    def version(self, name: str) -> JudgeVersion:
        if name != self.judge_version:
            raise ApiError(422, f"judge_version {name!r}: this page labels the queue of "
                           f"{self.judge_version!r} only", param="judge_version")
        return self._version

    def labeller(self, who: Any) -> str:
        return who

    def visible(self, who: Any) -> set[str] | None:
        return None

    def add(self, who: Any, body: ReviewLabel, review: Review) -> dict[str, Any]:
        from judge.review.store import write

        label = checked_label(body.run_id, body.attempt, body.success, body.failure_class,
                              who, None)
        if self._ledger.get_run(body.run_id) is None:
            raise ApiError(404, f"run {body.run_id!r}: not in the ledger")
        _, label_id = write(self._ledger, label, review)
        return {"label_id": label_id, "run_id": label.run_id, "attempt": label.attempt,
                "success": label.success, "failure_class": label.failure_class,
                "labeled_by": label.labeled_by,
                "labeled_at": label.labeled_at.isoformat().replace("+00:00", "Z")}


class KeyDesk:
    """The Judge API's keys: ``rcjudge serve``."""

    auth = "key"
    judge_version = None

    def __init__(self, service: Any,
                 load_version: Callable[[str], JudgeVersion] | None = None) -> None:
        from judge.ensemble.version import load_judge_version

        self.service = service
        self._load_version = load_version or load_judge_version
        self._versions: dict[str, JudgeVersion] = {}

    def who(self, authorization: str | None) -> Any:
        caller = self.service.authenticate(authorization)
        self.service.require(caller, "labels:write")
        return caller

    def ledger(self, who: Any) -> Ledger:
        """The key's own ledger: its queue, cards and undo reach only its runs."""
        return self.service.modes[who.mode].ledger_of(who)

    def version(self, name: str) -> JudgeVersion:
        """The version's config (what sampling and the question images follow); its
        models are not loaded for the page."""
        if name not in self._versions:
            try:
                self._versions[name] = self._load_version(name)
            except RcjudgeError as exc:
                raise ApiError(422, f"judge_version: {exc}", param="judge_version") from None
        return self._versions[name]

    def labeller(self, who: Any) -> str:
        return who.name

    def visible(self, who: Any) -> set[str] | None:
        with self.service.modes[who.mode].engine.connect() as conn:
            return {r[0] for r in conn.execute(self.service._owned_run_ids(conn, who)).all()}

    def add(self, who: Any, body: ReviewLabel, review: Review) -> dict[str, Any]:
        from judge.api.protocol import LabelRequest

        _, out = self.service.add_label(who, body.run_id, LabelRequest(
            attempt=body.attempt, success=body.success, failure_class=body.failure_class,
            labeled_by=who.name), review)
        return out.model_dump(mode="json")


def next_card(desk: Any, who: Any, req: NextRequest) -> dict[str, Any] | None:
    """The card of the queue's first pick that ``who`` may see and the page does not hold,
    or None when there is none."""
    from judge.learn.select import SelectError, next_runs

    ledger, version = desk.ledger(who), desk.version(req.judge_version)
    visible, exclude = desk.visible(who), set(req.exclude)
    if req.strategy in SAMPLING_STRATEGIES:
        pick = _drawn(ledger, req, visible)
        return None if pick is None else _card(ledger, version, req.judge_version, pick)
    n = len(exclude) + 1
    while True:
        try:
            picks = next_runs(ledger, req.judge_version, n=n, strategy=req.strategy)
        except SelectError as exc:
            raise ApiError(422, str(exc).replace("--judge", "judge_version", 1),
                           param="judge_version") from None
        pick = next((p for p in picks if p.run_id not in exclude
                     and (visible is None or p.run_id in visible)), None)
        if pick is not None or len(picks) < n:
            break
        n *= 2
    if pick is None:
        return None
    return _card(ledger, version, req.judge_version, pick)


def _drawn(ledger: Ledger, req: NextRequest, visible: set[str] | None) -> Any:
    """The first run a sampling round drew that is unlabelled and not excluded; a new round
    of ``req.n`` only when the version's rounds owe no label at all (a run the page holds or
    skipped is still owed: it ends the page's queue until the page is reloaded)."""
    from judge.learn.draw import DEFAULT_FLOOR, NothingToDraw, open_picks, sampling_round
    from judge.learn.select import SelectError

    owed = open_picks(ledger, req.judge_version, req.strategy)
    if not owed:
        try:
            sampling_round(ledger, req.judge_version, n=req.n, strategy=req.strategy,
                           floor=DEFAULT_FLOOR)
        except NothingToDraw:
            return None
        except SelectError as exc:
            raise ApiError(422, str(exc).replace("--judge", "judge_version", 1),
                           param="judge_version") from None
        owed = open_picks(ledger, req.judge_version, req.strategy)
    exclude = set(req.exclude)
    return next((p for p in owed if p.run_id not in exclude
                 and (visible is None or p.run_id in visible)), None)


def _card(ledger: Ledger, version: JudgeVersion, judge_version: str, pick: Any) -> dict:
    from judge.explain_evidence import gather
    from judge.review.card import card

    run = ledger.get_run(pick.run_id)
    judgment = ledger.get_judgment(pick.run_id, judge_version)
    try:
        ev = gather(run.bundle_uri, version, pick.run_id)
    except JudgeError as exc:  # the bundle moved or broke since it was judged
        raise ApiError(422, f"run {pick.run_id}: its bundle cannot be read now: {exc}",
                       run_id=pick.run_id) from None
    return card(ev, judgment, pick)


def _review(desk: Any, who: Any, body: ReviewLabel) -> Review:
    """The label's review row, its pick checked: a sampling pick must name the round that
    drew the run, with that π (``judge.ledgers.rounds.check_draw``); 422 otherwise."""
    from judge.learn.select import review as review_of_pick
    from judge.ledgers.errors import LedgerError
    from judge.ledgers.rounds import check_draw

    try:
        review = review_of_pick(body.pick, body.judge_version,
                                note=(body.note or "").strip() or None)
    except ValidationError as exc:
        raise ApiError(422, f"pick: {exc.errors()[0]['msg']}", param="pick") from None
    if review.round_id is not None:
        ledger = desk.ledger(who)
        if ledger.get_run(body.run_id) is None:  # ownership first: no word on others' rounds
            raise ApiError(404, f"run {body.run_id!r}: "
                           + ("no such run for this key" if desk.auth == "key"
                              else "not in the ledger"))
        with ledger.engine.connect() as conn:
            try:
                check_draw(conn, body.run_id, body.judge_version, review.round_id, review.pi)
            except LedgerError as exc:
                raise ApiError(422, f"pick: {exc}", param="pick") from None
    return review


def add_review(app: FastAPI, desk: Any) -> None:
    """Serve the review page and its calls from ``app`` (outside its OpenAPI schema)."""
    from judge.ensemble.taxonomy import load_taxonomy
    from judge.review.page import page

    def who(authorization: str | None) -> Any:
        return desk.who(authorization)

    @app.get("/review", include_in_schema=False, response_class=HTMLResponse)
    def review_page() -> HTMLResponse:
        return HTMLResponse(page(desk.auth, desk.judge_version),
                            headers={"Cache-Control": "no-store"})

    @app.get("/review/api/session", include_in_schema=False)
    def session(judge: str | None = Query(None, max_length=200),
                authorization: str | None = Header(None)) -> dict[str, Any]:
        caller = who(authorization)
        name = judge or desk.judge_version
        if name is None:
            raise ApiError(422, "judge: give the judge version whose queue to label "
                           "(/review?judge=VERSION)", param="judge")
        desk.version(name)
        tax = load_taxonomy()
        return {"labeled_by": desk.labeller(caller), "judge_version": name,
                "classes": [[k, v.description] for k, v in tax.classes.items()]}

    @app.post("/review/api/next", include_in_schema=False)
    def next_run(request: Request, authorization: str | None = Header(None)) -> dict:
        caller = who(authorization)
        return {"card": next_card(desk, caller, _body(request, NextRequest))}

    @app.post("/review/api/labels", include_in_schema=False)
    def label(request: Request, authorization: str | None = Header(None)) -> Response:
        caller = who(authorization)
        body = _body(request, ReviewLabel)
        desk.version(body.judge_version)
        review = _review(desk, caller, body)
        out = desk.add(caller, body, review)
        return JSONResponse({**out, "judge_version": body.judge_version,
                             "strategy": body.pick.strategy, "note": review.note},
                            status_code=201)

    @app.delete("/review/api/labels/{label_id}", include_in_schema=False)
    def undo(label_id: int, authorization: str | None = Header(None)) -> dict[str, Any]:
        from judge.review.store import undo as undo_label

        caller = who(authorization)
        run_id = undo_label(desk.ledger(caller), label_id, desk.labeller(caller))
        if run_id is None:
            raise ApiError(404, f"label {label_id}: no label this labeller made on the page")
        return {"label_id": label_id, "run_id": run_id, "undone": True}


def local_app(desk: LocalDesk) -> FastAPI:
    """The app of ``rcjudge review serve``: the page alone, with the API's body checks and
    problem+json errors."""
    from judge.api.routes import BodyGuard, problem_response

    app = FastAPI(title="rcjudge review", openapi_url=None, docs_url=None, redoc_url=None)
    app.add_middleware(BodyGuard)

    @app.exception_handler(ApiError)
    async def _api_error(request: Request, exc: ApiError) -> Response:
        return problem_response(exc.status, exc.detail, request.url.path, exc.headers,
                                **exc.extra)

    app.state.labeller = desk.labeller_name
    add_review(app, desk)
    return app
