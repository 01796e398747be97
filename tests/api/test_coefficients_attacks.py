"""Issue 29 item 4: padding and differencing attacks on tier B recover no task's result.

The exact sequences of the issue: a victim's 3 tier-B runs of one task; an attacker's 36
runs over 3 tasks it marked tier B itself, then one run on a fourth. Before the fix the
table released ``tasks 5, n 40, success_rate 1.0`` and subtracting the attacker's own 37
known outcomes gave the victim's task exactly. Now only the operator designates tier B
and a cell needs K tasks of owners other than any one caller.
"""

from __future__ import annotations

import pytest

from judge.api import tables as T
from judge.api.coefficients import K, Row, _k_tasks, partition, table
from tests.api.conftest import bearer, request_for

VICTIM = "metaworld.pick_place"
PADS = ["metaworld.pick_place_wall", "metaworld.drawer_open", "metaworld.button_press_topdown",
        "metaworld.peg_insert_side"]


def run(owner: str, task: str, success: bool) -> Row:
    return Row("acme/pi0@1", "ur5e+robotiq", "kitchen", "B", "v1", success, None, task,
               frozenset({owner}))


def padding(victim_ok: int, victim_runs: int, attacker_tasks: int, runs_each: int) -> list[Row]:
    rows = [run("victim", "victim-task", i < victim_ok) for i in range(victim_runs)]
    for t in range(attacker_tasks):
        rows += [run("attacker", f"pad-{t}", True) for _ in range(runs_each)]
    rows.append(run("attacker", "pad-last", True))
    return rows


def anonymous(rows: list[Row]) -> list[Row]:  # the rows as the old rule saw them
    return [Row(*[getattr(r, f) for f in Row.__annotations__ if f != "owners"]) for r in rows]


@pytest.mark.parametrize(("victim_ok", "victim_runs", "attacker_tasks", "runs_each", "tasks"),
                         [(3, 3, 3, 12, 5), (4, 7, 4, 8, 6)])
def test_padding_recovers_nothing(victim_ok, victim_runs, attacker_tasks, runs_each, tasks):
    rows = padding(victim_ok, victim_runs, attacker_tasks, runs_each)
    assert len(rows) == 40
    # what the old rule (k over tasks of anyone) released, and the attacker's subtraction
    (leak,) = table(anonymous(rows))
    own = len(rows) - victim_runs
    assert (leak.tasks, leak.n) == (tasks, 40)
    assert round(leak.success_rate * leak.n) - own == victim_ok  # the victim's exact count
    # the rule now: taking out the attacker's rows leaves 1 task < K: nothing is published
    assert _k_tasks(rows, range(len(rows))) == 1
    assert table(rows) == [] and partition(rows) == []


def test_differencing_over_time_recovers_nothing():
    rows = padding(3, 3, 3, 12)[:3]  # the victim alone: withheld
    assert table(rows) == []
    for t in range(4):  # the attacker adds one task at a time and compares tables
        rows += [run("attacker", f"pad-{t}", True)]
        assert table(rows) == []


def test_k_tasks_of_other_owners_release_and_every_cell_survives_removing_any_owner():
    five = [run(f"lab-{o}", f"task-{o}", o % 2 == 0) for o in range(5) for _ in range(8)]
    assert table(five) == []  # any one lab minus its own rows would face 4 tasks < K
    rows = [run(f"lab-{o}", f"task-{o}", o % 2 == 0) for o in range(6) for _ in range(8)]
    (cell,) = table(rows)
    assert (cell.tasks, cell.n, cell.success_rate) == (6, 48, 0.5)
    for c in partition(rows + padding(3, 3, 3, 12)):
        owners = {o for i in c.rows for o in (rows + padding(3, 3, 3, 12))[i].owners}
        for o in owners:
            left = {r.task_key for i, r in enumerate(rows + padding(3, 3, 3, 12))
                    if i in c.rows and o not in r.owners}
            assert len(left) >= K


def test_over_http_only_the_operator_marks_tier_b_and_own_runs_do_not_count(
        client, service, make_bundles):
    bundles = [str(p) for p in make_bundles(9, seed=21, width=96, height=64, fps=10)]
    victim = service.create_key("victim", "live", ["judgments:write", "coefficients:read"])[0]
    attacker = service.create_key("attacker", "live", ["judgments:write",
                                                       "coefficients:read"])[0]
    keys = [service.authenticate(f"Bearer {k}").key_id for k in (victim, attacker)]
    service.designate_tier_b([VICTIM], keys=keys[:1])

    def judge(key, bundle, task, tier):
        doc = request_for(bundle)
        doc["task"] = {"id": task, "tier": tier}
        r = client.post("/v1/judgments", json=doc, headers=bearer(key))
        assert r.status_code == 200, r.text

    def cells():
        return client.get("/v1/coefficients?tier=B", headers=bearer(attacker)).json()["data"]

    judge(victim, bundles[0], VICTIM, "A")  # the operator's B wins over "A"
    assert cells() == [] and client.get("/v1/coefficients?tier=A", headers=bearer(
        attacker)).json()["data"] == []
    for i, task in enumerate(PADS):  # self-marked tier B: kept out of the table
        judge(attacker, bundles[1 + i], task, "B")
    assert cells() == []
    with service.modes["live"].engine.connect() as conn:
        assert conn.execute(T.coefficients.select()).all().__len__() == 1
    service.designate_tier_b(PADS, keys=keys[1:])  # legit tier-B tasks, the attacker's
    for i, task in enumerate(PADS):
        judge(attacker, bundles[5 + i], task, "B")
    with service.modes["live"].engine.connect() as conn:
        assert len(conn.execute(T.coefficients.select()).all()) == 5
    assert cells() == []  # 5 tasks, but without the attacker's rows only 1


