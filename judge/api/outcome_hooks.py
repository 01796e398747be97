"""Webhooks of the sequence-outcome side: the alert event, its subscription routes, a sender.

``acceptance.quality_target_crossed`` is sent once per crossing of a dataset's quality
target (:func:`judge.outcomes.targets.evaluate`) to every enabled endpoint subscribed to
it whose key may read the dataset. It is declared in the outcome contract's own schema
(``/api/v1/openapi.json``, OpenAPI 3.1 ``webhooks``) and subscribed to under ``/api/v1``
(``POST /api/v1/webhook-endpoints/``), never through ``/v1/webhook-endpoints``: the Judge
API's schema keeps its four events. Signing, delivery, retries, 410 and the target checks
are the Judge API's (:class:`judge.api.webhooks.WebhookMixin`), unchanged.

:class:`AlertSender` delivers from a process that is not the API server (``rcjudge
acceptance report|check``) over the one database it opened. Which target rules apply is
that database's mode, recorded by the API when it created it (``api_settings.mode``): a
test-mode database's endpoints belong to test keys (loopback allowed), any other is live.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from enum import StrEnum
from typing import Annotated, Any, Literal

import sqlalchemy as sa
from fastapi import APIRouter, Depends, Request
from fastapi.responses import Response
from pydantic import BaseModel, ConfigDict, Field

from judge.api import tables as T
from judge.api.common import Caller, iso
from judge.api.protocol import Problem, ValidationProblem
from judge.api.service import JudgeService
from judge.api.webhooks import OUTCOME_EVENT_TYPES, WebhookMixin
from judge.api.wire import PREFIX, key_with
from judge.outcomes.store import OutcomeStore
from judge.outcomes.targets import EVENT


class _M(BaseModel):
    model_config = ConfigDict(extra="forbid")


class OutcomeEventType(StrEnum):
    """The outcome side's webhook event types."""

    quality_target_crossed = "acceptance.quality_target_crossed"


class OutcomeEndpointRequest(_M):
    """``POST /api/v1/webhook-endpoints/``."""

    url: str = Field(min_length=1, max_length=2048, description="https://… (http on loopback "
                     "only for test keys).")
    events: list[OutcomeEventType] = Field(min_length=1, max_length=1)


class OutcomeEndpoint(_M):
    """An endpoint subscribed to outcome events (its secret shown only when created)."""

    endpoint_id: str
    url: str
    events: list[OutcomeEventType]
    enabled: bool
    disabled_reason: str | None
    created_at: str


class OutcomeEndpointWithSecret(OutcomeEndpoint):
    secret: str = Field(description="``whsec_…``: verify each delivery's signature with it.")


class OutcomeDelivery(_M):
    """One recorded delivery attempt."""

    delivery_id: int
    message_id: str
    event_type: OutcomeEventType
    attempt: int
    status: int | None
    error: str | None
    delivered_at: str


class AcceptanceCounts(_M):
    """Checked captures by effective verdict, and those with a failed criterion."""

    accept: int
    quarantine: int
    reject: int
    issue: int


class QualityTargetCrossedData(_M):
    dataset: str = Field(description="owner/slug")
    campaign: str | None = Field(description="The campaign file that set the target.")
    target: Literal["min_acceptance_rate", "max_reject_rate", "max_issue_rate"]
    metric: Literal["acceptance_rate", "reject_rate", "issue_rate"]
    value: float
    limit: float
    checked: int
    counts: AcceptanceCounts
    crossed_at: str


class QualityTargetCrossedEvent(_M):
    """Sent once when a quality target of a dataset is crossed (again after recovering)."""

    type: Literal["acceptance.quality_target_crossed"]
    timestamp: str
    test: bool
    data: QualityTargetCrossedData


# the right before the body is read (403 first)
Reader = Annotated[Caller, Depends(key_with("webhooks:read"))]
Writer = Annotated[Caller, Depends(key_with("webhooks:write"))]


def _out(r: Any, secret: bool = False) -> dict[str, Any]:
    doc = {"endpoint_id": r.endpoint_id, "url": r.url, "events": list(r.events),
           "enabled": r.enabled, "disabled_reason": r.disabled_reason,
           "created_at": iso(r.created_at)}
    return {**doc, "secret": r.secret} if secret else doc


_TAGS = ["sequence outcomes"]
_ERRORS = {s: {"model": ValidationProblem if s == 422 else Problem, "description": d}
           for s, d in ((400, "Malformed JSON"),
                        (401, "Missing, malformed, unknown or revoked key"),
                        (403, "The key lacks the right"), (404, "No such endpoint"),
                        (413, "Body over the size limit"), (415, "Not application/json"),
                        (422, "Invalid request"))}
