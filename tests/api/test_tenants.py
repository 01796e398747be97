"""Issue 36 items 1: owners apart. A run is reached through its owner, never its bundle.

Four owners (keys A, B, C, D); A and B judge the same bundle (same path, same bytes, same
attribution). Every owner judges (sync and async), labels, labels through the review page,
re-judges, and — A and B through keys with a dataset — has its runs put into a dataset
with model labels. Then every owner attacks every other: it sends the other's bundle path
with its own attribution, writes labels and review labels on the other's runs, undoes the
other's review label, re-judges the other's runs, reads the other's runs, judgments, jobs,
re-judge jobs, labels, calibration rows, review cards, dataset, sequences, outcome and
history. Checked on SQLite and PostgreSQL:

* no answer to an owner holds any field of another owner's runs, judgments, jobs, labels
  or calibration rows (ids, the attribution markers only that owner sent, labellers,
  key ids: every run id carries its owner's key id);
* no row of another owner changes (the runs, judgments, labels, review rows, jobs,
  usage, ownership, coefficients rows and dataset rows of each victim are snapshotted
  before and after each attacker's round), and every victim's own answers stay the same.
"""

from __future__ import annotations

import json
import time
from typing import Any

import pytest
import sqlalchemy as sa
from fastapi.testclient import TestClient

from judge.api import tables as T
from judge.api.auth import RIGHTS
from judge.api.routes import create_app
from judge.api.service import JudgeService
from judge.ledgers import schema as S
from judge.outcomes.store import OutcomeStore
from judge.review.routes import KeyDesk, add_review
from tests.api.conftest import TMP_ROOTS, bearer, fake_judge, fake_judges, request_for

OWNERS = "ABCD"
LABEL = {"attempt": True, "success": True, "failure_class": None,
         "labeled_at": "2026-12-01T10:00:00Z"}  # the judge said failure: a disagreement


def load_version(name: str):
    from judge.ensemble.version import load_judge_version

    return fake_judge(name).version if name in ("fake-v1", "fake-v2") \
        else load_judge_version(name)


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def served(request, tmp_path):
    """(service, client) on SQLite and on PostgreSQL, with the review page of the keys."""
    if request.param == "sqlite":
        url, test_schema = f"sqlite:///{tmp_path / 'api.db'}", "rcjudge_test"
    else:
        url, test_schema = request.getfixturevalue("pg_db")
    service = JudgeService(url, judges=fake_judges(**{"fake-v2": lambda: fake_judge("fake-v2")}),
                           test_schema=test_schema, bundle_roots=TMP_ROOTS)
    app = create_app(service)
    add_review(app, KeyDesk(service, load_version))
    with TestClient(app, raise_server_exceptions=False) as client:
        yield service, client
    service.close()


def doc_for(bundle: str, owner: str | None, i: int = 0) -> dict:
    """A judgment request: the bundle's own attribution (``owner`` None), or the owner's
    markers in the fields only that owner sends (checkpoint and seed)."""
    doc = request_for(bundle)
    if owner is not None:
        doc["policy"]["checkpoint"] = f"ckpt-owner{owner}-{i}"
        doc["seed"] = queue_seed(doc["task"]["id"], f"seed-owner{owner}-{i}")
    return doc


def queue_seed(task_id: str, base: str) -> str:
    """``base-k`` for the first k whose seed group ``rcjudge train`` keeps out of its test
    part (the review queue never offers a test run)."""
    from judge.learn.train import TrainConfig, assign_part, seed_group

    return next(f"{base}-{k}" for k in range(100)
                if assign_part(seed_group(task_id, f"{base}-{k}", ""), 0, TrainConfig()) != "test")


def wait(client, url: str, key: str, done: tuple[str, ...] = ("succeeded", "failed")) -> dict:
    for _ in range(400):
        got = client.get(url, headers=bearer(key)).json()
        if got.get("status") in done:
            return got
        time.sleep(0.05)
    raise AssertionError(f"{url}: not finished")


class Owner:
    """One owner's key, bundles and everything its calls returned."""

    def __init__(self, name: str, key: str, key_id: str, bundles: list[str]) -> None:
        self.name, self.key, self.key_id, self.bundles = name, key, key_id, bundles
        self.runs: list[str] = []
        self.judgments: list[str] = []
        self.labels: list[int] = []
        self.jobs: list[str] = []
        self.dataset: str | None = None
        self.sequences: list[str] = []

    @property
    def h(self) -> dict[str, str]:
        return bearer(self.key)

    def markers(self) -> list[str]:
        """Strings only this owner sent or was given (every run id holds its key id)."""
        return [f"ckpt-owner{self.name}", f"seed-owner{self.name}", f"labeller-{self.name}",
                f"owner-{self.name}", self.key_id]

    def ids(self) -> set[str]:
        """The ids of its runs, judgments and jobs (compared whole)."""
        return {*self.runs, *self.judgments, *self.jobs}


