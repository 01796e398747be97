"""``/v1/jobs``: an asynchronous judging job (``Prefer: respond-async``)."""

from __future__ import annotations

from fastapi import APIRouter

from judge.api.dependencies import ERRORS, Auth, Service, need
from judge.api.protocol import Job, Problem

router = APIRouter()


@router.get("/v1/jobs/{job_id}", dependencies=need("judgments:read"),
            response_model=Job, tags=["judgments"],
            responses={**ERRORS, 404: {"model": Problem, "description": "No such job"}})
def get_job(job_id: str, who: Auth, service: Service) -> Job:
    """An asynchronous judging job and, once finished, its judgment or problem."""
    return service.job(who, job_id)
