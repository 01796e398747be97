"""The review page's calls (``/review/api``) with the API's keys and alone (``review serve``).

Real SQLite ledgers, real bundles judged through ``POST /v1/judgments`` by three scripted
models that disagree, the queue of :func:`judge.learn.select.next_runs`.
"""

from __future__ import annotations

import pytest
import sqlalchemy as sa
from fastapi.testclient import TestClient

from judge.api.auth import RIGHTS
from judge.api.routes import create_app
from judge.api.service import JudgeService
from judge.ensemble.judge import Judge
from judge.ensemble.version import JudgeVersion
from judge.learn.select import next_runs
from judge.ledgers.review import review_of
from judge.review.routes import KeyDesk, add_review
from tests.api.conftest import TMP_ROOTS, bearer, fake_judges, request_for

VERSION = "fake-review"
SCRIPTS = [{"attempt": 0.9, "success": 0.2, "failure_class": "grasp.slip"},
           {"attempt": 0.8, "success": 0.6, "failure_class": "grasp.miss"},
           {"attempt": 0.7, "success": 0.4, "failure_class": "grasp.slip"}]


def review_version() -> JudgeVersion:
    """Three fake models that disagree (so the committee has something to score)."""
    return JudgeVersion(name=VERSION, models=[
        {"name": f"m{i}", "backend": "fake", "options": {"script": s}}
        for i, s in enumerate(SCRIPTS)])


def review_service(url: str) -> JudgeService:
    return JudgeService(url, judges=fake_judges(**{VERSION: lambda: Judge(review_version())}),
                        bundle_roots=TMP_ROOTS)


def review_app(service: JudgeService):
    """The app ``rcjudge serve`` builds: the API with the review page (which reads the
    scripted version by name here, as it reads configs/judges/ in ``rcjudge serve``)."""
    app = create_app(service)
    add_review(app, KeyDesk(service, load_version))
    return app


def load_version(name: str) -> JudgeVersion:
    from judge.ensemble.version import load_judge_version

    return review_version() if name == VERSION else load_judge_version(name)


def judge_runs(http, key: str, bundles) -> list[str]:
    """Judge ``bundles`` through the API with ``key`` (``http``: a TestClient or httpx
    client); their run ids."""
    out = []
    for b in bundles:
        r = http.post("/v1/judgments", json=request_for(str(b), VERSION), headers=bearer(key))
        assert r.status_code == 200, r.text
        out.append(r.json()["run_id"])
    return out


@pytest.fixture(scope="module")
def review_bundles(make_bundles):
    return make_bundles(10, seed=31, width=96, height=64, fps=10)


@pytest.fixture(scope="module")
def judged_db(tmp_path_factory, review_bundles):
    """A live database (SQLite file) whose key ``ana`` judged the 10 bundles: (path, key,
    run ids). Each test labels a copy."""
    path = tmp_path_factory.mktemp("review") / "review.db"
    service = review_service(f"sqlite:///{path}")
    key = service.create_key("ana", "live", sorted(RIGHTS))[0]
    try:
        with TestClient(create_app(service)) as client:
            runs = judge_runs(client, key, review_bundles)
    finally:
        service.close()
    return path, key, runs


@pytest.fixture
def desk(tmp_path, judged_db):
    """(client, service, a key with every right, its run ids)."""
    import shutil

    src, key, runs = judged_db
    shutil.copy(src, tmp_path / "review.db")
    service = review_service(f"sqlite:///{tmp_path / 'review.db'}")
    with TestClient(review_app(service), raise_server_exceptions=False) as client:
        yield client, service, key, runs
    service.close()


def mine(service, key: str):
    """The key's own ledger (its runs, their labels): what its page reads and writes."""
    return service.modes["live"].ledger_of(service.authenticate(f"Bearer {key}"))


def _next(client, key, exclude=()):
    return client.post("/review/api/next", headers=bearer(key), json={
        "judge_version": VERSION, "strategy": "committee", "exclude": list(exclude)})


def _label(card, **answers):
    return {"run_id": card["run_id"], "judge_version": VERSION, "pick": card["pick"],
            **answers}


