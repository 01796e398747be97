"""``POST /v1/runs/{run_id}/labels`` checks a label as ``rcjudge labels import`` does.

One validation (:func:`judge.ledgers.labels.parse_row`): an unknown class and a success
without an attempt are refused with the field named, nothing written.
"""

from __future__ import annotations

from tests.api.conftest import bearer, request_for


def _run(client, key, bundle) -> str:
    r = client.post("/v1/judgments", json=request_for(bundle), headers=bearer(key))
    assert r.status_code == 200
    return r.json()["run_id"]


def test_success_without_attempt_is_refused_naming_success(client, live_key, api_bundles):
    run_id = _run(client, live_key, api_bundles[0])
    r = client.post(f"/v1/runs/{run_id}/labels", headers=bearer(live_key),
                    json={"attempt": False, "success": True, "labeled_by": "op",
                          "labeled_at": "2026-12-01T10:00:00Z"})
    assert r.status_code == 422
    reason = ("true with attempt false; a run that was not attempted cannot succeed "
              "(expected success false when attempt is false)")
    assert r.json()["invalid_params"] == [{"name": "success", "reason": reason}]
    assert r.json()["detail"] == f"success: {reason}"
    assert client.get(f"/v1/runs/{run_id}/labels",
                      headers=bearer(live_key)).json() == {"data": []}


def test_unknown_class_is_refused_as_labels_import_refuses_it(client, live_key, api_bundles):
    run_id = _run(client, live_key, api_bundles[0])
    r = client.post(f"/v1/runs/{run_id}/labels", headers=bearer(live_key),
                    json={"attempt": True, "success": False, "labeled_by": "op",
                          "failure_class": "grasp.x"})
    assert r.status_code == 422
    [param] = r.json()["invalid_params"]
    assert param["name"] == "failure_class"
    assert param["reason"].startswith("'grasp.x' is not a class of the taxonomy; the grasp "
                                      "classes are grasp.miss, grasp.slip, ")
    assert client.get(f"/v1/runs/{run_id}/labels",
                      headers=bearer(live_key)).json() == {"data": []}
