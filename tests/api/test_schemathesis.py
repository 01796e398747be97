"""schemathesis (v4) property tests over every endpoint of the app's own OpenAPI 3.1 schema.

No 5xx; every answer's status is one the schema documents for that operation; its
content type and body match the schema. Runs in-process (ASGI) against a service on
SQLite with a fake judge; a live key with every right is sent on every case.
"""

from __future__ import annotations

import atexit
import shutil
import tempfile

import schemathesis
from hypothesis import HealthCheck, settings
from schemathesis import GenerationMode
from schemathesis.checks import (
    content_type_conformance,
    not_a_server_error,
    response_schema_conformance,
    status_code_conformance,
)

from judge.api.auth import RIGHTS
from judge.api.routes import create_app
from judge.api.service import JudgeService
from tests.api.conftest import TMP_ROOTS, fake_judges

_dir = tempfile.mkdtemp(prefix="rcjudge-st-")
atexit.register(shutil.rmtree, _dir, True)
_service = JudgeService(f"sqlite:///{_dir}/st.db", judges=fake_judges(), workers=1,
                       bundle_roots=TMP_ROOTS)
atexit.register(_service.close)
_KEY = _service.create_key("schemathesis", "live", sorted(RIGHTS))[0]
_service.retry_base_s = 0.0
_app = create_app(_service)
schema = schemathesis.openapi.from_asgi("/openapi.json", _app)
# the sequence-outcome contract's routes (/api/v1), under their own schema
outcomes = schemathesis.openapi.from_asgi("/api/v1/openapi.json", _app)
# valid and invalid data alike: an invalid request must get a documented 4xx, never a 5xx
for _s in (schema, outcomes):
    _s.config.generation.update(modes=[GenerationMode.POSITIVE, GenerationMode.NEGATIVE])
CHECKS = [not_a_server_error, status_code_conformance, content_type_conformance,
          response_schema_conformance]


@schema.parametrize()
@settings(max_examples=25, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
def test_every_endpoint_conforms(case):
    case.call_and_validate(headers={"Authorization": f"Bearer {_KEY}"}, checks=CHECKS)


@outcomes.parametrize()
@settings(max_examples=25, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
def test_every_sequence_outcome_endpoint_conforms(case):
    case.call_and_validate(headers={"Authorization": f"Bearer {_KEY}"}, checks=CHECKS)