def test_the_next_card_is_the_queues_first_pick_with_its_evidence(desk):
    client, service, key, runs = desk
    picks = next_runs(mine(service, key), VERSION, n=20)
    assert len(picks) == 9 and {p.run_id for p in picks} < set(runs)  # 1 is in the test part
    card = _next(client, key).json()["card"]
    assert card["run_id"] == picks[0].run_id and card["judge_version"] == VERSION
    assert card["pick"] == {"rank": 1, "score": picks[0].score, "strategy": "committee",
                            "reason": picks[0].reason}
    # the explain view's pieces: the vote, three models, two gripper plots, the moments
    assert card["judgment"].count("<tr><td>m") == 3 and "id='vote'" in card["judgment"]
    assert card["plots"].count("<svg class=\"plot\"") == 2
    assert "gripper width" in card["plots"] and "gripper effort" in card["plots"]
    # one moment per contact event (3 frames each: nearest and its neighbours) and the end
    # state (1 frame), every camera in each: 3 cameras x (3 x events + 1) images
    events = card["head"].split(" · ")[2].split(" ")[0]
    assert card["frames"].count("<section class='moment'") == int(events) + 1
    assert card["frames"].count("<img ") == 3 * (3 * int(events) + 1)
    second = _next(client, key, [card["run_id"]]).json()["card"]
    assert second["run_id"] == picks[1].run_id and second["pick"]["rank"] == 2
    assert _next(client, key, [p.run_id for p in picks]).json() == {"card": None}


def test_a_label_is_stored_with_the_keys_name_and_its_review_then_undone(desk):
    client, service, key, _ = desk
    card = _next(client, key).json()["card"]
    r = client.post("/review/api/labels", headers=bearer(key), json=_label(
        card, attempt=True, success=False, failure_class="grasp.miss", note=" too fast "))
    assert r.status_code == 201, r.text
    out = r.json()
    assert {k: out[k] for k in ("run_id", "attempt", "success", "failure_class", "labeled_by",
                                "judge_version", "strategy", "note")} == {
        "run_id": card["run_id"], "attempt": True, "success": False,
        "failure_class": "grasp.miss", "labeled_by": "ana", "judge_version": VERSION,
        "strategy": "committee", "note": "too fast"}
    ledger = mine(service, key)
    [stored] = ledger.labels(card["run_id"])
    assert stored.label_id == out["label_id"] and stored.label.labeled_by == "ana"
    review = review_of(out["label_id"], ledger)
    assert (review.judge_version, review.strategy, review.rank, review.reason, review.note) == (
        VERSION, "committee", 1, card["pick"]["reason"], "too fast")
    # a labelled run leaves the queue
    assert _next(client, key).json()["card"]["run_id"] != card["run_id"]
    gone = client.delete(f"/review/api/labels/{out['label_id']}", headers=bearer(key))
    assert gone.json() == {"label_id": out["label_id"], "run_id": card["run_id"], "undone": True}
    assert ledger.labels(card["run_id"]) == [] and review_of(out["label_id"], ledger) is None
    assert client.delete(f"/review/api/labels/{out['label_id']}",
                         headers=bearer(key)).status_code == 404
    assert _next(client, key).json()["card"]["run_id"] == card["run_id"]  # back in the queue


@pytest.mark.parametrize(("answers", "field", "reason"), [
    ({"attempt": False, "success": True},
     "success", "true with attempt false; a run that was not attempted cannot succeed "
     "(expected success false when attempt is false)"),
    ({"attempt": True, "success": False, "failure_class": "grasp.nope"},
     "failure_class", "'grasp.nope' is not a class of the taxonomy; the grasp classes are "
     "grasp.miss, grasp.slip, grasp.wrong_pose, grasp.crush, grasp.premature_release, "
     "grasp.unstable, grasp.no_close, grasp.multiple_objects (or leave it empty)"),
    ({"attempt": True, "success": True, "failure_class": "grasp.slip"},
     "failure_class", "'grasp.slip' given for a successful run; expected empty when success "
     "is true"),
    ({"attempt": "yes", "success": False}, "attempt", "Input should be a valid boolean"),
    ({"success": False}, "attempt", "Field required"),
])
def test_a_refused_label_names_its_field_and_writes_nothing(desk, answers, field, reason):
    client, service, key, _ = desk
    card = _next(client, key).json()["card"]
    r = client.post("/review/api/labels", headers=bearer(key), json=_label(card, **answers))
    assert r.status_code == 422
    assert r.headers["content-type"] == "application/problem+json"
    assert r.json()["invalid_params"] == [{"name": field, "reason": reason}]
    assert mine(service, key).labels(card["run_id"]) == []


