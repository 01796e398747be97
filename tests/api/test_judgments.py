"""POST /v1/judgments: the spec's answer, attribution errors, idempotency, metering, async."""

from __future__ import annotations

import copy
import time
from datetime import timedelta

import sqlalchemy as sa

from judge.api import tables as T
from judge.api.bundle_roots import REFUSED
from tests.api.conftest import bearer, counts, request_for


def post(client, key, doc, idem=None, **headers):
    h = {**bearer(key), **headers}
    if idem:
        h["Idempotency-Key"] = idem
    return client.post("/v1/judgments", json=doc, headers=h)


def test_answer_has_the_spec_fields(client, service, live_key, api_bundles):
    r = post(client, live_key, request_for(api_bundles[0]), "8f2a41-01")
    assert r.status_code == 200 and r.headers["content-type"] == "application/json"
    key_id = service.list_keys()[0]["key_id"]
    # three fake models: P(attempt)=0.9, P(success)=0.2, class grasp.slip (counts)
    assert r.json() == {
        # the folder name and the key's id: a run is its owner's (issue 36)
        "judgment_id": "jd_1", "run_id": f"synth-0011-0000~{key_id}", "attempt": True,
        "success": False,
        "failure_class": "grasp.slip", "counts_against_policy": True,
        "attempt_confidence": 0.9, "success_confidence": 0.8,
        "charged_to": {"rcsn": None, "cell_id": None, "key_id": key_id},
        "judge_version": "fake-v1", "table_row_id": "cf_1"}
    assert r.headers["idempotency-key"] == "8f2a41-01"


def test_every_missing_attribution_field_is_named(client, service, live_key, api_bundles):
    doc = request_for(api_bundles[0])
    del doc["body"]["dof"]
    doc["task"]["tier"] = ""
    doc["policy"]["checkpoint"] = None
    r = post(client, live_key, doc, "m1")
    assert r.status_code == 422
    assert r.json() == {
        "type": "about:blank", "title": "Unprocessable Entity", "status": 422,
        "detail": "request: missing 3 required attribution field(s): policy.checkpoint, "
                  "body.dof, task.tier",
        "instance": "/v1/judgments",
        "missing": ["policy.checkpoint", "body.dof", "task.tier"],
        "invalid_params": [{"name": "policy.checkpoint", "reason": "missing"},
                           {"name": "body.dof", "reason": "missing"},
                           {"name": "task.tier", "reason": "missing"}]}
    assert service.usage(service.authenticate(f"Bearer {live_key}"))["calls"] == 0


def test_no_attribution_at_all_names_all_eleven(client, live_key, api_bundles):
    r = post(client, live_key, {"bundle_uri": api_bundles[0], "judge": "fake-v1"})
    assert r.status_code == 422
    assert r.json()["missing"] == [
        "policy.vendor", "policy.name", "policy.version", "policy.checkpoint", "body.arm",
        "body.hand", "body.dof", "body.mount_h_mm", "body.calibrated_at", "task.id",
        "task.tier"]


def test_bad_bundle_and_unknown_judge_are_422_and_free(client, service, live_key, api_bundles,
                                                       tmp_path):
    doc = request_for(api_bundles[0])
    doc["bundle_uri"] = str(tmp_path / "nowhere")
    r = post(client, live_key, doc, "b1")
    assert (r.status_code, r.json()["detail"]) == (422, REFUSED)  # no existence oracle
    doc = request_for(api_bundles[0], judge="rc-judge-v9")
    r = post(client, live_key, doc, "b2")
    assert r.status_code == 422
    assert r.json()["detail"] == "judge: unknown judge version 'rc-judge-v9'; known: fake-v1"
    usage = client.get("/v1/usage", headers=bearer(live_key)).json()
    assert (usage["calls"], usage["amount_usd"]) == (0, "0.00")
    # an error releases the idempotency key: the same key works once the request is fixed
    assert post(client, live_key, request_for(api_bundles[0]), "b2").status_code == 200


def test_replay_is_byte_for_byte_one_judgment_one_charge(client, service, live_key,
                                                          api_bundles):
    doc = request_for(api_bundles[1])
    first = post(client, live_key, doc, "k-1")
    again = post(client, live_key, copy.deepcopy(doc), "k-1")
    assert first.status_code == again.status_code == 200
    assert again.content == first.content
    assert again.headers["idempotent-replayed"] == "true"
    assert "idempotent-replayed" not in first.headers
    assert counts(service)["judgments"] == 1
    usage = client.get("/v1/usage", headers=bearer(live_key)).json()
    assert (usage["calls"], usage["amount_cents"], usage["amount_usd"]) == (1, 60, "0.60")


