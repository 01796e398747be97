"""``/v1/taxonomy`` and ``/v1/judge-versions``: what the server judges with."""

from __future__ import annotations

from fastapi import APIRouter

from judge.api.dependencies import ERRORS, NOT_FOUND, Auth, Id, Service, need
from judge.api.protocol import JudgeVersionList, JudgeVersionResponse, TaxonomyResponse

router = APIRouter()


@router.get("/v1/taxonomy", dependencies=need("taxonomy:read"),
            response_model=TaxonomyResponse, tags=["taxonomy"],
            responses=ERRORS)
def taxonomy(who: Auth, service: Service) -> TaxonomyResponse:
    """The failure taxonomy and which classes count against the policy."""
    return service.taxonomy(who)


@router.get("/v1/judge-versions", dependencies=need("taxonomy:read"),
            response_model=JudgeVersionList, tags=["taxonomy"],
            responses=ERRORS)
def judge_versions(who: Auth, service: Service) -> dict:
    """Every judge version this server knows."""
    return {"data": service.judge_versions(who)}


@router.get("/v1/judge-versions/{name}", dependencies=need("taxonomy:read"),
            response_model=JudgeVersionResponse,
            tags=["taxonomy"], responses=NOT_FOUND)
def judge_version(name: Id, who: Auth, service: Service) -> JudgeVersionResponse:
    """One judge version: its models and recorded fingerprint."""
    return service.judge_version(who, name)