def test_a_key_without_labels_write_gets_403_on_every_call(desk):
    client, service, key, _ = desk
    card = _next(client, key).json()["card"]
    label_id = client.post("/review/api/labels", headers=bearer(key), json=_label(
        card, attempt=True, success=True)).json()["label_id"]
    reader = service.create_key("ben", "live", sorted(set(RIGHTS) - {"labels:write"}))[0]
    h = bearer(reader)
    for r in (client.get(f"/review/api/session?judge={VERSION}", headers=h),
              _next(client, reader),
              client.post("/review/api/labels", headers=h, json=_label(
                  card, attempt=True, success=True)),
              client.delete(f"/review/api/labels/{label_id}", headers=h)):
        assert r.status_code == 403
        assert "lacks the right 'labels:write'" in r.json()["detail"]
    assert client.get("/review/api/session", headers=bearer("rck_live_nope")).status_code == 401
    assert len(mine(service, key).labels(card["run_id"])) == 1


def test_a_key_labels_only_its_own_runs_and_undoes_only_its_own_labels(desk):
    client, service, key, _ = desk
    card = _next(client, key).json()["card"]
    label_id = client.post("/review/api/labels", headers=bearer(key), json=_label(
        card, attempt=True, success=True)).json()["label_id"]
    other = service.create_key("cy", "live", ["labels:write"])[0]
    # it judged none of them and holds no dataset grant: an empty queue, and why
    assert _next(client, other).json() == {"card": None}
    why = client.post("/review/api/queue", headers=bearer(other), json={
        "judge_version": VERSION, "strategy": "committee", "exclude": []}).json()
    assert (why["reason"], why["visible"], why["judged"]) == ("no-runs", 0, 0)
    assert why["detail"].startswith("The queue is empty: no runs are visible to this key.")
    r = client.post("/review/api/labels", headers=bearer(other), json=_label(
        card, attempt=True, success=True))
    assert r.status_code == 404
    assert client.delete(f"/review/api/labels/{label_id}",
                         headers=bearer(other)).status_code == 404
    session = client.get(f"/review/api/session?judge={VERSION}", headers=bearer(other)).json()
    assert session["labeled_by"] == "cy" and len(session["classes"]) == 54
    assert client.get("/review/api/session", headers=bearer(other)).json()[
        "invalid_params"][0]["name"] == "judge"
    unknown = client.get("/review/api/session?judge=nope", headers=bearer(other)).json()
    assert unknown["status"] == 422 and unknown["invalid_params"][0]["name"] == "judge_version"
    assert unknown["detail"].startswith("judge_version: unknown judge version 'nope'")


def test_the_page_itself_needs_no_key_and_rcjudge_serve_serves_it(tmp_path):
    from rcjudge.cli import build_parser
    from rcjudge.serve import build

    app, service = build(build_parser().parse_args(
        ["serve", "--db", f"sqlite:///{tmp_path / 's.db'}"]))
    try:
        with TestClient(app) as client:
            page = client.get("/review")
            assert page.status_code == 200 and page.headers["cache-control"] == "no-store"
            assert '<body data-auth="key" data-judge="">' in page.text
            assert client.get("/review/api/session").status_code == 401
            assert "/review" not in client.get("/openapi.json").json()["paths"]
    finally:
        service.close()


@pytest.fixture
def local_client(tmp_path, judged_db, monkeypatch):
    """``rcjudge review serve``'s app over a copy of the judged ledger, as operator dora."""
    import shutil

    import yaml

    from judge.review.cli import build
    from rcjudge.cli import build_parser

    shutil.copy(judged_db[0], tmp_path / "review.db")
    # the operator's own runs (judged through the API for the fixture, as rcjudge batch
    # would judge them): the local page reads the local owner's runs only
    engine = sa.create_engine(f"sqlite:///{tmp_path / 'review.db'}")
    with engine.begin() as conn:
        conn.execute(sa.text("UPDATE runs SET owner = 'local'"))
    engine.dispose()
    version = tmp_path / "fake-review.yaml"
    version.write_text(yaml.safe_dump(review_version().model_dump(mode="json")))
    monkeypatch.setenv("RCJUDGE_LABELLER", "dora")
    app, ledger = build(build_parser().parse_args(
        ["review", "serve", "--judge", str(version), "--db",
         f"sqlite:///{tmp_path / 'review.db'}"]))
    with TestClient(app, raise_server_exceptions=False) as client:
        yield client, ledger
    ledger.close()