def setup_owners(service, client, make_bundles) -> dict[str, Owner]:
    store = OutcomeStore(service.modes["live"].engine)
    bundles = [str(p) for p in make_bundles(7, seed=61, width=96, height=64, fps=10)]
    shared = bundles[0]
    own = {"A": [shared, bundles[1]], "B": [shared, bundles[2]], "C": bundles[3:5],
           "D": bundles[5:7]}
    owners = {}
    for o in OWNERS:
        dataset = None
        if o in "AB":  # their judged runs go into their own dataset (docs/outcomes.md)
            dataset = f"owner-{o}/runs"
            store.create_dataset(dataset)
        key, who = service.create_key(f"owner-{o}", "live", sorted(RIGHTS), dataset)
        owners[o] = Owner(o, key, who.key_id, own[o])
        owners[o].dataset = dataset
    for o in OWNERS:
        me = owners[o]
        first, second = me.bundles
        # the shared bundle with its own attribution (A and B send the same), else markers
        r = client.post("/v1/judgments", headers=me.h,
                        json=doc_for(first, None if first == shared else o, 0))
        assert r.status_code == 200, r.text
        me.runs.append(r.json()["run_id"])
        me.judgments.append(r.json()["judgment_id"])
        r = client.post("/v1/judgments", json=doc_for(second, o, 1),
                        headers={**me.h, "Prefer": "respond-async"})
        assert r.status_code == 202, r.text
        me.jobs.append(r.json()["job_id"])
        job = wait(client, r.headers["location"], me.key)
        assert job["status"] == "succeeded", job
        me.runs.append(job["result"]["judgment"]["run_id"])
        me.judgments.append(job["result"]["judgment"]["judgment_id"])
        r = client.post(f"/v1/runs/{me.runs[0]}/labels", headers=me.h,
                        json={**LABEL, "labeled_by": f"labeller-{o}"})
        assert r.status_code == 201, r.text
        me.labels.append(r.json()["label_id"])
        card = client.post("/review/api/next", headers=me.h,
                           json={"judge_version": "fake-v1"}).json()["card"]
        assert card is not None and card["run_id"] == me.runs[1], card
        r = client.post("/review/api/labels", headers=me.h, json={
            "run_id": me.runs[1], "judge_version": "fake-v1", "pick": card["pick"],
            "attempt": True, "success": False, "failure_class": "grasp.miss"})
        assert r.status_code == 201, r.text
        me.labels.append(r.json()["label_id"])
        r = client.post("/v1/rejudge-jobs", headers=me.h, json={"judge": "fake-v2"})
        assert r.status_code == 202, r.text
        me.jobs.append(r.json()["job_id"])
        assert wait(client, r.headers["location"], me.key)["judged"] == 2
        if me.dataset:
            page = client.get(f"/api/v1/datasets/{me.dataset}/sequences/", headers=me.h)
            me.sequences = [s["uid"] for s in page.json()["results"]]
            assert len(me.sequences) == 2
    return owners


def rows_of(service: JudgeService, y: Owner) -> dict[str, list]:
    """Every row that is the owner's, read as the database's owner would."""
    r, j, lab, rv = S.runs, S.judgments, S.operator_labels, S.review_labels
    jids = [int(x.removeprefix("jd_")) for x in y.judgments]

    def rows(conn, stmt) -> list:
        return sorted(json.dumps(dict(x._mapping), default=str, sort_keys=True)
                      for x in conn.execute(stmt))

    with service.modes["live"].engine.connect() as conn:
        out = {
            "runs": rows(conn, sa.select(r).where(r.c.run_id.in_(y.runs))),
            "judgments": rows(conn, sa.select(j).where(j.c.run_id.in_(y.runs))),
            "labels": rows(conn, sa.select(lab).where(lab.c.run_id.in_(y.runs))),
            "review": rows(conn, sa.select(rv).join(lab, lab.c.label_id == rv.c.label_id)
                           .where(lab.c.run_id.in_(y.runs))),
            "jobs": rows(conn, sa.select(T.jobs).where(T.jobs.c.key_id == y.key_id)),
            "usage": rows(conn, sa.select(T.usage).where(T.usage.c.key_id == y.key_id)),
            "owned": rows(conn, sa.select(T.owned).where(T.owned.c.key_id == y.key_id)),
            "coefficients": rows(conn, sa.select(T.coefficients).where(
                T.coefficients.c.judgment_id.in_(jids))),
        }
        if y.dataset:
            d = S.datasets
            ds = conn.execute(sa.select(d.c.dataset_id).where(
                (d.c.owner + "/" + d.c.slug) == y.dataset)).scalar_one()
            for t in (S.sequences, S.sequence_outcomes, S.dataset_grants):
                out[t.name] = rows(conn, sa.select(t).where(t.c.dataset_id == ds))
    return out


