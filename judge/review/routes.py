"""HTTP of the review page: ``GET /review`` and its JSON calls under ``/review/api``.

Two desks serve the same routes:

* :class:`KeyDesk` (``rcjudge serve``; judge versions read by name as ``/v1/judge-versions``
  reads them, their models never loaded for the page): every call carries an API key with
  ``labels:write`` (``Authorization: Bearer``; the page asks for it once per tab). The key's
  mode database is labelled; its queue is computed over the runs it reviews
  (:mod:`judge.review.reach`: its own, and those of the datasets it holds an edit grant on,
  whoever judged them; no run outside them moves a rank or score). A label on its own run is
  written by :meth:`judge.api.service.JudgeService.add_label` (the check, the ownership rule
  and the ``calibration.disagreement`` event of ``POST /v1/runs/{id}/labels``), on a run of
  such a dataset into that run's owner's ledger; ``labeled_by`` is the key's name.
* :class:`LocalDesk` (``rcjudge review serve``): one ledger and one judge version on
  loopback, no keys; ``labeled_by`` is the operator named when it was started.

Both check a label with :func:`judge.api.catalog.checked_label` (what ``labels import``
checks, :func:`judge.ledgers.labels.check_label`): a refusal is a 422 naming the field.

Calls: ``GET /review/api/session?judge=V`` (who labels, the taxonomy), ``POST
/review/api/next`` (the first pick not excluded, drawn as a card), ``POST
/review/api/queue`` (why there is none: :mod:`judge.review.queue`), ``POST
/review/api/labels`` (201 the stored label), ``DELETE /review/api/labels/{id}`` (undo).
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Annotated, Any

import sqlalchemy as sa
from fastapi import APIRouter, Depends, FastAPI, Header, Query, Request
from fastapi.responses import HTMLResponse, JSONResponse, Response
from pydantic import BaseModel, ConfigDict, Field, StrictBool, ValidationError

from judge.api.catalog import checked_label
from judge.api.errors import ApiError
from judge.ensemble.version import JudgeVersion
from judge.errors import JudgeError
from judge.ledgers import schema as S
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

    def queue(self, who: Any) -> Ledger:
        """The store the queue ranks: the one ledger."""
        return self._ledger

    def run_ledger(self, who: Any, run_id: str) -> Ledger:
        return self._ledger

    def read_only(self, who: Any) -> list[str]:
        return []

    def undo(self, who: Any, label_id: int) -> str | None:
        from judge.review.store import undo as undo_label

        return undo_label(self._ledger, label_id, who)

    def version(self, name: str) -> JudgeVersion:
        if name != self.judge_version:
            raise ApiError(422, f"judge_version {name!r}: this page labels the queue of "
                           f"{self.judge_version!r} only", param="judge_version")
        return self._version

    def labeller(self, who: Any) -> str:
        return who

    def add(self, who: Any, body: ReviewLabel, review: Review) -> dict[str, Any]:
        from judge.review.store import write

        label = checked_label(body.run_id, body.attempt, body.success, body.failure_class,
                              who, None)
        if self._ledger.get_run(body.run_id) is None:
            raise ApiError(404, f"run {body.run_id!r}: not in the ledger")
        _, label_id = write(self._ledger, label, review)
        return _label_json(label_id, label)


class KeyDesk:
    """The Judge API's keys: ``rcjudge serve``.

    A key's queue is its :class:`judge.review.reach.Reach`: its own runs and those of the
    datasets it holds an edit grant on. A label on its own run goes through
    :meth:`judge.api.service.JudgeService.add_label`; on a run of a dataset it may edit, into
    the run's owner's ledger, checked the same way, ``labeled_by`` the key's name. Undo
    reaches the key's labels on its own runs, and on others' runs the labels this server
    wrote for the key since it started.
    """

    auth = "key"
    judge_version = None

    def __init__(self, service: Any,
                 load_version: Callable[[str], JudgeVersion] | None = None) -> None:
        from judge.ensemble.version import load_judge_version

        self.service = service
        self._load_version = load_version or load_judge_version
        self._versions: dict[str, JudgeVersion] = {}
        self._written: dict[str, set[int]] = {}  # key id -> labels it wrote on others' runs
        self._lock = threading.Lock()

    def who(self, authorization: str | None) -> Any:
        caller = self.service.authenticate(authorization)
        self.service.require(caller, "labels:write")
        return caller

    def ledger(self, who: Any) -> Ledger:
        """The key's own ledger: its runs and their labels."""
        return self.service.modes[who.mode].ledger_of(who)

    def queue(self, who: Any) -> Any:
        """The runs the key reviews (:class:`judge.review.reach.Reach`)."""
        from judge.review.reach import Reach

        return Reach(self.service.modes[who.mode].engine, who.key_id)

    def run_ledger(self, who: Any, run_id: str) -> Ledger:
        """The ledger of ``run_id``'s owner, for a run in the key's reach (else 404)."""
        owner = self.queue(who).owner_of(run_id)
        if owner is None:
            raise ApiError(404, f"run {run_id!r}: no such run for this key")
        return self.service.modes[who.mode].ledger.owned_by(owner)

    def read_only(self, who: Any) -> list[str]:
        return self.queue(who).read_only()

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

    def add(self, who: Any, body: ReviewLabel, review: Review) -> dict[str, Any]:
        from judge.api.protocol import LabelRequest
        from judge.review.store import write

        owner = self.queue(who).owner_of(body.run_id)
        if owner is None or owner == who.key_id:  # its own run (or none: the API's 404)
            _, out = self.service.add_label(who, body.run_id, LabelRequest(
                attempt=body.attempt, success=body.success,
                failure_class=body.failure_class, labeled_by=who.name), review)
            return out.model_dump(mode="json")
        label = checked_label(body.run_id, body.attempt, body.success, body.failure_class,
                              who.name, None)
        _, label_id = write(self.service.modes[who.mode].ledger.owned_by(owner), label, review)
        with self._lock:
            self._written.setdefault(who.key_id, set()).add(label_id)
        return _label_json(label_id, label)

    def undo(self, who: Any, label_id: int) -> str | None:
        from judge.review.store import undo as undo_label

        run_id = undo_label(self.ledger(who), label_id, who.name)
        with self._lock:
            ours = label_id in self._written.get(who.key_id, set())
        if run_id is not None or not ours:
            return run_id
        t = S.operator_labels
        mode = self.service.modes[who.mode]
        with mode.engine.connect() as conn:
            run = conn.execute(sa.select(t.c.run_id).where(t.c.label_id == label_id)).scalar()
        owner = None if run is None else self.queue(who).owner_of(run)
        if owner is None:
            return None
        run_id = undo_label(mode.ledger.owned_by(owner), label_id, who.name)
        if run_id is not None:
            with self._lock:
                self._written[who.key_id].discard(label_id)
        return run_id