def test_same_key_other_body_is_422(client, live_key, api_bundles):
    assert post(client, live_key, request_for(api_bundles[0]), "k-2").status_code == 200
    r = post(client, live_key, request_for(api_bundles[1]), "k-2")
    assert r.status_code == 422
    assert r.json()["detail"] == ("Idempotency-Key 'k-2' was used with another request body; "
                                  "use a new key for a new request")
    assert r.json()["invalid_params"] == [{"name": "Idempotency-Key", "reason": r.json()[
        "detail"]}]


def test_keys_are_scoped_per_api_key_and_kept_24h(client, service, api_bundles):
    from judge.api.auth import RIGHTS

    a = service.create_key("a", "live", sorted(RIGHTS))[0]
    b = service.create_key("b", "live", sorted(RIGHTS))[0]
    ra = post(client, a, request_for(api_bundles[0]), "shared")
    rb = post(client, b, request_for(api_bundles[1]), "shared")
    assert ra.status_code == rb.status_code == 200
    assert ra.json()["charged_to"]["key_id"] != rb.json()["charged_to"]["key_id"]
    with service.modes["live"].engine.connect() as conn:
        spans = conn.execute(sa.select(T.idempotency.c.created_at,
                                       T.idempotency.c.expires_at)).all()
    assert [e - c for c, e in spans] == [timedelta(hours=24)] * 2


def test_expired_key_judges_anew(client, service, live_key, api_bundles):
    assert post(client, live_key, request_for(api_bundles[0]), "old").status_code == 200
    with service.modes["live"].write() as conn, conn.begin():
        conn.execute(sa.update(T.idempotency).values(
            expires_at=sa.func.datetime("now", "-1 second")))
    r = post(client, live_key, request_for(api_bundles[1]), "old")  # another body: no 422
    assert r.status_code == 200 and r.json()["run_id"].startswith("synth-0011-0001~key_")


def test_judging_the_same_run_again_returns_it_uncharged(client, live_key, api_bundles):
    first = post(client, live_key, request_for(api_bundles[2]), "r-1").json()
    second = post(client, live_key, request_for(api_bundles[2]), "r-2").json()
    assert second == {**first, "charged_to": None}
    assert client.get("/v1/usage", headers=bearer(live_key)).json()["calls"] == 1


def test_respond_async_gives_202_and_a_job(client, service, live_key, api_bundles):
    r = post(client, live_key, request_for(api_bundles[0]), "async-1",
             Prefer="respond-async")
    assert r.status_code == 202
    assert r.headers["preference-applied"] == "respond-async"
    job = r.json()
    assert r.headers["location"] == f"/v1/jobs/{job['job_id']}"
    assert job["status"] in ("queued", "running") and job["result"] is None
    for _ in range(200):
        job = client.get(r.headers["location"], headers=bearer(live_key)).json()
        if job["status"] in ("succeeded", "failed"):
            break
        time.sleep(0.05)
    assert job["status"] == "succeeded"
    assert job["result"]["error"] is None
    assert job["result"]["judgment"]["judgment_id"] == "jd_1"
    assert job["result"]["judgment"]["failure_class"] == "grasp.slip"
    replay = post(client, live_key, request_for(api_bundles[0]), "async-1",
                  Prefer="respond-async")
    assert (replay.status_code, replay.content) == (202, r.content)
    assert client.get("/v1/usage", headers=bearer(live_key)).json()["calls"] == 1


def test_errors_name_no_tier_b_task_and_no_server_path(client, live_key, api_bundles):
    from judge.config import configs_dir

    doc = request_for(api_bundles[0])
    doc["task"] = {"id": "tabletop.pick_place.secret_999", "tier": "B"}
    r = post(client, live_key, doc, "tb-1")
    assert r.status_code == 422
    assert r.json()["detail"] == ("task '<tier-B task>' is not in the task catalog; add its "
                                  "instruction: rcjudge tasks add <tier-B task> "
                                  "\"<instruction>\"")
    assert "secret_999" not in r.text and str(configs_dir()) not in r.text
    doc["task"]["tier"] = "A"  # a tier-A task id is the caller's own and public: named
    r = post(client, live_key, doc, "ta-1")
    assert "tabletop.pick_place.secret_999" in r.json()["detail"]


def test_a_claim_abandoned_in_flight_is_taken_over_after_15_minutes(client, service, live_key,
                                                                    api_bundles):
    import hashlib
    from datetime import UTC, datetime

    from judge.api.service import IN_FLIGHT_TIMEOUT, canonical

    caller = service.authenticate(f"Bearer {live_key}")
    doc = request_for(api_bundles[0])
    digest = hashlib.sha256(canonical(doc)).hexdigest()
    assert service._claim(service.modes["live"], caller.key_id, "crash", digest) is None
    assert post(client, live_key, doc, "crash").status_code == 409  # still in flight
    with service.modes["live"].write() as conn, conn.begin():
        conn.execute(sa.update(T.idempotency).values(
            created_at=datetime.now(UTC) - IN_FLIGHT_TIMEOUT - timedelta(seconds=1)))
    assert post(client, live_key, doc, "crash").status_code == 200
