"""The Judge API's routes, one ``APIRouter`` per resource (FastAPI's "bigger applications"
layout); :func:`judge.api.routes.create_app` includes them in this order:

========================  ===================================================================
``judgments``             ``POST /v1/judgments``, ``GET /v1/judgments``, ``…/{judgment_id}``
``jobs``                  ``GET /v1/jobs/{job_id}`` (an asynchronous judgment)
``keys``                  ``GET /v1/keys/me``, ``GET /v1/usage`` (the key and its metering)
``runs``                  ``GET /v1/runs``, ``GET /v1/runs/{run_id}``
``labels``                ``POST|GET /v1/runs/{run_id}/labels``, ``GET /v1/calibration-set``
``versions``              ``GET /v1/taxonomy``, ``GET /v1/judge-versions``, ``…/{name}``
``rejudge``               ``POST /v1/rejudge-jobs``, ``GET /v1/rejudge-jobs/{job_id}``
``coefficients``          ``GET /v1/coefficients``
``attestations``          ``GET /v1/attestations``, ``…/{attestation_id}``
``webhooks``              ``/v1/webhook-endpoints…`` and the four events the schema declares
========================  ===================================================================

Then the sequence-outcome contract's (:mod:`judge.api.outcome_hooks`,
:mod:`judge.api.outcomes`, under ``/api/v1``). Each route is thin over
:class:`judge.api.service.JudgeService`; what they share is :mod:`judge.api.dependencies`.
"""