def answers_of(client, y: Owner) -> dict[str, Any]:
    """What the owner itself reads of its runs."""
    out = {p: client.get(p, headers=y.h).json() for p in (
        "/v1/runs", "/v1/judgments", "/v1/calibration-set", "/v1/usage")}
    for run in y.runs:
        out[run] = client.get(f"/v1/runs/{run}/labels", headers=y.h).json()
    if y.dataset:
        for uid in y.sequences:
            base = f"/api/v1/datasets/{y.dataset}/sequences/{uid}/outcome/"
            out[uid] = [client.get(base, headers=y.h).json(),
                        client.get(f"{base}history/", headers=y.h).json()]
    return out


def leaves(doc: Any, key: str = "") -> list[tuple[str, Any]]:
    """Every (member name, value) leaf of a JSON document."""
    if isinstance(doc, dict):
        return [leaf for k, v in doc.items() for leaf in leaves(v, k)]
    if isinstance(doc, list):
        return [leaf for v in doc for leaf in leaves(v, key)]
    return [(key, doc)]


def attack(client, x: Owner, y: Owner) -> list[tuple[str, int, Any, str]]:
    """Everything ``x`` tries on ``y``'s runs: (what, status, answer, what x sent) of each
    call."""
    got: list[tuple[str, int, Any, str]] = []

    def call(method: str, path: str, **kw) -> None:
        r = client.request(method, path, headers=x.h, **kw)
        got.append((f"{method} {path}", r.status_code,
                    r.json() if r.content and r.headers["content-type"].endswith("json")
                    else r.text, path + json.dumps(kw.get("json"))))

    # the victim's bundle path with the attacker's own attribution: its own run, charged
    call("POST", "/v1/judgments", json=doc_for(y.bundles[1], x.name, 7))
    for run in y.runs:
        call("GET", f"/v1/runs/{run}")
        call("GET", f"/v1/runs/{run}/labels")
        call("POST", f"/v1/runs/{run}/labels", json={**LABEL, "labeled_by": f"owner-{y.name}"})
        call("POST", "/review/api/labels", json={
            "run_id": run, "judge_version": "fake-v1", "attempt": False, "success": False,
            "pick": {"strategy": "committee", "rank": 1, "score": 0.0, "reason": "x"}})
    for jd in y.judgments:
        call("GET", f"/v1/judgments/{jd}")
    call("GET", f"/v1/jobs/{y.jobs[0]}")
    call("GET", f"/v1/rejudge-jobs/{y.jobs[1]}")
    for label_id in y.labels:
        call("DELETE", f"/review/api/labels/{label_id}")
    for path in ("/v1/runs", "/v1/judgments", "/v1/calibration-set",
                 "/v1/calibration-set?judge_version=fake-v2", "/api/v1/datasets/"):
        call("GET", path)
    call("POST", "/review/api/next", json={"judge_version": "fake-v1"})
    call("POST", "/review/api/next", json={"judge_version": "fake-v2"})
    if y.dataset:
        call("GET", f"/api/v1/datasets/{y.dataset}/")
        call("GET", f"/api/v1/datasets/{y.dataset}/sequences/")
        call("GET", f"/api/v1/datasets/{y.dataset}/sequence-outcomes/")
        for uid in y.sequences:
            call("GET", f"/api/v1/datasets/{y.dataset}/sequences/{uid}/outcome/")
            call("GET", f"/api/v1/datasets/{y.dataset}/sequences/{uid}/outcome/history/")
            call("PUT", f"/api/v1/datasets/{y.dataset}/sequences/{uid}/outcome/",
                 json={"outcome": "failure"})
    return got


