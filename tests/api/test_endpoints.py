"""The other endpoints, the OpenAPI schema's counts, and attestations being read only."""

from __future__ import annotations

import json
import subprocess
import sys
import time

import pytest

from judge.api.catalog import aggregate_cells
from judge.api.routes import create_app
from tests.api.conftest import TMP_ROOTS, bearer, counts, fake_judge, fake_judges, request_for


@pytest.fixture(scope="module")
def spec():
    class NoService:
        pass

    return create_app(NoService()).openapi()


def test_schema_counts(spec):
    ops = sorted((m.upper(), p) for p, d in spec["paths"].items() for m in d)
    assert len(ops) == 25  # the sequence-outcome contract's 7 have their own schema (below)
    assert spec["openapi"] == "3.1.0"
    assert sorted(spec["webhooks"]) == ["calibration.disagreement", "coefficients.published",
                                        "judgment.completed", "rejudge.completed"]
    assert sorted(spec["components"]["schemas"]) == SCHEMAS
    assert len(spec["components"]["schemas"]) == SPEC_SCHEMAS
    assert [m for m, p in ops if p.startswith("/v1/attestations")] == ["GET", "GET"]


#: spec/judge_api.md: "58 fully defined schemas". A judgment request's body
#: (``BodyRequest``: dof and mount_h_mm required) is written inline, not a 59th.
SPEC_SCHEMAS = 58
SCHEMAS = [
    "Attestation", "AttestationList", "Body", "CalibrationDisagreementEvent",
    "CalibrationRow",
    "CalibrationSet", "CellStatus", "ChargedTo", "CoefficientCell", "CoefficientsPublishedData",
    "CoefficientsPublishedEvent", "CoefficientsQuery", "CoefficientsTable", "Env", "EventType",
    "InvalidParam", "Job", "JobResult", "JobStatus", "JudgeModel", "JudgeVersionList",
    "JudgeVersionResponse", "JudgmentCompletedEvent", "JudgmentList", "JudgmentRequest",
    "JudgmentResponse", "KeyInfo", "KeyMode", "LabelList", "LabelRequest", "LabelResponse",
    "Policy", "Problem", "RejudgeCompletedData", "RejudgeCompletedEvent", "RejudgeFailure",
    "RejudgeJob", "RejudgeRequest", "Reset", "Right", "RunList", "RunResponse", "Task",
    "TaskOut", "TaxonomyClass", "TaxonomyFamily", "TaxonomyResponse", "Usage", "UsageLine",
    "ValidationProblem", "WebhookDelivery", "WebhookDeliveryList", "WebhookEndpoint",
    "WebhookEndpointList", "WebhookEndpointRequest", "WebhookEndpointWithSecret",
    "WebhookEvent", "WebhookTestResult"]


def _refs(node, out):
    if isinstance(node, dict):
        if isinstance(node.get("$ref"), str):
            out.add(node["$ref"].rsplit("/", 1)[-1])
        for v in node.values():
            _refs(v, out)
    elif isinstance(node, list):
        for v in node:
            _refs(v, out)
    return out


def test_every_schema_is_used_by_an_operation_or_a_webhook(spec):
    """No padding: each of the 58 is reached from some operation's or webhook's request or
    response, directly or through other schemas."""
    schemas = spec["components"]["schemas"]
    seen = _refs({"paths": spec["paths"], "webhooks": spec["webhooks"]}, set())
    todo = list(seen)
    while todo:
        for ref in _refs(schemas[todo.pop()], set()) - seen:
            seen.add(ref)
            todo.append(ref)
    assert sorted(seen) == SCHEMAS
    # every 422 an operation documents is the validation problem, as problem+json
    for ops in spec["paths"].values():
        for op in ops.values():
            if "422" in op["responses"]:
                assert op["responses"]["422"]["content"] == {"application/problem+json": {
                    "schema": {"$ref": "#/components/schemas/ValidationProblem"}}}