def test_review_serve_labels_as_the_operator_with_no_key(local_client):
    client, ledger = local_client
    assert '<body data-auth="operator" data-judge="fake-review">' in client.get("/review").text
    assert client.get("/review/api/session").json()["labeled_by"] == "dora"
    card = _next(client, None).json()["card"]
    r = client.post("/review/api/labels", json=_label(card, attempt=True, success=False,
                                                      failure_class=None, note=None))
    assert r.status_code == 201 and r.json()["labeled_by"] == "dora"
    [stored] = ledger.labels(card["run_id"])
    assert (stored.label.attempt, stored.label.success, stored.label.failure_class) == (
        True, False, None)
    assert review_of(stored.label_id, ledger).judge_version == VERSION
    other = client.post("/review/api/next", json={"judge_version": "fake-v1"})
    assert other.status_code == 422 and other.json()["invalid_params"] == [
        {"name": "judge_version", "reason": "judge_version 'fake-v1': this page labels the "
         "queue of 'fake-review' only"}]
    refused = client.post("/review/api/labels", json=_label(card, attempt=False, success=True))
    assert [p["name"] for p in refused.json()["invalid_params"]] == ["success"]
    assert client.post("/review/api/labels", json={**_label(
        card, attempt=True, success=True), "run_id": "nope"}).status_code == 404
    assert client.delete(f"/review/api/labels/{stored.label_id}").json()["undone"] is True
    assert ledger.labels(card["run_id"]) == []


def test_review_serve_listens_on_loopback_only_and_names_its_operator(monkeypatch, capsys):
    from judge.review.cli import ReviewServeError, labeller_name
    from rcjudge.cli import main

    assert main(["serve", "--only", "review", "--judge", "tiny", "--host", "0.0.0.0"]) == 2
    assert capsys.readouterr().err.strip() == (
        "rcjudge: error: --host 0.0.0.0: review serve has no keys, so it listens on loopback only "
        "(127.0.0.1, ::1, localhost); to label from elsewhere use rcjudge serve, whose "
        "/review takes API keys")
    monkeypatch.delenv("RCJUDGE_LABELLER", raising=False)
    monkeypatch.setenv("USER", "erin")
    monkeypatch.setenv("LOGNAME", "erin")
    assert labeller_name(None) == "erin"
    monkeypatch.setenv("RCJUDGE_LABELLER", "fay")
    assert labeller_name(None) == "fay" and labeller_name(" gus ") == "gus"
    with pytest.raises(ReviewServeError, match="^--labeller: empty; expected the operator's "
                       "name$"):
        labeller_name(" ")


def test_label_and_undo_connected_as_the_api_role_on_postgresql(pg_db, review_bundles):
    """On PostgreSQL the API connects as ``rcjudge_api``: the page's label (two rows) and its
    undo (two deletes) work through that role; a tier-B run is never in the queue."""
    import sqlalchemy as sa

    from judge.ledgers.store import make_engine

    url, test_schema = pg_db
    judges = fake_judges(**{VERSION: lambda: Judge(review_version())})
    JudgeService(url, judges=judges, test_schema=test_schema).close()  # the owner migrates
    role_url = sa.make_url(make_engine(url).url).set(username="rcjudge_api")
    service = JudgeService(role_url.render_as_string(hide_password=False), judges=judges,
                           test_schema=test_schema, bundle_roots=TMP_ROOTS)
    try:
        with service.modes["live"].engine.connect() as conn:
            assert conn.exec_driver_sql("SELECT current_user").scalar_one() == "rcjudge_api"
        key = service.create_key("pg", "live", sorted(RIGHTS))[0]
        with TestClient(review_app(service)) as client:
            tier_b = request_for(str(review_bundles[0]), VERSION)
            tier_b["task"]["tier"] = "B"
            assert client.post("/v1/judgments", json=tier_b,
                               headers=bearer(key)).status_code == 200
            runs = judge_runs(client, key, review_bundles[1:4])
            picks = next_runs(mine(service, key), VERSION, n=20)
            assert {p.run_id for p in picks} <= set(runs)  # no tier-B run
            card = _next(client, key).json()["card"]
            assert card["run_id"] == picks[0].run_id
            r = client.post("/review/api/labels", headers=bearer(key), json=_label(
                card, attempt=True, success=False, failure_class="grasp.slip"))
            assert r.status_code == 201, r.text
            ledger = mine(service, key)
            assert review_of(r.json()["label_id"], ledger).strategy == "committee"
            gone = client.delete(f"/review/api/labels/{r.json()['label_id']}",
                                 headers=bearer(key))
            assert gone.status_code == 200, gone.text
            assert ledger.labels(card["run_id"]) == []
            assert review_of(r.json()["label_id"], ledger) is None
            # a sampling round drawn and labelled through the role (its INSERT grant)
            card = _sample_next(client, key, n=3).json()["card"]
            assert card["pick"]["round_id"] == 1 and card["run_id"] in runs
            r = client.post("/review/api/labels", headers=bearer(key), json=_label(
                card, attempt=True, success=False, failure_class="grasp.slip"))
            assert r.status_code == 201, r.text
            assert review_of(r.json()["label_id"], ledger).pi == card["pick"]["pi"]
    finally:
        service.close()