def test_four_owners_never_reach_each_others_runs(served, make_bundles):
    service, client = served
    owners = setup_owners(service, client, make_bundles)
    a, b = owners["A"], owners["B"]
    # the same bytes from two owners are two runs, two judgments, two charges
    assert a.runs[0] != b.runs[0] and a.judgments[0] != b.judgments[0]
    assert (a.runs[0].endswith(f"~{a.key_id}"), b.runs[0].endswith(f"~{b.key_id}")) == \
        (True, True)
    for o in owners.values():
        assert client.get("/v1/usage", headers=o.h).json()["calls"] == 2
    for x in owners.values():
        others = [y for y in owners.values() if y is not x]
        before = {y.name: (rows_of(service, y), answers_of(client, y)) for y in others}
        for y in others:
            got = attack(client, x, y)
            assert got[0][1] == 200, got[0]
            mine = got[0][2]
            assert mine["run_id"].endswith(f"~{x.key_id}") and mine["charged_to"] is not None
            for what, code, _, _ in got[1:]:
                method, _, path = what.partition(" ")
                if path.startswith(("/v1/runs/", "/v1/judgments/", "/v1/jobs/",
                                    "/v1/rejudge-jobs/", f"/api/v1/datasets/{y.dataset}/")) \
                        or what == "POST /review/api/labels" or method == "DELETE":
                    assert code == 404, (what, code)
            r = client.post("/v1/rejudge-jobs", headers=x.h,
                            json={"judge": "fake-v2", "run_ids": [y.runs[0]]})
            assert (r.status_code, r.json()["detail"]) == (
                422, f"run_ids: no such run(s) for this key: {y.runs[0]}")
            # nothing of y's in any answer, but what x itself sent (a path, a body)
            for what, _, answer, sent in got:
                text = json.dumps(answer)
                for s in y.markers():
                    assert s not in text or s in sent, (what, s, answer)
                for name, value in leaves(answer):
                    assert value not in y.ids() or value in sent, (what, name, value)
                    assert name != "label_id" or value not in y.labels, (what, value)
                card = answer.get("card") if isinstance(answer, dict) else None
                if card:  # the queue of x's runs alone: its first pick is x's rank 1
                    assert card["run_id"].endswith(f"~{x.key_id}"), (what, card["run_id"])
                    assert card["pick"]["rank"] == 1, (what, card["pick"])
        for y in others:
            assert (rows_of(service, y), answers_of(client, y)) == before[y.name], (x.name,
                                                                                  y.name)


def test_a_victims_bundle_path_gives_the_attacker_its_own_run_and_no_stored_value(
        client, service, api_bundles):
    """The issue's attack: junk attribution on the victim's bundle path listed the victim's
    recorded facts in a 422; the victim's own facts then gave its verdict free of charge
    and made the attacker a co-owner. Now the attacker gets its own run (charged), and a
    mismatch names the fields that differ, never a stored value."""
    victim = service.create_key("victim", "live", sorted(RIGHTS))[0]
    attacker = service.create_key("attacker", "live", sorted(RIGHTS))[0]
    bundle = api_bundles[2]
    truth = doc_for(bundle, "V", 0)
    r = client.post("/v1/judgments", json=truth, headers=bearer(victim))
    assert r.status_code == 200, r.text
    run_v = r.json()["run_id"]
    junk = doc_for(bundle, "X", 0)
    junk["policy"]["name"], junk["body"]["arm"] = "junk-policy", "junk-arm"
    r = client.post("/v1/judgments", json=junk, headers=bearer(attacker))
    assert r.status_code == 200, r.text
    mine = r.json()
    assert mine["run_id"] != run_v and mine["charged_to"] is not None
    for value in ("ckpt-ownerV", "seed-ownerV", "scripted-expert", "xArm7", run_v):
        assert value not in r.text
    # the victim's exact facts on the attacker's own run of those bytes: fields, no values
    r = client.post("/v1/judgments", json=truth, headers=bearer(attacker))
    manifest = json.loads(open(f"{bundle}/manifest.json").read())
    assert (r.status_code, r.json()["detail"]) == (422, (
        f"run {mine['run_id']!r} (bundle {manifest['bundle_hash']}) is already recorded "
        "with other facts: policy.name, policy.checkpoint, body.arm, seed; send the facts it "
        "was recorded with, or judge it as another bundle"))
    for value in ("ckpt-ownerV", "seed-ownerV", "scripted-expert", "xArm7", "junk-policy",
                  "ckpt-ownerX", "junk-arm"):
        assert value not in r.text
    labels = client.get(f"/v1/runs/{run_v}/labels", headers=bearer(attacker))
    assert labels.status_code == 404
    assert client.post(f"/v1/runs/{run_v}/labels", headers=bearer(attacker), json={
        **LABEL, "labeled_by": "victim-operator"}).status_code == 404
    assert client.get("/v1/usage", headers=bearer(attacker)).json()["calls"] == 1
    assert client.get("/v1/usage", headers=bearer(victim)).json()["calls"] == 1
