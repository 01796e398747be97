"""schemathesis (v4) property tests over every operation of both OpenAPI 3.1 schemas the
app serves (the Judge API's ``/openapi.json`` and the sequence-outcome contract's
``/api/v1/openapi.json``), with **every** check schemathesis has (``--checks all``).

No 5xx; every status, content type, header and body is one the schema documents; data
the schema allows is accepted, data it forbids refused; a method the path lacks is a 405
with ``Allow``. Runs in-process (ASGI) against a service on SQLite with a fake judge; a
live key with every right is the bearer scheme's credential (``ignored_auth`` also
sends none and bad ones).

Where a valid body names state no schema can describe, ``positive_data_acceptance``
also expects the server's 422 — only on these operations, each for its reason:

* ``POST /v1/judgments``: the bundle at ``bundle_uri`` must exist under a bundle root and
  match its attribution, and answering a missing bundle apart from a refused one would
  tell a caller which server paths exist (issue 29 item 3);
* ``POST /v1/rejudge-jobs``: ``judge`` must be a version the server can load and
  ``run_ids`` runs of the key's;
* ``POST /v1/webhook-endpoints`` and ``POST /api/v1/webhook-endpoints/``: the URL's host
  must resolve to a public address (a live key; loopback for a test key), which DNS
  decides, not the schema.

A third run writes labels at a dataset and sequence that exist (``PUT …/outcome/``), where
a valid body may get the store's 400 for a rule across items (see ``label_write``).

And ``negative_data_rejection`` also takes a 413: a generated invalid body can be over the
route's size limit, and 413 is the documented refusal of that (RFC 9110 §15.5.14).
"""

from __future__ import annotations

import atexit
import shutil
import tempfile
from collections import Counter

import pytest
import schemathesis
from hypothesis import HealthCheck, settings
from schemathesis import GenerationMode
from schemathesis.checks import CHECKS, load_all_checks
from schemathesis.config import (
    ChecksConfig,
    HttpBearerAuthConfig,
    OperationConfig,
    OperationsConfig,
)

from judge.api.auth import RIGHTS
from judge.api.routes import create_app
from judge.api.service import JudgeService
from judge.outcomes.store import OutcomeStore
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

#: (method, path) -> why a valid body may still get 422 (the module docstring).
STATEFUL_BODIES = {
    ("POST", "/v1/judgments"): "the bundle on disk",
    ("POST", "/v1/rejudge-jobs"): "loadable judge versions, the key's runs",
    ("POST", "/v1/webhook-endpoints"): "the URL host's addresses",
    ("POST", "/api/v1/webhook-endpoints/"): "the URL host's addresses",
}
# schemathesis' defaults of positive_data_acceptance (less 5xx) and negative_data_rejection
_ACCEPTED = ["2xx", "3xx", "401", "403", "404", "409", "429"]
_REFUSED = ["400", "401", "403", "404", "405", "406", "409", "415", "422", "428", "429", "5xx"]


def _configure(s: schemathesis.BaseSchema) -> None:
    # valid and invalid data alike: an invalid request must get a documented 4xx
    s.config.generation.update(modes=[GenerationMode.POSITIVE, GenerationMode.NEGATIVE])
    s.config.operations = OperationsConfig(operations=[
        OperationConfig.from_dict({
            "include-name": f"{method} {path}",
            "checks": {"positive_data_acceptance": {"expected-statuses": [*_ACCEPTED, 422]}}})
        for method, path in STATEFUL_BODIES])
    # the key through the schema's own security scheme, so schemathesis knows what it sent
    s.config.auth.openapi.schemes["bearer"] = HttpBearerAuthConfig(bearer=_KEY)
    s.config.checks = ChecksConfig.from_dict({"negative_data_rejection": {
        "expected-statuses": [*_REFUSED, "413"]}})


# the label write again, at a dataset and sequence that exist, so its bodies reach the
# store's validation and are stored (the operations above mostly answer 404 to a drawn
# owner/slug); a valid body may also get the store's 400: the cross-field rules JSON
# Schema cannot state (subtasks sorted and nested or disjoint, one hand's actions sorted
# without overlap, end_ts >= start_ts, confidence only with source model)
_store = OutcomeStore(_service.modes["live"].engine)
_store.create_dataset("lab/st", key_id=_service.authenticate(f"Bearer {_KEY}").key_id)
_UID = _store.add_sequence("lab/st", "ab" * 32, "/b/st")
_PUT = "PUT /api/v1/datasets/{owner}/{slug}/sequences/{sequence_uid}/outcome/"
label_write = schemathesis.openapi.from_asgi("/api/v1/openapi.json", _app).include(
    name=_PUT)

for _s in (schema, outcomes, label_write):
    _configure(_s)
label_write.config.operations = OperationsConfig(operations=[OperationConfig.from_dict({
    "include-name": _PUT,
    "parameters": {"path.owner": "lab", "path.slug": "st", "path.sequence_uid": _UID},
    "checks": {"positive_data_acceptance": {"expected-statuses": [*_ACCEPTED, 400]}}})])
load_all_checks()
ALL_CHECKS = CHECKS.get_all()  # what `schemathesis run --checks all` runs
EXAMPLES = 25  # per operation: ~20 s for both schemas


#: Status codes answered per schema (cases that passed every check), for the last test.
TALLY: dict[str, Counter] = {"judge": Counter(), "outcomes": Counter(),
                             "label write": Counter()}


@schema.parametrize()
@settings(max_examples=EXAMPLES, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
def test_every_endpoint_conforms(case):
    TALLY["judge"][case.call_and_validate(checks=ALL_CHECKS).status_code] += 1


@outcomes.parametrize()
@settings(max_examples=EXAMPLES, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
def test_every_sequence_outcome_endpoint_conforms(case):
    TALLY["outcomes"][case.call_and_validate(checks=ALL_CHECKS).status_code] += 1


@label_write.parametrize()
@settings(max_examples=EXAMPLES * 2, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
def test_label_writes_reach_the_store(case):
    TALLY["label write"][case.call_and_validate(checks=ALL_CHECKS).status_code] += 1


def test_the_key_was_sent_and_no_case_got_a_5xx():
    if not all(TALLY.values()):
        pytest.skip("run with the schemathesis tests above (the whole file)")
    for name, statuses in TALLY.items():
        print(f"schemathesis {name}: {sum(statuses.values())} cases, "
              f"{sum(n for s, n in statuses.items() if s >= 500)} 5xx, "
              f"statuses {dict(sorted(statuses.items()))}")
        assert not any(s >= 500 for s in statuses)
        assert statuses[200] > 0  # answered with the bearer scheme's key (labels stored)


def test_all_checks_are_run():
    names = {c.__name__ for c in ALL_CHECKS}
    assert {"positive_data_acceptance", "negative_data_rejection", "ignored_auth",
            "unsupported_method", "allow_header_conformance", "missing_required_header",
            "response_headers_conformance", "response_schema_conformance"} <= names
