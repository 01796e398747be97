"""``/v1/rejudge-jobs``: re-judge the key's runs with another judge version."""

from __future__ import annotations

from fastapi import APIRouter
from fastapi.responses import Response

from judge.api.dependencies import BODY_ERRORS, ERRORS, NOT_FOUND, Auth, Id, Service, need
from judge.api.protocol import RejudgeJob, RejudgeRequest

router = APIRouter()


@router.post("/v1/rejudge-jobs", dependencies=need("rejudge:write"),
             response_model=RejudgeJob, status_code=202,
             tags=["rejudge"], responses={**ERRORS, **BODY_ERRORS})
def start_rejudge(body: RejudgeRequest, who: Auth, service: Service) -> Response:
    """Re-judge the key's runs with another judge version (new rows, none overwritten)."""
    job = service.start_rejudge(who, body)
    return Response(job.model_dump_json(), status_code=202, media_type="application/json",
                    headers={"Location": f"/v1/rejudge-jobs/{job.job_id}"})


@router.get("/v1/rejudge-jobs/{job_id}", dependencies=need("rejudge:read"),
            response_model=RejudgeJob, tags=["rejudge"],
            responses=NOT_FOUND)
def get_rejudge(job_id: Id, who: Auth, service: Service) -> RejudgeJob:
    """A re-judge job's progress."""
    return service.rejudge_job(who, job_id)
