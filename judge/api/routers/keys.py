"""``/v1/keys/me`` and ``/v1/usage``: the calling key and what it was charged."""

from __future__ import annotations

from fastapi import APIRouter

from judge.api.common import iso
from judge.api.dependencies import BODY_ERRORS, ERRORS, Auth, Limit, Service, UsageCursor, need
from judge.api.protocol import KeyInfo, Usage

router = APIRouter()


@router.get("/v1/usage", dependencies=need("usage:read"),
            response_model=Usage, tags=["metering"],
            responses={**ERRORS, 422: BODY_ERRORS[422]})
def get_usage(who: Auth, service: Service, cursor: UsageCursor = None,
              limit: Limit = 50) -> dict:
    """The calling key's judged calls, their exact sum, and a page of the charges."""
    return service.usage(who, cursor, limit)


@router.get("/v1/keys/me", dependencies=need(None), response_model=KeyInfo, tags=["keys"],
            responses=ERRORS)
def get_key(who: Auth) -> KeyInfo:
    """The calling key's id, mode and rights_granted."""
    return KeyInfo(key_id=who.key_id, name=who.name, mode=who.mode,
                   rights_granted=list(who.rights), created_at=iso(who.created_at))
