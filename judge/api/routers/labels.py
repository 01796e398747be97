"""``/v1/runs/{run_id}/labels`` and ``/v1/calibration-set``: what people said about runs."""

from __future__ import annotations

from fastapi import APIRouter
from fastapi.responses import Response

from judge.api.dependencies import (
    BODY_ERRORS,
    ERRORS,
    NOT_FOUND,
    NOT_FOUND_WRITE,
    Auth,
    Filter,
    Id,
    RunId,
    Service,
    need,
)
from judge.api.protocol import CalibrationSet, LabelList, LabelRequest, LabelResponse

router = APIRouter()


@router.post("/v1/runs/{run_id}/labels", dependencies=need("labels:write"),
             response_model=LabelResponse, status_code=201,
             tags=["labels"], responses={**NOT_FOUND_WRITE, 200: {
                 "model": LabelResponse, "description": "Already recorded"}})
def post_label(run_id: RunId, body: LabelRequest, who: Auth, service: Service) -> Response:
    """Record what a person said about a run (kept beside the judge's verdict)."""
    new, label = service.add_label(who, run_id, body)
    return Response(label.model_dump_json(), status_code=201 if new else 200,
                    media_type="application/json")


@router.get("/v1/runs/{run_id}/labels", dependencies=need("labels:read"),
            response_model=LabelList, tags=["labels"],
            responses=NOT_FOUND)
def list_labels(run_id: Id, who: Auth, service: Service) -> dict:
    """Every label of a run, oldest first."""
    return service.list_labels(who, run_id)


@router.get("/v1/calibration-set", dependencies=need("labels:read"),
            response_model=CalibrationSet, tags=["labels"],
            responses={**ERRORS, 422: BODY_ERRORS[422]})
def calibration_set(who: Auth, service: Service, judge_version: Filter = None) -> dict:
    """The key's judgments that disagree with their run's current label."""
    return service.calibration_set(who, judge_version)
