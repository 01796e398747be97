"""``/v1/coefficients``: the public coefficients table (``judge.api.coefficients``)."""

from __future__ import annotations

from fastapi import APIRouter

from judge.api.dependencies import BODY_ERRORS, ERRORS, Auth, Filter, Service, need
from judge.api.protocol import CoefficientsTable

router = APIRouter()


@router.get("/v1/coefficients", dependencies=need("coefficients:read"),
            response_model=CoefficientsTable, tags=["coefficients"],
            responses={**ERRORS, 422: BODY_ERRORS[422]})
def coefficients(who: Auth, service: Service, policy: Filter = None, body: Filter = None,
                 task_family: Filter = None, tier: Filter = None,
                 judge_version: Filter = None) -> dict:
    """The public coefficients table; a cell with n < 40 shows ``insufficient``.

    Filters return every published cell covering the values; on tier B a too narrow
    query is answered with the coarser cell that contains it (``broadened``).
    """
    return service.coefficients(who, policy=policy, body=body, task_family=task_family,
                                tier=tier, judge_version=judge_version)