@pytest.mark.parametrize("mode", ["test", "live"])
def test_the_owner_rule_holds_in_test_mode(client, service, make_bundles, mode):
    """Issue 36 item 3: the test database holds no key, so the rows' owners were read as
    none and the owner rule did nothing there: an attacker's 41 runs on 4 designated tasks
    beside a victim's 3 runs of a fifth published ``tasks 5, n 44`` and 44 - 41 gave the
    victim's runs back. Owners are read from the live key table in every mode."""
    bundles = [str(p) for p in make_bundles(44, seed=36, width=96, height=64, fps=10)]
    victim = service.create_key("victim", mode, ["judgments:write"])
    attacker = service.create_key("attacker", mode, ["judgments:write", "coefficients:read"])
    service.designate_tier_b([VICTIM], mode=mode, keys=[victim[1].key_id])
    service.designate_tier_b(PADS, mode=mode, keys=[attacker[1].key_id])
    plan = [(victim[0], VICTIM)] * 3 + [(attacker[0], PADS[i % 4]) for i in range(41)]
    for bundle, (key, task) in zip(bundles, plan, strict=True):
        doc = request_for(bundle)
        doc["task"] = {"id": task, "tier": "B"}
        r = client.post("/v1/judgments", json=doc, headers=bearer(key))
        assert r.status_code == 200, r.text
    got = client.get("/v1/coefficients?tier=B", headers=bearer(attacker[0])).json()["data"]
    assert got == []  # without the attacker's rows 1 task is left: nothing is released
    with service.modes[mode].engine.connect() as conn:
        rows = conn.execute(T.coefficients.select()).all()
    assert (len(rows), {r.block for r in rows}) == (44, {None})  # all pending


def test_the_same_bytes_from_two_owners_count_once(client, service, api_bundles):
    """Two owners judging one bundle get a row each (their own ``table_row_id``); the
    table counts the robot's run once: the second row is a copy, never published."""
    keys = [service.create_key(n, "live", ["judgments:write", "coefficients:read"])[0]
            for n in ("lab-a", "lab-b")]
    got = [client.post("/v1/judgments", json=request_for(api_bundles[0]),
                       headers=bearer(k)).json() for k in keys]
    assert [g["table_row_id"] for g in got] == ["cf_1", "cf_2"]
    (cell,) = client.get("/v1/coefficients?tier=A", headers=bearer(keys[0])).json()["data"]
    assert (cell["n"], cell["tasks"]) == (1, 1)
    r = client.post("/v1/judgments", json=request_for(api_bundles[1]), headers=bearer(keys[1]))
    (cell,) = client.get("/v1/coefficients?tier=A", headers=bearer(keys[0])).json()["data"]
    assert (r.json()["table_row_id"], cell["n"]) == ("cf_3", 2)
    with service.modes["live"].engine.connect() as conn:
        assert [x.block for x in conn.execute(T.coefficients.select().order_by(
            T.coefficients.c.row_id))] == [1, 0, 2]  # 0: the copy, never in a block


def test_an_owner_who_sent_the_same_bytes_owns_every_row_of_them(client, service, make_bundles):
    """Lab 0's bundle sent again by x under another task: x's row tells lab 0 nothing it
    does not know (its own bytes, the same verdict), so both rows are lab 0's and x's for
    the owner rule. Six tasks of six labs would release a block; with lab 0 knowing two of
    them, taking out lab 0 leaves 4 < K: nothing is released."""
    tasks = [*PADS, VICTIM, "tabletop.pick_place.cube_001"]
    bundles = [str(p) for p in make_bundles(5, seed=37, width=96, height=64, fps=10)]
    labs = [service.create_key(f"lab-{i}", "live", ["judgments:write", "coefficients:read"])
            for i in range(5)]
    x = service.create_key("x", "live", ["judgments:write"])
    service.designate_tier_b(tasks, keys=[who.key_id for _, who in [*labs, x]])
    plan = [(labs[i][0], bundles[i], tasks[i]) for i in range(5)] + [(x[0], bundles[0],
                                                                     tasks[5])]
    for key, bundle, task in plan:
        doc = request_for(bundle)
        doc["task"] = {"id": task, "tier": "B"}
        r = client.post("/v1/judgments", json=doc, headers=bearer(key))
        assert r.status_code == 200, r.text
    assert client.get("/v1/coefficients?tier=B", headers=bearer(labs[1][0])).json()[
        "data"] == []
    rows = [Row("p", "b", "metaworld", "B", "v1", False, None, t, frozenset({o}))
            for o, t in zip(["lab-0", "lab-1", "lab-2", "lab-3", "lab-4", "x"], tasks,
                            strict=True)]
    assert _k_tasks(rows, range(6)) == 5  # as six owners of one row each: released