def _sample_next(client, key, exclude=(), n=5, strategy="sample-uniform"):
    return client.post("/review/api/next", headers=bearer(key), json={
        "judge_version": VERSION, "strategy": strategy, "exclude": list(exclude), "n": n})


def _rounds(service):
    from judge.ledgers.rounds import read_frames

    with service.modes["live"].engine.connect() as conn:
        return read_frames(conn)


def test_a_sampling_round_on_the_page_is_drawn_once_and_its_labels_carry_pi(desk):
    """A key's own sampling round: the page draws it over the key's candidates (9: one of
    the 10 runs is in train's test part), serves every draw until each is labelled, then
    draws the next; the labels carry the round and π, so they rectify the key's rate."""
    from judge.learn.rate_inputs import rate_rows

    client, service, key, runs = desk
    first = _sample_next(client, key).json()["card"]
    rounds, frames = _rounds(service)
    assert list(rounds) == [1] and rounds[1].strategy == "sample-uniform"
    assert rounds[1].candidates == 9 and rounds[1].judge_version == VERSION
    assert all(f.pi == 5 / 9 for _, f in frames)  # uniform: n / N
    drawn = sorted(f.run_id for _, f in frames if f.drawn)  # equal π: run id order
    assert len(drawn) == rounds[1].drawn > 0 and set(drawn) < set(runs)
    assert first["run_id"] == drawn[0]
    assert first["pick"] == {"rank": 1, "score": round(5 / 9, 12), "strategy": "sample-uniform",
                             "reason": "drawn with pi 0.556 (P(success) 0.40; round 1)",
                             "round_id": 1, "pi": 5 / 9}
    # the page holds or skipped every draw: nothing more, and no second round
    assert _sample_next(client, key, drawn).json() == {"card": None}
    assert list(_rounds(service)[0]) == [1]
    # forged picks are refused before anything is written
    bad = dict(first["pick"], pi=0.5)
    r = client.post("/review/api/labels", headers=bearer(key), json={
        **_label(first, attempt=True, success=True), "pick": bad})
    assert r.status_code == 422 and r.json()["invalid_params"][0]["name"] == "pick"
    assert "sampling round 1 drew it with pi 0.5555555555555556, not 0.5" in r.json()["detail"]
    undrawn = next(f.run_id for _, f in frames if not f.drawn)
    r = client.post("/review/api/labels", headers=bearer(key), json={
        **_label(first, attempt=True, success=True), "run_id": undrawn})
    assert r.status_code == 422 and "sampling round 1 did not draw this run" in r.json()["detail"]
    r = client.post("/review/api/labels", headers=bearer(key), json={
        **_label(first, attempt=True, success=True),
        "pick": dict(first["pick"], strategy="committee")})
    assert r.status_code == 422 and "belong to the sampling strategies only" in r.json()["detail"]
    other = service.create_key("cy", "live", ["labels:write"])[0]  # another key: 404, no word
    r = client.post("/review/api/labels", headers=bearer(other), json=_label(
        first, attempt=True, success=True))
    assert r.status_code == 404 and r.json()["detail"] == (
        f"run {first['run_id']!r}: no such run for this key")
    assert all(mine(service, key).labels(rid) == [] for rid in runs)
    # label every draw, in the order served; each label keeps its round and π
    served = []
    while (card := _sample_next(client, key).json()["card"]) is not None and \
            card["pick"]["round_id"] == 1:
        served.append(card["run_id"])
        r = client.post("/review/api/labels", headers=bearer(key), json=_label(
            card, attempt=True, success=False, failure_class="grasp.slip"))
        assert r.status_code == 201, r.text
        review = review_of(r.json()["label_id"], mine(service, key))
        assert (review.strategy, review.round_id, review.pi) == ("sample-uniform", 1, 5 / 9)
    assert served == drawn
    # round 1 owes nothing now: the next call drew round 2 over the runs left unlabelled
    rounds, frames = _rounds(service)
    assert list(rounds) == [1, 2] and rounds[2].candidates == 9 - len(drawn)
    got = rate_rows(mine(service, key), VERSION)
    assert sorted(r.run_id for r in got.rows if r.y is not None) == drawn
    assert {r.pi for r in got.rows if r.y is not None} == {round(5 / 9, 12)}
    assert got.no_valid_rectification is None