def _bare(schema, where, out):
    if isinstance(schema, dict):
        if schema.get("type") == "object" and "properties" not in schema and not isinstance(
                schema.get("additionalProperties"), dict):
            out.append(where)
        if "properties" in schema:
            for k, v in schema["properties"].items():
                if not any(t in v for t in ("type", "$ref", "anyOf", "allOf", "oneOf")):
                    out.append(f"{where}.{k}")
        for k, v in schema.items():
            _bare(v, f"{where}/{k}", out)
    elif isinstance(schema, list):
        for i, v in enumerate(schema):
            _bare(v, f"{where}[{i}]", out)


def test_no_bare_object_and_every_property_typed(spec):
    out: list[str] = []
    _bare(spec["components"]["schemas"], "schemas", out)
    assert out == []


@pytest.mark.parametrize("method", ["POST", "PUT", "PATCH", "DELETE"])
@pytest.mark.parametrize("path", ["/v1/attestations", "/v1/attestations/at_1"])
def test_attestations_cannot_be_written(client, live_key, method, path):
    r = client.request(method, path, headers=bearer(live_key), json={"subject": "x"})
    assert r.status_code == 405 and r.headers["allow"] == "GET, OPTIONS"
    assert r.headers["content-type"] == "application/problem+json"
    assert r.json()["detail"] == f"{method} is not allowed on {path}"


def test_attestations_import_then_read(client, service, live_key, tmp_path):
    src = tmp_path / "att.jsonl"
    rows = [{"attestation_id": "at_1", "subject": "policy-a@6.0.2", "statement": "endorsed",
             "issued_by": "lab board", "issued_at": "2026-11-30T12:00:00+00:00"}]
    src.write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    db = str(service.modes["live"].engine.url)
    run = [sys.executable, "-m", "rcjudge.cli", "attestations", "import", "--db", db, "--json"]
    out = subprocess.run([*run, str(src)], capture_output=True, text=True, check=True)
    assert json.loads(out.stdout) == {"file": str(src), "read": 1, "imported": 1}
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"attestation_id": "at_2"}\nnope\n')
    out = subprocess.run([*run, str(bad)], capture_output=True, text=True)
    assert out.returncode == 1  # a refused file: an input (rcjudge --help)
    assert out.stderr == (f"rcjudge: error: {bad}: 2 error(s), nothing imported: line 1: "
                          "missing subject, statement, issued_by, issued_at; line 2: not valid "
                          "JSON: Expecting value (line 1, column 1)\n")
    got = client.get("/v1/attestations", headers=bearer(live_key)).json()
    assert got == {"data": [{**rows[0], "issued_at": "2026-11-30T12:00:00Z"}]}
    assert client.get("/v1/attestations/at_1", headers=bearer(live_key)).json()["subject"] == \
        "policy-a@6.0.2"
    assert client.get("/v1/attestations/at_9", headers=bearer(live_key)).status_code == 404


