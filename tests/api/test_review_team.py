"""The review page for a team: a dataset grant brings the dataset's runs into a key's queue.

One live SQLite database, the operator's dataset ``lab/pick`` (made from the CLI's store),
and five keys: ``ana`` (a robot's key: every run it judges goes into ``lab/pick``), ``bob``
(edit on ``lab/pick``; judges one bundle of the dataset and one outside it), ``lead`` (edit
on ``lab/pick``, judged nothing), ``rita`` (read on ``lab/pick``) and ``eve`` (no grant;
judges one bundle of the dataset's bytes). The rule (``judge.review.reach``): a run belongs
to a dataset when the dataset holds its bundle and its owner is a member (an edit grant);
a key reviews its own runs and those of the datasets it holds an edit grant on.
"""

from __future__ import annotations

import shutil

import pytest
from fastapi.testclient import TestClient

from judge.api.auth import RIGHTS
from judge.api.routes import create_app
from judge.learn.select import next_runs
from judge.outcomes.store import OutcomeStore
from tests.api.conftest import bearer
from tests.api.test_review_page import VERSION, judge_runs, mine, review_app, review_service

DATASET = "lab/pick"


@pytest.fixture(scope="module")
def team_db(tmp_path_factory, make_bundles):
    """(database path, key per name, run ids per name) — judged once, copied per test."""
    bundles = make_bundles(8, seed=41, width=96, height=64, fps=10)
    path = tmp_path_factory.mktemp("team") / "team.db"
    service = review_service(f"sqlite:///{path}")
    try:
        store = OutcomeStore(service.modes["live"].engine)
        store.create_dataset(DATASET)  # the operator's, from the CLI
        write = ["labels:write"]
        keys = {"ana": service.create_key("ana", "live", sorted(RIGHTS), dataset=DATASET)[0],
                "bob": service.create_key("bob", "live", sorted(RIGHTS))[0],
                "lead": service.create_key("lead", "live", write)[0],
                "rita": service.create_key("rita", "live", write)[0],
                "eve": service.create_key("eve", "live", sorted(RIGHTS))[0]}
        ids = {name: service.authenticate(f"Bearer {k}").key_id for name, k in keys.items()}
        for name, access in (("bob", "edit"), ("lead", "edit"), ("rita", "read")):
            store.grant(DATASET, ids[name], access)
        with TestClient(create_app(service)) as client:
            runs = {"ana": judge_runs(client, keys["ana"], bundles[:6]),
                    "bob": judge_runs(client, keys["bob"], [bundles[0], bundles[6]]),
                    "eve": judge_runs(client, keys["eve"], [bundles[1]])}
    finally:
        service.close()
    return path, keys, runs


@pytest.fixture
def team(tmp_path, team_db):
    src, keys, runs = team_db
    shutil.copy(src, tmp_path / "team.db")
    service = review_service(f"sqlite:///{tmp_path / 'team.db'}")
    with TestClient(review_app(service), raise_server_exceptions=False) as client:
        yield client, service, keys, runs
    service.close()


def _next(client, key, exclude=()):
    return client.post("/review/api/next", headers=bearer(key), json={
        "judge_version": VERSION, "strategy": "committee", "exclude": list(exclude)}).json()


def _why(client, key, exclude=(), version=VERSION):
    return client.post("/review/api/queue", headers=bearer(key), json={
        "judge_version": version, "strategy": "committee", "exclude": list(exclude)}).json()


def _walk(client, key) -> list[str]:
    """Every run the key's page is offered, in order, skipping each."""
    seen: list[str] = []
    while (card := _next(client, key, seen)["card"]) is not None:
        seen.append(card["run_id"])
    return seen