def _label_json(label_id: int, label: Any) -> dict[str, Any]:
    return {"label_id": label_id, "run_id": label.run_id, "attempt": label.attempt,
            "success": label.success, "failure_class": label.failure_class,
            "labeled_by": label.labeled_by,
            "labeled_at": label.labeled_at.isoformat().replace("+00:00", "Z")}


def next_card(desk: Any, who: Any, req: NextRequest) -> dict[str, Any] | None:
    """The card of the queue's first pick that the page does not hold, or None when there
    is none (:func:`queue_why` says why). A sampling strategy serves the draws of the key's
    own rounds (a round draws from the caller's own runs: its ledger)."""
    from judge.learn.select import SelectError, next_runs

    version = desk.version(req.judge_version)
    if req.strategy in SAMPLING_STRATEGIES:
        pick = _drawn(desk.ledger(who), req)
        return None if pick is None else _card(desk.ledger(who), version, req.judge_version,
                                               pick)
    store, exclude = desk.queue(who), set(req.exclude)
    n = len(exclude) + 1
    while True:
        try:
            picks = next_runs(store, req.judge_version, n=n, strategy=req.strategy)
        except SelectError:  # the version judged none of the runs here: an empty queue
            return None
        pick = next((p for p in picks if p.run_id not in exclude), None)
        if pick is not None or len(picks) < n:
            break
        n *= 2
    if pick is None:
        return None
    return _card(desk.run_ledger(who, pick.run_id), version, req.judge_version, pick)