def test_runs_judgments_labels_and_calibration(client, live_key, api_bundles):
    j = client.post("/v1/judgments", json=request_for(api_bundles[0]),
                    headers=bearer(live_key)).json()
    run_id = j["run_id"]
    listed = client.get("/v1/judgments", headers=bearer(live_key)).json()
    assert listed == {"data": [{**j, "charged_to": None}], "next_cursor": None}
    assert client.get(f"/v1/judgments/{j['judgment_id']}",
                      headers=bearer(live_key)).json() == {**j, "charged_to": None}
    assert client.get("/v1/judgments/jd_99", headers=bearer(live_key)).status_code == 404
    run = client.get(f"/v1/runs/{run_id}", headers=bearer(live_key)).json()
    attribution = request_for(api_bundles[0])
    assert run["task"] == attribution["task"] and run["policy"] == attribution["policy"]
    # what was recorded of the optional attribution is shown as sent (seed as text)
    assert run["env"] == attribution["env"] and set(run["env"]) == {
        "lighting_k", "clutter", "friction_mu"}
    assert run["reset"] == {"type": "scripted", "seconds": 5.0, "operator_min": None}
    assert run["seed"] == attribution["seed"] and run["seed"].startswith("0x")
    assert client.get("/v1/runs", headers=bearer(live_key)).json()["data"] == [run]
    # the judge said failure (grasp.slip); the operator says success: a disagreement
    label = {"attempt": True, "success": True, "labeled_by": "op-1",
             "labeled_at": "2026-12-01T10:00:00Z"}
    r = client.post(f"/v1/runs/{run_id}/labels", json=label, headers=bearer(live_key))
    assert r.status_code == 201
    assert r.json() == {"label_id": 1, "run_id": run_id, "attempt": True, "success": True,
                        "failure_class": None, "labeled_by": "op-1",
                        "labeled_at": "2026-12-01T10:00:00Z"}
    again = client.post(f"/v1/runs/{run_id}/labels", json=label, headers=bearer(live_key))
    assert (again.status_code, again.json()) == (200, r.json())
    assert client.get(f"/v1/runs/{run_id}/labels",
                      headers=bearer(live_key)).json() == {"data": [r.json()]}
    cal = client.get("/v1/calibration-set", headers=bearer(live_key)).json()["data"]
    assert [(c["judgment_id"], c["success"], c["label_success"], c["success_disagrees"])
            for c in cal] == [(j["judgment_id"], False, True, True)]
    bad = client.post(f"/v1/runs/{run_id}/labels", json={**label, "failure_class": "grasp.x"},
                      headers=bearer(live_key))
    assert bad.status_code == 422 and bad.json()["detail"] == (  # as `labels import` says
        "failure_class: 'grasp.x' given for a successful run; expected empty when success "
        "is true")


def test_tier_b_task_id_is_never_returned(client, live_key, api_bundles, caplog):
    import logging

    caplog.set_level(logging.DEBUG)
    doc = request_for(api_bundles[1])
    doc["task"]["tier"] = "B"
    j = client.post("/v1/judgments", json=doc, headers=bearer(live_key))
    assert j.status_code == 200
    assert doc["task"]["id"] not in j.text
    assert doc["task"]["id"] not in str(j.headers)
    listed = client.get("/v1/judgments?limit=1", headers=bearer(live_key))
    assert doc["task"]["id"] not in listed.text
    runs = client.get("/v1/runs", headers=bearer(live_key))
    assert runs.json()["data"][0]["task"] == {"id": None, "tier": "B"}
    assert doc["task"]["id"] not in runs.text
    assert doc["task"]["id"] not in client.get("/v1/coefficients",
                                               headers=bearer(live_key)).text
    assert doc["task"]["id"] not in caplog.text  # nor in any log line


def test_taxonomy_and_judge_versions(client, live_key):
    tax = client.get("/v1/taxonomy", headers=bearer(live_key)).json()
    assert (len(tax["classes"]), tax["exempt_count"]) == (54, 20)
    assert tax["empty_class_counts_against_policy"] is True
    names = [v["name"] for v in client.get("/v1/judge-versions",
                                           headers=bearer(live_key)).json()["data"]]
    assert names == ["rc-judge-v1", "rc-judge-v1-served", "tiny", "tiny-streams", "tiny-vision",
                     "tiny-vision-224-streams", "tiny-vision-sensors", "tiny-vision-streams"]
    assert client.get("/v1/judge-versions/nope", headers=bearer(live_key)).status_code == 404


class Row:
    def __init__(self, success, failure_class=None, policy="lab/p@1"):
        self.policy, self.body, self.task_family, self.tier = policy, "arm+hand", "t.f", "A"
        self.task_key = f"t{id(self) % 7}"
        self.judge_version, self.success, self.failure_class = "v1", success, failure_class


