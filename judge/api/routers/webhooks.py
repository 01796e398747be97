"""``/v1/webhook-endpoints``: subscriptions, their secrets and deliveries; and ``events``,
the four events the Judge API's schema declares (OpenAPI 3.1 ``webhooks``)."""

from __future__ import annotations

import json

from fastapi import APIRouter
from fastapi.responses import Response

from judge.api.dependencies import BODY_ERRORS, ERRORS, NOT_FOUND, Auth, Id, Service, need
from judge.api.protocol import (
    CalibrationDisagreementEvent,
    CoefficientsPublishedEvent,
    JudgmentCompletedEvent,
    RejudgeCompletedEvent,
    WebhookDeliveryList,
    WebhookEndpointList,
    WebhookEndpointRequest,
    WebhookEndpointWithSecret,
    WebhookTestResult,
)

router = APIRouter()
#: The events sent to subscribed endpoints: documented, never served (``app.webhooks``).
events = APIRouter()


@router.post("/v1/webhook-endpoints", dependencies=need("webhooks:write"),
             response_model=WebhookEndpointWithSecret,
             status_code=201, tags=["webhooks"], responses={**ERRORS, **BODY_ERRORS})
def create_endpoint(body: WebhookEndpointRequest, who: Auth, service: Service) -> Response:
    """Subscribe a URL to event types; the signing secret is shown in this answer only."""
    ep = service.create_endpoint(who, body)
    return Response(ep.model_dump_json(), status_code=201, media_type="application/json")


@router.get("/v1/webhook-endpoints", dependencies=need("webhooks:read"),
            response_model=WebhookEndpointList, tags=["webhooks"],
            responses=ERRORS)
def list_endpoints(who: Auth, service: Service) -> dict:
    """The key's webhook endpoints."""
    return service.list_endpoints(who)


@router.delete("/v1/webhook-endpoints/{endpoint_id}", dependencies=need("webhooks:write"),
               status_code=204, tags=["webhooks"],
               responses=NOT_FOUND, response_class=Response)
def delete_endpoint(endpoint_id: Id, who: Auth, service: Service) -> Response:
    """Delete a webhook endpoint."""
    service.delete_endpoint(who, endpoint_id)
    return Response(status_code=204)


@router.post("/v1/webhook-endpoints/{endpoint_id}/rotate-secret",
             dependencies=need("webhooks:write"), response_model=WebhookEndpointWithSecret,
             tags=["webhooks"], responses=NOT_FOUND)
def rotate_secret(endpoint_id: Id, who: Auth, service: Service) -> WebhookEndpointWithSecret:
    """A new signing secret (the old one stops signing at once)."""
    return service.rotate_secret(who, endpoint_id)


@router.get("/v1/webhook-endpoints/{endpoint_id}/deliveries",
            dependencies=need("webhooks:read"),
            response_model=WebhookDeliveryList, tags=["webhooks"], responses=NOT_FOUND)
def deliveries(endpoint_id: Id, who: Auth, service: Service) -> dict:
    """Every delivery attempt to an endpoint, oldest first."""
    return service.deliveries(who, endpoint_id)


@router.post("/v1/webhook-endpoints/{endpoint_id}/test", dependencies=need("webhooks:write"),
             response_model=WebhookTestResult,
             status_code=202, tags=["webhooks"], responses=NOT_FOUND)
def send_test(endpoint_id: Id, who: Auth, service: Service) -> Response:
    """Send a sample event of the endpoint's first event type."""
    out = service.send_test(who, endpoint_id)
    return Response(json.dumps(out, sort_keys=True, separators=(",", ":")),
                    status_code=202, media_type="application/json")


@events.post("judgment.completed")
def judgment_completed(body: JudgmentCompletedEvent) -> None:
    """Sent when a charged judgment is written."""


@events.post("rejudge.completed")
def rejudge_completed(body: RejudgeCompletedEvent) -> None:
    """Sent when a re-judge job finishes."""


@events.post("coefficients.published")
def coefficients_published(body: CoefficientsPublishedEvent) -> None:
    """Sent when a block of rows is released into the public table."""


@events.post("calibration.disagreement")
def calibration_disagreement(body: CalibrationDisagreementEvent) -> None:
    """Sent when an operator label disagrees with a judgment of the run."""
