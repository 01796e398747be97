"""``/v1/attestations``: read only (issued offline by ``rcjudge attestations import``)."""

from __future__ import annotations

from fastapi import APIRouter

from judge.api.dependencies import ERRORS, NOT_FOUND, Auth, Id, Service, need
from judge.api.protocol import Attestation, AttestationList

router = APIRouter()


@router.get("/v1/attestations", dependencies=need("attestations:read"),
            response_model=AttestationList, tags=["attestations"],
            responses=ERRORS)
def attestations(who: Auth, service: Service) -> dict:
    """Attestations (read only: issued offline by ``rcjudge attestations import``)."""
    return service.attestations(who)


@router.get("/v1/attestations/{attestation_id}", dependencies=need("attestations:read"),
            response_model=Attestation,
            tags=["attestations"], responses=NOT_FOUND)
def attestation(attestation_id: Id, who: Auth, service: Service) -> Attestation:
    """One attestation."""
    return service.attestation(who, attestation_id)