def test_empty_class_counts_against_the_policy():
    # 30 successes, one NULL and one "" failure (both count), one unknown class (counts),
    # 7 counted grasp.slip failures, 5 exempt env.object_missing failures (do not count)
    rows = ([Row(True)] * 30 + [Row(False, None), Row(False, ""), Row(False, "x.unknown")]
            + [Row(False, "grasp.slip")] * 7 + [Row(False, "env.object_missing")] * 5)
    (cell,) = aggregate_cells(rows)
    assert (cell.n, cell.status, cell.success_rate, cell.exempt_failures) == (
        40, "ok", 0.75, 5)
    # without the NULL and "" failures the cell has 38 counted runs: insufficient, no number
    (small,) = aggregate_cells([r for r in rows if r.failure_class not in (None, "")
                                or r.success])
    assert (small.n, small.status, small.success_rate) == (38, "insufficient", None)


def test_coefficients_cell_from_a_judged_call(client, live_key, api_bundles):
    client.post("/v1/judgments", json=request_for(api_bundles[2]), headers=bearer(live_key))
    table = client.get("/v1/coefficients", headers=bearer(live_key)).json()
    assert table["min_n"] == 40
    assert table["query"] == {"policy": None, "body": None, "task_family": None, "tier": None,
                              "judge_version": None}
    narrow = client.get("/v1/coefficients?tier=A&judge_version=fake-v1",
                        headers=bearer(live_key)).json()
    assert narrow["query"] == {**table["query"], "tier": "A", "judge_version": "fake-v1"}
    assert narrow["data"] == table["data"]
    (cell,) = table["data"]
    assert (cell["n"], cell["status"], cell["success_rate"]) == (1, "insufficient", None)
    assert cell["judge_version"] == "fake-v1"


def test_rejudge_writes_new_rows_and_costs_nothing(tmp_path, api_bundles):
    from fastapi.testclient import TestClient

    from judge.api.service import JudgeService

    svc = JudgeService(f"sqlite:///{tmp_path / 'r.db'}", judges=fake_judges(
        **{"fake-v2": lambda: fake_judge("fake-v2", {"attempt": 0.9, "success": 0.9})}),
        bundle_roots=TMP_ROOTS)
    key = svc.create_key("r", "live", ["judgments:write", "rejudge:write", "rejudge:read",
                                       "usage:read"])[0]
    try:
        with TestClient(create_app(svc)) as c:
            for b in api_bundles[:2]:
                assert c.post("/v1/judgments", json=request_for(b),
                              headers=bearer(key)).status_code == 200
            r = c.post("/v1/rejudge-jobs", json={"judge": "fake-v2"}, headers=bearer(key))
            assert r.status_code == 202 and r.headers["location"].startswith("/v1/rejudge-jobs/")
            for _ in range(200):
                job = c.get(r.headers["location"], headers=bearer(key)).json()
                if job["status"] == "succeeded":
                    break
                time.sleep(0.05)
            assert (job["runs"], job["judged"], job["failed"]) == (2, 2, [])
            assert c.get("/v1/usage", headers=bearer(key)).json()["calls"] == 2
            unknown = c.post("/v1/rejudge-jobs", json={"judge": "fake-v2", "run_ids": ["zz"]},
                             headers=bearer(key))
            assert unknown.status_code == 422
    finally:
        svc.close()
    assert counts(svc)["judgments"] == 4
    assert svc.modes["live"].ledger.owned_by(
        svc.list_keys()[0]["key_id"]).judge_versions() == ["fake-v1", "fake-v2"]