def test_a_dataset_grant_brings_the_datasets_runs_into_the_queue(team) -> None:
    client, service, keys, runs = team
    ana = [p.run_id for p in next_runs(mine(service, keys["ana"]), VERSION, n=20)]
    bob = {p.run_id for p in next_runs(mine(service, keys["bob"]), VERSION, n=20)}
    assert 0 < len(ana) < 6 and set(ana) < set(runs["ana"])  # the rest: rcjudge train's test
    # bob's run of a bundle the dataset holds is the dataset's (bob is a member); his other
    # run is not; eve's run of the dataset's bytes is not (eve is no member)
    shared = {runs["bob"][0]} & bob
    walked = _walk(client, keys["lead"])
    assert set(walked) == set(ana) | shared
    assert runs["bob"][1] not in walked and runs["eve"][0] not in walked
    assert len(walked) == len(set(walked))
    why = _why(client, keys["lead"], walked)
    assert (why["reason"], why["visible"], why["judged"], why["labelled"],
            why["candidates"], why["excluded"]) == ("seen", 7, 7, 0, len(walked), len(walked))


def test_a_team_label_lands_with_the_run_and_only_its_writer_undoes_it(team) -> None:
    client, service, keys, runs = team
    card = _next(client, keys["lead"])["card"]
    owner = "ana" if card["run_id"] in runs["ana"] else "bob"
    r = client.post("/review/api/labels", headers=bearer(keys["lead"]), json={
        "run_id": card["run_id"], "judge_version": VERSION, "pick": card["pick"],
        "attempt": True, "success": False, "failure_class": "grasp.slip", "note": "team"})
    assert r.status_code == 201, r.text
    out = r.json()
    assert (out["labeled_by"], out["failure_class"], out["note"]) == ("lead", "grasp.slip",
                                                                      "team")
    [stored] = mine(service, keys[owner]).labels(card["run_id"])  # with the run, its owner's
    assert (stored.label_id, stored.label.labeled_by) == (out["label_id"], "lead")
    assert mine(service, keys["lead"]).labels(card["run_id"]) == []  # lead owns no run
    assert _next(client, keys["lead"])["card"]["run_id"] != card["run_id"]  # labelled: gone
    for other in ("eve", "rita", "bob" if owner == "ana" else "ana"):  # not their label
        assert client.delete(f"/review/api/labels/{out['label_id']}",
                             headers=bearer(keys[other])).status_code == 404
    assert len(mine(service, keys[owner]).labels(card["run_id"])) == 1
    undone = client.delete(f"/review/api/labels/{out['label_id']}",
                           headers=bearer(keys["lead"]))
    assert undone.json() == {"label_id": out["label_id"], "run_id": card["run_id"],
                             "undone": True}
    assert mine(service, keys[owner]).labels(card["run_id"]) == []


def test_without_an_edit_grant_a_key_sees_nothing_of_the_dataset(team) -> None:
    client, service, keys, runs = team
    target = runs["ana"][0]
    for name in ("eve", "rita"):
        key = keys[name]
        walked = _walk(client, key)
        assert not set(walked) & (set(runs["ana"]) | set(runs["bob"]))
        label = client.post("/review/api/labels", headers=bearer(key), json={
            "run_id": target, "judge_version": VERSION,
            "pick": {"strategy": "committee", "rank": 1, "score": 0.5, "reason": "x"},
            "attempt": True, "success": True})
        assert label.status_code == 404
        assert label.json()["detail"] == f"run {target!r}: no such run for this key"
    assert mine(service, keys["ana"]).labels(target) == []
    assert _walk(client, keys["eve"]) == [p.run_id for p in next_runs(
        mine(service, keys["eve"]), VERSION, n=20)]  # eve's queue: her own run alone
    rita = _why(client, keys["rita"])
    assert (rita["reason"], rita["visible"]) == ("no-runs", 0)
    assert ("it may only read lab/pick (a read grant shows a dataset's outcomes, not its "
            "queue: labelling is a write)") in rita["detail"]


