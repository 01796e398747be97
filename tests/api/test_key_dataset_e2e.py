"""A key configured with a dataset: judgments through ``POST /v1/judgments`` land as model
labels, over real HTTP with real bundles and the tiny models (CPU)."""

from __future__ import annotations

import json
import time

import httpx
import pytest
import sqlalchemy as sa

from judge.api.routes import create_app
from judge.api.server import running
from judge.api.service import JudgeService
from judge.ledgers import schema as S
from judge.outcomes.mapping import expert_times
from judge.outcomes.store import OutcomeStore, sequence_uid
from rcjudge.cli import main
from tests.api.conftest import TMP_ROOTS, request_for

RIGHTS = "judgments:write,judgments:read,datasets:read,datasets:write"


def mapped(j, doc, label):
    """The outcome the mapping table (docs/outcomes.md) gives this judgment."""
    expert = expert_times().get(doc["task"]["id"])
    if not j["attempt"]:
        return "aborted"
    if not j["success"]:
        return "failure"
    slow = expert is not None and label["source_metadata"]["cycle_sec"] > expert
    return "slow_success" if slow else "expert_success"


def runs_count(service):
    with service.modes["live"].engine.connect() as conn:
        return conn.execute(sa.select(sa.func.count()).select_from(S.runs)).scalar()


def create_key(db, capsys, *extra):
    capsys.readouterr()
    code = main(["keys", "create", "--name", "robot", "--rights", RIGHTS, *extra, "--db", db,
                 "--json"])
    out = capsys.readouterr()
    return code, (json.loads(out.out) if code == 0 else out.err)


@pytest.fixture
def served(tiny_models, tmp_path):
    db = f"sqlite:///{tmp_path / 'api.db'}"
    assert main(["datasets", "create", "lab/api", "--db", db]) == 0
    service = JudgeService(db, bundle_roots=TMP_ROOTS)
    try:
        with running(create_app(service)) as base:
            yield db, service, base
    finally:
        service.close()


def test_key_dataset_refusals_name_the_flag(served, capsys):
    db, _, _ = served
    assert create_key(db, capsys, "--dataset", "lab/none") == (
        2, "rcjudge: error: --dataset: dataset lab/none: not found (in the live-mode "
        "database)\n")
    assert create_key(db, capsys, "--dataset", "lab") == (
        2, "rcjudge: error: --dataset: dataset 'lab': slug '' must be 1-100 letters, digits, "
        "'.', '_' or '-', starting with a letter or digit (owner/slug)\n")
    capsys.readouterr()
    assert main(["keys", "create", "--name", "r", "--rights", "judgments:write",
                 "--dataset", "lab/api", "--db", db]) == 2
    assert capsys.readouterr().err == ("rcjudge: error: --dataset: a key that labels into "
                                       "dataset lab/api needs the right datasets:write\n")
    assert main(["keys", "list", "--db", db, "--json"]) == 0
    assert json.loads(capsys.readouterr().out) == []  # nothing half-created