def test_usage_lines_page_through_every_charge(client, live_key, api_bundles):
    for b in api_bundles:
        assert client.post("/v1/judgments", json=request_for(b),
                           headers=bearer(live_key)).status_code == 200
    first = client.get("/v1/usage?limit=2", headers=bearer(live_key)).json()
    totals = {k: first[k] for k in ("calls", "amount_cents", "amount_usd")}
    assert totals == {"calls": 3, "amount_cents": 180, "amount_usd": "1.80"}
    assert [x["judgment_id"] for x in first["lines"]] == ["jd_1", "jd_2"]
    assert first["next_cursor"] == "us_2"
    from judge.api.auth import RIGHTS

    assert all(x["amount_cents"] == 60 and x["rights_granted"] == sorted(RIGHTS)
               and x["recorded_at"].endswith("Z") for x in first["lines"])
    rest = client.get("/v1/usage?limit=2&cursor=us_2", headers=bearer(live_key)).json()
    assert [x["judgment_id"] for x in rest["lines"]] == ["jd_3"] and rest["next_cursor"] is None
    assert {k: rest[k] for k in totals} == totals  # the totals cover every charge, each page
    assert sum(x["amount_cents"] for x in first["lines"] + rest["lines"]) == 180
    bad = client.get("/v1/usage?cursor=jd_1", headers=bearer(live_key))
    assert bad.status_code == 422 and bad.json()["invalid_params"] == [
        {"name": "cursor", "reason": "cursor 'jd_1': not a usage cursor (us_<n>)"}]


def test_a_422_names_the_parameters_at_fault(client, live_key, api_bundles):
    r = client.get("/v1/judgments?limit=0", headers=bearer(live_key))
    assert r.status_code == 422
    assert r.headers["content-type"] == "application/problem+json"
    assert r.json()["invalid_params"] == [
        {"name": "limit", "reason": "Input should be greater than or equal to 1"}]
    j = client.post("/v1/judgments", json=request_for(api_bundles[0]), headers=bearer(live_key))
    run_id = j.json()["run_id"]
    r = client.post(f"/v1/runs/{run_id}/labels", headers=bearer(live_key),
                    json={"attempt": "maybe", "success": True, "labeled_by": ""})
    assert r.status_code == 422
    assert [p["name"] for p in r.json()["invalid_params"]] == ["attempt", "labeled_by"]
    r = client.post(f"/v1/runs/{run_id}/labels", headers=bearer(live_key),
                    json={"attempt": True, "success": True, "labeled_by": "op",
                          "failure_class": "grasp.x"})
    assert r.json()["invalid_params"] == [{"name": "failure_class", "reason": (
        "'grasp.x' given for a successful run; expected empty when success is true")}]
    # a 422 about no single parameter still carries the (empty) list
    doc = request_for(api_bundles[1])
    doc["bundle_uri"] = "/nowhere/at/all"
    r = client.post("/v1/judgments", json=doc, headers=bearer(live_key))
    assert r.status_code == 422 and r.json()["invalid_params"] == []


def test_the_sequence_outcome_contract_has_its_own_schema():
    from judge.api.outcomes import openapi as outcomes_openapi
    from judge.api.routes import create_app

    class NoService:
        pass

    app = create_app(NoService())
    spec = outcomes_openapi(app)
    ops = sorted((m.upper(), p) for p, d in spec["paths"].items() for m in d)
    # 7 of the contract, the Avala SDK's 2 reads (one dataset, one sequence), 4 webhook
    assert spec["openapi"] == "3.1.0" and len(ops) == 13
    assert [o for o in ops if "webhook-endpoints" in o[1]] == [
        ("DELETE", "/api/v1/webhook-endpoints/{endpoint_id}/"),
        ("GET", "/api/v1/webhook-endpoints/"),
        ("GET", "/api/v1/webhook-endpoints/{endpoint_id}/deliveries/"),
        ("POST", "/api/v1/webhook-endpoints/")]
    assert list(spec["webhooks"]) == ["acceptance.quality_target_crossed"]
    body = spec["webhooks"]["acceptance.quality_target_crossed"]["post"]["requestBody"]
    assert body["content"]["application/json"]["schema"] == {
        "$ref": "#/components/schemas/QualityTargetCrossedEvent"}
    assert all(p.startswith("/api/v1/") for _, p in ops)
    assert not any(p.startswith("/api/v1/") for p in app.openapi()["paths"])