_BASE = f"{PREFIX}/webhook-endpoints"
#: The subscription routes under ``/api/v1``.
router = APIRouter()
#: The event they subscribe to, documented in the outcome contract's schema (never served).
events = APIRouter()


def svc(request: Request) -> JudgeService:
    """The service the app serves (``app.state.service``)."""
    return request.app.state.service


@router.post(f"{_BASE}/", tags=_TAGS, status_code=201, responses=_ERRORS,
             response_model=OutcomeEndpointWithSecret)
def create_outcome_endpoint(body: OutcomeEndpointRequest, request: Request, who: Writer) -> Any:
    """Subscribe a URL to outcome events (a key with ``webhooks:write``)."""
    eid = svc(request).insert_endpoint(who, body.url, [e.value for e in body.events])
    return _out(svc(request)._endpoint(who, eid, OUTCOME_EVENT_TYPES), secret=True)


@router.get(f"{_BASE}/", tags=_TAGS, responses=_ERRORS, response_model=list[OutcomeEndpoint])
def list_outcome_endpoints(request: Request, who: Reader) -> Any:
    """The key's endpoints subscribed to outcome events."""
    return [_out(r) for r in svc(request).endpoint_rows(who, OUTCOME_EVENT_TYPES)]


@router.delete(f"{_BASE}/{{endpoint_id}}/", tags=_TAGS, status_code=204, responses=_ERRORS)
def delete_outcome_endpoint(endpoint_id: str, request: Request, who: Writer) -> Response:
    """Delete one of the key's outcome endpoints."""
    svc(request).delete_endpoint(who, endpoint_id, OUTCOME_EVENT_TYPES)
    return Response(status_code=204)


@router.get(f"{_BASE}/{{endpoint_id}}/deliveries/", tags=_TAGS, responses=_ERRORS,
            response_model=list[OutcomeDelivery])
def outcome_deliveries(endpoint_id: str, request: Request, who: Reader) -> Any:
    """Every delivery attempt to the endpoint, oldest first."""
    return svc(request).delivery_rows(who, endpoint_id, OUTCOME_EVENT_TYPES)


@events.post(EVENT)
def quality_target_crossed(body: QualityTargetCrossedEvent) -> None:
    """Sent once per crossing of a dataset's quality target (docs/outcomes.md)."""


@dataclass(frozen=True)
class _Subscriber:
    key_id: str
    mode: str


class _Db:
    def __init__(self, engine: sa.Engine) -> None:
        self.engine = engine

    def write(self) -> Any:
        return self.engine.connect().execution_options(ledger_write=True)


def database_mode(engine: sa.Engine) -> str:
    """``test`` for the API's test-mode database (``api_settings.mode``), else ``live``."""
    if not sa.inspect(engine).has_table(T.settings.name):
        return "live"
    s = T.settings
    with engine.connect() as conn:
        value = conn.execute(sa.select(s.c.value).where(s.c.name == "mode")).scalar()
    return "test" if value == "test" else "live"


class AlertSender(WebhookMixin):
    """Delivers outcome events over one database, outside the API server; ``close`` waits."""

    def __init__(self, engine: sa.Engine, workers: int = 4) -> None:
        self.mode = database_mode(engine)
        self.modes = {self.mode: _Db(engine)}
        self.pool = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="rcjudge-alerts")

    def send(self, store: OutcomeStore, dataset: str, events: list[dict[str, Any]]) -> list[str]:
        """Queue each event's data to every subscribed endpoint whose (unrevoked) key may
        read ``dataset``; the message ids."""
        engine = self.modes[self.mode].engine
        if not events or not sa.inspect(engine).has_table(T.webhook_endpoints.name):
            return []
        w, k = T.webhook_endpoints, T.api_keys
        with engine.connect() as conn:
            rows = conn.execute(sa.select(w).where(w.c.enabled.is_(True))
                                .order_by(w.c.created_at, w.c.endpoint_id)).all()
            revoked = set() if not sa.inspect(engine).has_table(k.name) else set(
                conn.execute(sa.select(k.c.key_id).where(k.c.revoked_at.is_not(None))).scalars())
        ds = store.dataset(dataset)
        sent = []
        for row in rows:
            if EVENT in row.events and row.key_id not in revoked and store.access(ds, row.key_id):
                who = _Subscriber(row.key_id, self.mode)
                sent += [self._queue(who, row, EVENT, data) for data in events]
        return sent

    def close(self) -> None:
        self.pool.shutdown(wait=True)


def notify(engine: sa.Engine) -> Any:
    """A ``notify(dataset, events)`` for :func:`judge.outcomes.targets.evaluate` that
    delivers them and waits for the deliveries (retries included)."""

    def send(dataset: str, events: list[dict[str, Any]]) -> list[str]:
        sender = AlertSender(engine)
        try:
            return sender.send(OutcomeStore(engine), dataset, events)
        finally:
            sender.close()

    return send
