"""Issue 29 item 7: protocol gaps: Allow lists every method, header errors name the header,
duplicate JSON keys and NUL refused."""

from __future__ import annotations

from tests.api.conftest import bearer


def test_allow_lists_every_method_of_the_path_on_405_and_options(client, live_key):
    path = "/api/v1/datasets/lab/kitchen/sequences/seq_x/outcome/"
    r = client.patch(path, json={}, headers=bearer(live_key))
    assert (r.status_code, r.headers["allow"]) == (405, "GET, OPTIONS, PUT")
    r = client.options(path)
    assert (r.status_code, r.headers["allow"]) == (204, "GET, OPTIONS, PUT")
    r = client.delete("/api/v1/datasets/", headers=bearer(live_key))
    assert (r.status_code, r.headers["allow"]) == (405, "GET, OPTIONS, POST")


def test_duplicate_keys_and_nul_are_refused(client, live_key):
    h = {**bearer(live_key), "Content-Type": "application/json"}
    r = client.post("/api/v1/datasets/", content=b'{"owner": "a", "owner": "b", "slug": "s"}',
                    headers=h)
    assert (r.status_code, r.json()["detail"]) == (
        400, "owner: given twice in one object (which one counts is not defined)")
    r = client.post("/api/v1/datasets/", content=b'{"owner": "a\\u0000", "slug": "s"}',
                    headers=h)
    assert (r.status_code, r.json()["detail"]) == (
        422, "owner: contains a NUL character at character 1")


def test_nul_is_refused_naming_the_field_in_invalid_params(client, live_key):
    r = client.post("/api/v1/datasets/", json={"owner": "a", "slug": "s\u0000"},
                    headers=bearer(live_key))
    assert (r.status_code, r.json()["invalid_params"]) == (
        422, [{"name": "slug", "reason": "contains a NUL character at character 1"}])


def test_unknown_or_repeated_query_parameters_are_refused_after_the_key(client, live_key):
    r = client.get("/v1/judgments?limit=5&verbose=1", headers=bearer(live_key))
    assert (r.status_code, r.json()["detail"], r.json()["invalid_params"]) == (
        422, "query parameter 'verbose': unknown here (allowed: cursor, limit)",
        [{"name": "verbose",
          "reason": "query parameter 'verbose': unknown here (allowed: cursor, limit)"}])
    r = client.get("/v1/coefficients?tier=A&tier=B", headers=bearer(live_key))
    assert (r.status_code, r.json()["detail"]) == (
        422, "query parameter 'tier': given more than once")
    r = client.get("/v1/keys/me?x=", headers=bearer(live_key))
    assert (r.status_code, r.json()["detail"]) == (
        422, "query parameter 'x': unknown here (allowed: none)")
    r = client.get("/api/v1/datasets/?page=2", headers=bearer(live_key))
    assert (r.status_code, r.json()["invalid_params"][0]["name"]) == (422, "page")
    # the key first, as for every other parameter
    assert client.get("/v1/judgments?verbose=1").status_code == 401


def test_dof_and_mount_h_mm_are_required_not_nullable_as_intake_enforces(client, live_key):
    spec = client.get("/openapi.json").json()
    body = spec["components"]["schemas"]["JudgmentRequest"]["properties"]["body"]  # inline
    assert "BodyRequest" not in spec["components"]["schemas"]
    assert body["required"] == ["arm", "hand", "calibrated_at", "dof", "mount_h_mm"]
    assert body["properties"]["mount_h_mm"] == {
        "type": "number", "title": "Mount H Mm", "description": "Mount height in millimetres."}
    assert body["additionalProperties"] is False
    doc = {"bundle_uri": "/tmp/none", "policy": {"vendor": "v", "name": "n", "version": "1",
                                                 "checkpoint": "sha256:0"},
           "body": {"arm": "a", "hand": "h", "calibrated_at": "2026-01-01", "dof": 7,
                    "mount_h_mm": None}, "task": {"id": "t.x", "tier": "A"}}
    r = client.post("/v1/judgments", json=doc, headers=bearer(live_key))
    assert (r.status_code, r.json()["missing"]) == (422, ["body.mount_h_mm"])


def _param(op: dict, name: str) -> dict:
    return next(p for p in op["parameters"] if p["name"] == name)["schema"]