def test_judgments_through_a_dataset_key_are_labelled_once(served, make_bundles, capsys):
    db, service, base = served
    bundles = [str(b) for b in make_bundles(2, seed=41, width=96, height=64, fps=10)]
    code, made = create_key(db, capsys, "--dataset", "lab/api")
    assert code == 0 and made["dataset"] == "lab/api"
    assert main(["keys", "list", "--db", db, "--json"]) == 0
    assert json.loads(capsys.readouterr().out)[0]["dataset"] == "lab/api"
    h = {"Authorization": f"Bearer {made['key']}"}
    seq = f"{base}/api/v1/datasets/lab/api/sequences"
    with httpx.Client(timeout=300) as http:
        doc = request_for(bundles[0], judge="tiny")
        r = http.post(f"{base}/v1/judgments", json=doc, headers={**h, "Idempotency-Key": "k1"})
        assert r.status_code == 200, r.text
        j = r.json()
        uid = sequence_uid(json.loads(open(f"{bundles[0]}/manifest.json").read())["bundle_hash"])
        label = http.get(f"{seq}/{uid}/outcome/", headers=h).json()
        assert (label["version"], label["source"], label["labeled_by"], label["autonomy_level"],
                label["model_version"], label["confidence"]) == (
            1, "model", "judge:tiny", "autonomous",
            f"{doc['policy']['name']}@{doc['policy']['version']}", j["success_confidence"])
        assert label["outcome"] == mapped(j, doc, label)
        assert label["mistake_type"] == ("" if j["success"] else j["failure_class"] or "")
        assert (label["source_metadata"]["run_id"], label["source_metadata"]["judge_version"],
                label["source_metadata"]["attempt_confidence"]) == (
            j["run_id"], "tiny", j["attempt_confidence"])
        # a replay and a resubmission of the same run: no new version
        replay = http.post(f"{base}/v1/judgments", json=doc,
                           headers={**h, "Idempotency-Key": "k1"})
        assert replay.headers["Idempotent-Replayed"] == "true" and replay.content == r.content
        again = http.post(f"{base}/v1/judgments", json=doc, headers=h)
        assert again.status_code == 200 and again.json()["charged_to"] is None
        assert [v["version"] for v in http.get(f"{seq}/{uid}/outcome/history/",
                                               headers=h).json()] == [1]
        # a person's version is never overruled by the same judgment again
        assert http.put(f"{seq}/{uid}/outcome/", headers=h, json={
            "outcome": "mistake_and_recovery"}).status_code == 200
        http.post(f"{base}/v1/judgments", json=doc, headers=h)
        hist = http.get(f"{seq}/{uid}/outcome/history/", headers=h).json()
        assert [(v["version"], v["source"], v["outcome"]) for v in hist] == [
            (2, "human", "mistake_and_recovery"), (1, "model", label["outcome"])]

        # the asynchronous path labels too
        doc2 = request_for(bundles[1], judge="tiny")
        job = http.post(f"{base}/v1/judgments", json=doc2,
                        headers={**h, "Prefer": "respond-async"}).json()
        deadline = time.monotonic() + 300
        while (job := http.get(f"{base}/v1/jobs/{job['job_id']}", headers=h).json())[
                "status"] not in ("succeeded", "failed") and time.monotonic() < deadline:
            time.sleep(0.2)
        assert job["status"] == "succeeded", job
        uid2 = sequence_uid(json.loads(open(f"{bundles[1]}/manifest.json").read())[
            "bundle_hash"])
        label2 = http.get(f"{seq}/{uid2}/outcome/", headers=h).json()
        assert (label2["source"], label2["source_metadata"]["run_id"], label2["outcome"]) == (
            "model", job["result"]["judgment"]["run_id"],
            mapped(job["result"]["judgment"], doc2, label2))
        listed = http.get(f"{seq}/", headers=h).json()["results"]
        assert sorted((x["uid"], x["outcome"], x["outcome_version"]) for x in listed) \
            == sorted([(uid, "mistake_and_recovery", 2), (uid2, label2["outcome"], 1)])

        # a tier-B run is refused by such a key, before anything is judged
        tier_b = {**doc2, "task": {**doc2["task"], "tier": "B"}}
        r = http.post(f"{base}/v1/judgments", json=tier_b, headers=h)
        assert (r.status_code, r.json()["detail"]) == (422, (
            f"task.tier: key {made['key_id']} puts every judged run into dataset lab/api; "
            "tier-B runs stay out of datasets (use a key without a dataset)"))
        # edit taken away: 403 before judging, nothing written
        OutcomeStore(service.modes["live"].engine).grant("lab/api", made["key_id"], "read")
        before = runs_count(service)
        r = http.post(f"{base}/v1/judgments", json=request_for(bundles[0], judge="tiny"),
                      headers={**h, "Idempotency-Key": "k2"})
        assert (r.status_code, r.json()["detail"]) == (403, (
            f"key {made['key_id']} labels into its dataset lab/api, which it may not edit now "
            "(dataset lab/api: this key may read it but not edit it)"))
        assert runs_count(service) == before == 2