def test_the_operators_runs_are_shared_only_through_the_operators_datasets(team) -> None:
    from judge.ledgers.store import Ledger

    client, service, keys, runs = team
    engine = service.modes["live"].engine
    ana = mine(service, keys["ana"])
    rid = next_runs(ana, VERSION, n=1)[0].run_id  # one of ana's candidates
    run, judgment = ana.get_run(rid), ana.get_judgment(rid, VERSION)
    # the operator judged the same bytes from the CLI (the local owner's run)
    local = Ledger(engine, blind=True).record(run.model_copy(update={"run_id": "op-run"}),
                                              judgment.model_copy(update={"run_id": "op-run"}))
    assert local.run_id == "op-run"
    assert "op-run" in _walk(client, keys["lead"])  # lab/pick is the operator's dataset
    # eve's own dataset holding those bytes shares nothing of the operator's (nor ana's)
    store = OutcomeStore(engine)
    eve_id = service.authenticate(f"Bearer {keys['eve']}").key_id
    store.create_dataset("eve/mine", key_id=eve_id)
    store.add_sequence("eve/mine", run.bundle_hash, run.bundle_uri, key_id=eve_id)
    walked = _walk(client, keys["eve"])
    assert "op-run" not in walked and rid not in walked
    assert set(walked) <= set(runs["eve"])


def test_an_empty_queue_says_why(team) -> None:
    client, _, keys, _ = team
    lead = keys["lead"]
    other = _why(client, lead, version="tiny-streams")
    assert other["reason"] == "not-judged"
    assert other["detail"] == ("The queue is empty: tiny-streams judged none of the 7 runs "
                               f"this key sees (versions that did: {VERSION}).")
    queue = _walk(client, lead)
    while (card := _next(client, lead)["card"]) is not None:  # label the whole queue
        assert client.post("/review/api/labels", headers=bearer(lead), json={
            "run_id": card["run_id"], "judge_version": VERSION, "pick": card["pick"],
            "attempt": True, "success": True}).status_code == 201
    why = _why(client, lead)
    n, held = len(queue), 7 - len(queue)
    assert (why["reason"], why["labelled"], why["candidates"], held > 0) == (
        "held-out", n, 0, True)
    assert why["detail"] == (
        f"The queue is empty: of the 7 runs {VERSION} judged this key sees, {n} have a label "
        f"and the other {held} are held out from labelling (the test part rcjudge train "
        "keeps, a dataset's held_out_eval split, tier-B runs).")


def test_a_team_label_and_its_undo_through_the_api_role_on_postgresql(pg_db, make_bundles):
    """On PostgreSQL, connected as ``rcjudge_api``: the lead's queue reads the dataset's runs
    and its label and undo on the robot's run work through that role."""
    import sqlalchemy as sa

    from judge.api.service import JudgeService
    from judge.ensemble.judge import Judge
    from judge.ledgers.store import make_engine
    from tests.api.conftest import TMP_ROOTS, fake_judges
    from tests.api.test_review_page import review_version

    url, test_schema = pg_db
    judges = fake_judges(**{VERSION: lambda: Judge(review_version())})
    JudgeService(url, judges=judges, test_schema=test_schema).close()  # the owner migrates
    role_url = sa.make_url(make_engine(url).url).set(username="rcjudge_api")
    service = JudgeService(role_url.render_as_string(hide_password=False), judges=judges,
                           test_schema=test_schema, bundle_roots=TMP_ROOTS)
    try:
        store = OutcomeStore(service.modes["live"].engine)
        store.create_dataset(DATASET)
        robot = service.create_key("robot", "live", sorted(RIGHTS), dataset=DATASET)[0]
        lead = service.create_key("lead", "live", ["labels:write"])[0]
        store.grant(DATASET, service.authenticate(f"Bearer {lead}").key_id, "edit")
        with TestClient(review_app(service)) as client:
            runs = judge_runs(client, robot, make_bundles(8, seed=41, width=96, height=64,
                                                         fps=10)[:3])
            walked = _walk(client, lead)
            assert walked and set(walked) <= set(runs)
            card = _next(client, lead)["card"]
            r = client.post("/review/api/labels", headers=bearer(lead), json={
                "run_id": card["run_id"], "judge_version": VERSION, "pick": card["pick"],
                "attempt": False, "success": False})
            assert r.status_code == 201, r.text
            [stored] = mine(service, robot).labels(card["run_id"])
            assert stored.label.labeled_by == "lead"
            gone = client.delete(f"/review/api/labels/{r.json()['label_id']}",
                                 headers=bearer(lead))
            assert gone.status_code == 200, gone.text
            assert mine(service, robot).labels(card["run_id"]) == []
    finally:
        service.close()