def test_the_schemas_declare_the_rules_the_server_checks(client):
    from judge.ensemble.taxonomy import load_taxonomy

    spec = client.get("/openapi.json").json()
    paths, schemas = spec["paths"], spec["components"]["schemas"]
    assert _param(paths["/v1/usage"]["get"], "cursor")["pattern"] == r"^us_[0-9]{1,18}$"
    assert _param(paths["/v1/judgments"]["get"], "cursor")["pattern"] == \
        r"^(jd_[0-9]{1,18})?$"
    assert _param(paths["/v1/judgments"]["post"], "idempotency-key")["pattern"] == \
        r"^[!-~]([ -~]{0,253}[!-~])?$"
    assert schemas["LabelRequest"]["properties"]["failure_class"]["anyOf"] == [
        {"type": "string", "enum": sorted(load_taxonomy().classes)}, {"type": "null"}]
    assert schemas["Policy"]["properties"]["vendor"]["pattern"] == r"^[^\x00]*$"
    assert schemas["Env"]["propertyNames"] == {"pattern": r"^[^\x00]*$"}
    out = client.get("/api/v1/openapi.json").json()
    page = out["paths"]["/api/v1/datasets/{owner}/{slug}/sequence-outcomes/"]["get"]
    assert _param(page, "source")["pattern"] == \
        "^( *(human|model|imported) *(, *(human|model|imported) *)*)?$"
    assert _param(page, "cursor")["pattern"] == r"^((after|before)\.[!-~]{1,200})?$"
    label = out["components"]["schemas"]["SubtaskWrite"]["properties"]["label"]
    assert label["pattern"] == r"^[^\x00]*$"
    put = out["paths"]["/api/v1/datasets/{owner}/{slug}/sequences/{sequence_uid}/outcome/"][
        "put"]["requestBody"]["content"]["application/json"]["schema"]
    assert put["properties"]["source_metadata"]["anyOf"][0]["propertyNames"] == {
        "minLength": 1, "maxLength": 64, "pattern": r"^[^\x00]*$"}
    assert put["properties"]["outcome"]["enum"][:2] == ["expert_success", "slow_success"]


def test_outcome_responses_are_typed_and_answers_match_them(client, service, live_key):
    from judge.api.outcome_protocol import OutcomeHistory, OutcomeLabel, OutcomeLabelPage
    from judge.outcomes.store import OutcomeStore

    spec = client.get("/api/v1/openapi.json").json()
    base = "/api/v1/datasets/{owner}/{slug}"
    for path, method, model in (
            (f"{base}/sequences/{{sequence_uid}}/outcome/", "get", "OutcomeLabel"),
            (f"{base}/sequences/{{sequence_uid}}/outcome/", "put", "OutcomeLabel"),
            (f"{base}/sequences/{{sequence_uid}}/outcome/history/", "get", "OutcomeHistory"),
            (f"{base}/sequence-outcomes/", "get", "OutcomeLabelPage")):
        assert spec["paths"][path][method]["responses"]["200"]["content"] == {
            "application/json": {"schema": {"$ref": f"#/components/schemas/{model}"}}}
    h = bearer(live_key)
    assert client.post("/api/v1/datasets/", json={"owner": "tester", "slug": "k"},
                       headers=h).status_code == 201
    uid = OutcomeStore(service.modes["live"].engine).add_sequence("tester/k", "ab" * 32, "/b/0",
                                                                  length_s=10.0)
    url = f"/api/v1/datasets/tester/k/sequences/{uid}/outcome/"
    put = client.put(url, json={"outcome": "failure", "subtasks": [
        {"label": "reach", "start_ts": 0, "end_ts": 2}], "hand_actions": {"left": [
            {"start_ts": 0, "end_ts": 1, "action": "grasp"}]},
        "source_metadata": {"n": 3, "ok": True}}, headers=h)
    assert put.status_code == 200, put.text
    OutcomeLabel.model_validate(put.json())
    OutcomeLabel.model_validate(client.get(url, headers=h).json())
    assert len(OutcomeHistory.model_validate(client.get(f"{url}history/", headers=h).json())
               .root) == 1
    page = client.get("/api/v1/datasets/tester/k/sequence-outcomes/?cursor=after.seq_0",
                      headers=h).json()
    assert [x.sequence_uid for x in OutcomeLabelPage.model_validate(page).results] == [uid]


def test_creating_an_existing_dataset_is_a_409(client, live_key):
    doc = {"owner": "tester", "slug": "twice"}  # in the key's namespace: its name
    assert client.post("/api/v1/datasets/", json=doc, headers=bearer(live_key)).status_code \
        == 201
    r = client.post("/api/v1/datasets/", json=doc, headers=bearer(live_key))
    assert (r.status_code, r.json()["detail"]) == (409, "dataset tester/twice: already exists")


def test_a_labeled_at_its_offset_moves_out_of_range_is_a_422_not_a_500(client, live_key):
    doc = {"attempt": True, "success": False, "labeled_by": "op",
           "labeled_at": "0001-01-01T00:00:00+23:59"}
    r = client.post("/v1/runs/run_x/labels", json=doc, headers=bearer(live_key))
    assert (r.status_code, r.json()["invalid_params"]) == (422, [{
        "name": "labeled_at",
        "reason": "'0001-01-01T00:00:00+23:59' is outside years 1-9999 in UTC"}])
    spec = client.get("/openapi.json").json()
    assert spec["components"]["schemas"]["LabelRequest"]["properties"]["labeled_at"][
        "format"] == "date-time"