def _drawn(ledger: Ledger, req: NextRequest) -> Any:
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
    return next((p for p in owed if p.run_id not in exclude), None)


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


def queue_why(desk: Any, who: Any, req: NextRequest) -> dict[str, Any]:
    """Why the queue has no card for the page: a reason code, one line, and the counts
    (:mod:`judge.review.queue`)."""
    from dataclasses import asdict

    from judge.review.queue import empty_reason, queue_state

    desk.version(req.judge_version)
    state = queue_state(desk.queue(who), req.judge_version, set(req.exclude))
    reason, line = empty_reason(state, req.judge_version, key=desk.auth == "key",
                                read_only=desk.read_only(who))
    return {"reason": reason, "detail": line, **asdict(state)}


#: The review page and its calls, outside the OpenAPI schema; each reads its desk from
#: ``app.state.review_desk`` (:func:`add_review`).
router = APIRouter()


def the_desk(request: Request) -> Any:
    """The desk the app serves the page with (:class:`KeyDesk` or :class:`LocalDesk`)."""
    return request.app.state.review_desk


Desk = Annotated[Any, Depends(the_desk)]


@router.get("/review", include_in_schema=False, response_class=HTMLResponse)
def review_page(desk: Desk) -> HTMLResponse:
    from judge.review.page import page

    return HTMLResponse(page(desk.auth, desk.judge_version),
                        headers={"Cache-Control": "no-store"})


@router.get("/review/api/session", include_in_schema=False)
def session(desk: Desk, judge: str | None = Query(None, max_length=200),
            authorization: str | None = Header(None)) -> dict[str, Any]:
    from judge.ensemble.taxonomy import load_taxonomy

    caller = desk.who(authorization)
    name = judge or desk.judge_version
    if name is None:
        raise ApiError(422, "judge: give the judge version whose queue to label "
                       "(/review?judge=VERSION)", param="judge")
    desk.version(name)
    tax = load_taxonomy()
    return {"labeled_by": desk.labeller(caller), "judge_version": name,
            "classes": [[k, v.description] for k, v in tax.classes.items()]}


@router.post("/review/api/next", include_in_schema=False)
def next_run(request: Request, desk: Desk, authorization: str | None = Header(None)) -> dict:
    caller = desk.who(authorization)
    return {"card": next_card(desk, caller, _body(request, NextRequest))}


@router.post("/review/api/labels", include_in_schema=False)
def label(request: Request, desk: Desk, authorization: str | None = Header(None)) -> Response:
    caller = desk.who(authorization)
    body = _body(request, ReviewLabel)
    desk.version(body.judge_version)
    review = _review(desk, caller, body)
    out = desk.add(caller, body, review)
    return JSONResponse({**out, "judge_version": body.judge_version,
                         "strategy": body.pick.strategy, "note": review.note},
                        status_code=201)


@router.post("/review/api/queue", include_in_schema=False)
def queue(request: Request, desk: Desk, authorization: str | None = Header(None)) -> dict:
    caller = desk.who(authorization)
    return queue_why(desk, caller, _body(request, NextRequest))


@router.delete("/review/api/labels/{label_id}", include_in_schema=False)
def undo(label_id: int, desk: Desk, authorization: str | None = Header(None)) -> dict[str, Any]:
    caller = desk.who(authorization)
    run_id = desk.undo(caller, label_id)
    if run_id is None:
        raise ApiError(404, f"label {label_id}: no label this labeller made on the page")
    return {"label_id": label_id, "run_id": run_id, "undone": True}


def add_review(app: FastAPI, desk: Any) -> None:
    """Serve the review page and its calls from ``app`` (outside its OpenAPI schema)."""
    app.state.review_desk = desk
    app.include_router(router)


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
