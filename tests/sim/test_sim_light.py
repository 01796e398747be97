"""The physics generator's pure parts: no simulator needed (these run everywhere).

Importing stays light, bad requests are one-line errors, the per-rollout plan is
deterministic, the labelling rules on hand-built traces, truth-labels on synth bundles.
"""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

from judge.sim.errors import SimDependencyError, SimError
from judge.sim.generate import make_config, plan
from judge.sim.labels import LabelRules, Trace, label
from judge.sim.perturb import kinds_for
from judge.sim.tasks import TASKS, resolve_tasks
from rcjudge.cli import main


def test_importing_the_sim_and_the_cli_never_loads_the_simulator():
    code = ("import sys, rcjudge.cli, bench.cli, judge.sim.generate, judge.sim.labels, "
            "judge.sim.physics, judge.sim.truth_labels; rcjudge.cli.build_parser(); "
            "print(sorted(m for m in ('mujoco', 'metaworld', 'gymnasium', 'av') "
            "if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True)
    assert out.stdout.strip() == "[]"


def test_unknown_tasks_and_bad_options_are_one_line_errors(capsys):
    with pytest.raises(SimError, match="unknown task.*door-open; known: pick-place, "
                                       "pick-place-wall, drawer-open"):
        resolve_tasks("pick-place,door-open")
    with pytest.raises(SimError, match="width: .*must be even for H.264 4:2:0, got 161"):
        make_config(width=161)
    with pytest.raises(SimError, match="--perturbation offset: does not apply to drawer-open"):
        make_config(tasks=("pick-place", "drawer-open"), perturbation="offset")
    assert main(["sim", "--tasks", "nope", "--n", "1", "--out", "x"]) == 2
    assert "rcjudge: error: --tasks nope: unknown task(s) nope" in capsys.readouterr().err


def test_a_missing_stack_names_the_extra(monkeypatch, tmp_path, capsys):
    from judge.sim import deps

    monkeypatch.setattr(deps, "missing", lambda: ["metaworld"])
    with pytest.raises(SimDependencyError, match=r"need metaworld: pip install -e '\.\[sim\]'"):
        deps.require()
    assert main(["sim", "--n", "1", "--out", str(tmp_path / "o")]) == 2
    assert "physics rollouts need metaworld" in capsys.readouterr().err


def test_the_plan_is_deterministic_and_respects_the_mix():
    cfg = make_config(seed=3, failure_rate=1.0)
    plans = [plan(cfg, i) for i in range(40)]
    again = [plan(cfg, i) for i in range(40)]
    assert [(p["perturbation"], p["env_seed"]) for p in plans] == [
        (p["perturbation"], p["env_seed"]) for p in again]
    assert all(p["perturbation"].kind != "none" for p in plans)
    assert all(p["perturbation"].kind in kinds_for(p["task"]) for p in plans)
    assert [p["task"].key for p in plans[:5]] == list(TASKS)  # tasks cycle per rollout
    clean = make_config(seed=3, failure_rate=0.0)
    assert {plan(clean, i)["perturbation"].kind for i in range(20)} == {"none"}
    # a task's k-th rollouts share the env seed within a group of group_size
    seeds = [plan(cfg, i)["env_seed"] for i in range(0, 40, 5)]  # pick-place, k = 0..7
    assert seeds[0] == seeds[3] != seeds[4] == seeds[7]
    assert "crash" not in kinds_for(TASKS["drawer-open"])
    assert "offset" not in kinds_for(TASKS["button-press-topdown"])


def test_min_duration_draws_each_length_on_the_frame_grid_and_nothing_else():
    fixed = make_config(seed=5)
    drawn = make_config(seed=5, min_duration_s=1.0)
    a = [plan(fixed, i) for i in range(400)]
    b = [plan(drawn, i) for i in range(400)]
    assert {p["duration_s"] for p in a} == {3.0}
    # drawn last: the same perturbations, poses, tasks and env seeds as without
    assert [(p["perturbation"], p["poses"], p["task"], p["env_seed"]) for p in a] == [
        (p["perturbation"], p["poses"], p["task"], p["env_seed"]) for p in b]
    lengths = [p["duration_s"] for p in b]
    assert lengths == [plan(drawn, i)["duration_s"] for i in range(400)]  # deterministic
    frames = {round(d * 16) for d in lengths}
    assert {d * 16 for d in lengths} == frames  # whole frames at 16 fps
    assert frames == set(range(16, 49))  # 1 s to 3 s, both ends included
    # a bound between frames rounds inward; equal bounds leave one length
    assert min(plan(make_config(seed=5, min_duration_s=1.03), i)["duration_s"]
               for i in range(400)) == 1.0625
    assert {plan(make_config(seed=5, min_duration_s=3.0), i)["duration_s"]
            for i in range(20)} == {3.0}
    with pytest.raises(SimError, match=r"min_duration_s: Value error, above duration_s 2.0 "
                                       r"\(got 2.5\)"):
        make_config(duration_s=2.0, min_duration_s=2.5)


def test_a_min_duration_above_the_duration_is_refused_before_simulating(tmp_path, capsys):
    out = tmp_path / "o"
    assert main(["sim", "--n", "1", "--out", str(out), "--min-duration", "4"]) == 2
    assert ("min_duration_s: Value error, above duration_s 3.0 (got 4.0)"
            in capsys.readouterr().err)
    assert not out.exists()


def trace(n: int = 241, **over) -> Trace:
    """A hand-built trace: the tool sits on the object, nothing else happens."""
    base = {"dt": 0.0125, "q": np.zeros((n, 7)), "qd": np.zeros((n, 7)),
            "tau": np.zeros((n, 7)), "width": np.full(n, 0.1), "grip": np.zeros(n),
            "actuator": np.zeros(n),
            "touch": np.zeros(n), "scene": np.zeros(n), "tcp": np.zeros((n, 3)),
            "obj": np.zeros((n, 3)), "goal": np.array([0.3, 0.0, 0.0]),
            "metric": np.full(n, 0.3), "success": np.zeros(n, bool), "threshold": 0.07,
            "grasp_task": True}
    base.update(over)
    return Trace(**base)


def test_success_needs_the_final_window_and_near_threshold_is_a_band():
    s = np.zeros(241, bool)
    s[-5:] = True  # 50 ms at the end: not the 100 ms the rules ask
    assert not label(trace(success=s)).success
    s[-9:] = True
    lab = label(trace(success=s, metric=np.full(241, 0.06)))
    assert lab.success and lab.failure_class is None
    assert lab.near_threshold  # |0.06 - 0.07| <= 0.2 * 0.07
    assert not label(trace(metric=np.full(241, 0.05))).near_threshold
    assert label(trace(metric=np.full(241, 0.05)),
                 LabelRules(near_band=0.3)).near_threshold


def test_the_earliest_failure_event_names_the_class():
    n = 241
    grip = np.zeros(n)
    grip[40:60] = 300.0  # grasp 0.5 s, lost at 0.75 s
    obj = np.zeros((n, 3))
    obj[40:60, 2] = 0.1  # lifted while held ...
    obj[60:70, 2] = np.linspace(0.1, 0.0, 10)  # ... then falls to the table
    width = np.where(np.arange(n) < 40, 0.1, 0.05)  # closed on it, never reopened
    scene = np.zeros(n)
    scene[150:155] = 900.0  # a table hit later
    lab = label(trace(grip=grip, obj=obj, scene=scene, width=width))
    assert [e["kind"] for e in lab.contacts] == ["grasp", "slip", "impact"]
    assert lab.failure_class == "grasp.slip"  # the slip came first
    early = np.zeros(n)
    early[10:12] = 900.0
    assert label(trace(grip=grip, obj=obj, scene=early, width=width)).failure_class == (
        "motion.collision")
    opened = np.where((np.arange(n) < 40) | (np.arange(n) >= 62), 0.1, 0.05)
    assert label(trace(grip=grip, obj=obj, width=opened)).failure_class == (
        "grasp.premature_release")  # 0.3 m from the goal in x-y when let go


def test_far_from_the_object_is_no_attempt_and_progress_is_a_timeout():
    n = 241
    far = np.tile([0.0, 0.0, 0.3], (n, 1))
    assert label(trace(tcp=far)).failure_class == "task.no_attempt"
    metric = np.linspace(0.3, 0.1, n)  # still closing in at the end
    assert label(trace(metric=metric)).failure_class == "task.timeout"
    assert label(trace()).failure_class == "task.incomplete"


def test_truth_labels_work_on_synth_bundles(make_bundles, tmp_path):
    import json

    from judge.ledgers.labels import read_labels
    from judge.sim.truth_labels import pick, write_truth_labels

    paths = make_bundles(6, seed=4, width=96, height=64, fps=10, duration_s=2.0)
    out = tmp_path / "synth.jsonl"
    s = write_truth_labels(paths[0].parent, out, fraction=0.5, seed=2,
                           labeled_at="2026-12-01T00:00:00Z")
    assert (s.runs_found, s.labeled) == (6, 3)
    labels, errors = read_labels(out)
    assert errors == [] and [lb.run_id for _, lb in labels] == pick(
        [p.name for p in paths], 0.5, 2)
    for _, lb in labels:
        t = json.loads((paths[0].parent / lb.run_id / "truth.json").read_text())
        assert (lb.attempt, lb.success, lb.failure_class) == (
            t["attempt"], t["success"], t["failure_class"])
    with pytest.raises(SimError, match=r"suffix '\.txt'; expected \.csv or \.jsonl"):
        write_truth_labels(paths[0].parent, tmp_path / "l.txt")
    with pytest.raises(SimError, match=r"--fraction 1\.5: expected a number in \[0, 1\]"):
        write_truth_labels(paths[0].parent, out, fraction=1.5)


def test_truth_labels_label_exactly_the_runs_a_review_queue_file_names(make_bundles, tmp_path,
                                                                        capsys):
    # the operator of `make demo`, simulated from the generator's truth: it labels the runs
    # `rcjudge review next --json` picked (in rank order 0004, 0001), nothing else
    import json

    from judge.sim.truth_labels import read_picks

    paths = make_bundles(6, seed=4, width=96, height=64, fps=10, duration_s=2.0)
    root = paths[0].parent
    picks = tmp_path / "picks.json"
    picks.write_text(json.dumps({"judge_version": "tiny-streams", "strategy": "random",
                                 "picks": [{"run_id": "synth-0004-0004", "rank": 1},
                                           {"run_id": "synth-0004-0001", "rank": 2}]}))
    assert read_picks(picks) == ["synth-0004-0004", "synth-0004-0001"]
    out = tmp_path / "l.csv"
    assert main(["truth-labels", str(root), "--out", str(out), "--runs", str(picks),
                 "--labeled-by", "demo-operator", "--labeled-at", "2026-12-01T00:00:00Z"]) == 0
    assert out.read_text().splitlines() == [
        "run_id,attempt,success,failure_class,labeled_by,labeled_at",
        "synth-0004-0001,false,false,task.no_attempt,demo-operator,2026-12-01T00:00:00Z",
        "synth-0004-0004,true,true,,demo-operator,2026-12-01T00:00:00Z"]
    assert capsys.readouterr().out == (f"{out}: 2 label(s) of 6 run(s) with truth.json "
                                       f"(the runs picked in {picks})\n")
    assert main(["truth-labels", str(root), "--out", str(out), "--runs", str(picks),
                 "--json"]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert (summary["labeled"], summary["runs_found"], summary["fraction"],
            summary["seed"]) == (2, 6, None, None)
    # an empty queue labels nothing: the header alone
    picks.write_text('{"picks": []}')
    assert main(["truth-labels", str(root), "--out", str(out), "--runs", str(picks)]) == 0
    assert out.read_text() == "run_id,attempt,success,failure_class,labeled_by,labeled_at\n"
    capsys.readouterr()


@pytest.mark.parametrize(("text", "message"), [
    (None, "--runs {f}: file not found"),
    ("{", "--runs {f}: not valid JSON: Expecting property name enclosed in double quotes "
          "(line 1, column 2)"),
    ('["synth-0004-0001"]', '--runs {f}: expected the JSON of `rcjudge review next --json` '
                            '(an object with a "picks" list)'),
    ('{"picks": [{"run_id": "synth-0004-0001"}, {"rank": 2}]}',
     "--runs {f}: picks[1].run_id: expected a run id, got None"),
    ('{"picks": [{"run_id": "synth-0004-0001"}, "synth-0004-0002"]}',
     "--runs {f}: picks[1].run_id: expected a run id, got None"),
    ('{"picks": [{"run_id": "synth-0004-0001"}, {"run_id": "synth-0004-0001"}]}',
     "--runs {f}: picks[1].run_id 'synth-0004-0001' repeats picks[0]"),
    ('{"picks": [{"run_id": "synth-0004-0001"}, {"run_id": "synth-9"}, {"run_id": "x"}]}',
     "--runs: 2 run(s) with no truth.json under {root}: synth-9, x"),
])
def test_a_bad_runs_file_is_one_line_and_writes_nothing(make_bundles, tmp_path, capsys, text,
                                                        message):
    root = make_bundles(6, seed=4, width=96, height=64, fps=10, duration_s=2.0)[0].parent
    picks = tmp_path / "picks.json"
    if text is not None:
        picks.write_text(text)
    out = tmp_path / "l.csv"
    assert main(["truth-labels", str(root), "--out", str(out), "--runs", str(picks)]) == 2
    assert capsys.readouterr().err == ("rcjudge: error: "
                                       + message.format(f=picks, root=root) + "\n")
    assert not out.exists()


def test_runs_and_fraction_together_are_refused(make_bundles, tmp_path, capsys):
    root = make_bundles(6, seed=4, width=96, height=64, fps=10, duration_s=2.0)[0].parent
    picks = tmp_path / "picks.json"
    picks.write_text('{"picks": [{"run_id": "synth-0004-0001"}]}')
    out = tmp_path / "l.csv"
    assert main(["truth-labels", str(root), "--out", str(out), "--runs", str(picks),
                 "--fraction", "1"]) == 2
    assert capsys.readouterr().err == (
        "rcjudge: error: --runs and --fraction: choose one (--runs names the runs to label, "
        "--fraction draws a share of them)\n")
    assert not out.exists()


def test_truth_labels_with_near_threshold_are_read_by_eval_only(make_bundles, tmp_path):
    import json

    from judge.learn.truth import read_truth_file
    from judge.ledgers.labels import read_labels
    from judge.sim.truth_labels import write_truth_labels

    paths = make_bundles(6, seed=4, width=96, height=64, fps=10, duration_s=2.0)
    flagged = paths[1] / "truth.json"
    t = json.loads(flagged.read_text())
    (tmp_path / "b").mkdir()
    for p in paths:  # a copy of the set where one truth says near_threshold: true
        (tmp_path / "b" / p.name).mkdir()
        data = json.loads((p / "truth.json").read_text())
        data["near_threshold"] = p == paths[1]
        if p == paths[2]:
            del data["near_threshold"]  # unknown: the cell stays empty
        (tmp_path / "b" / p.name / "truth.json").write_text(json.dumps(data))
    out = tmp_path / "truth.csv"
    write_truth_labels(tmp_path / "b", out, labeled_at="2026-12-01T00:00:00Z",
                       near_threshold=True)
    lines = out.read_text().splitlines()
    assert lines[0] == "run_id,attempt,success,failure_class,labeled_by,labeled_at,near_threshold"
    assert lines[2].endswith(",true") and lines[3].endswith(",") and lines[1].endswith(",false")
    truth = read_truth_file(str(out))
    assert {r: v.near_threshold for r, v in truth.items()} == {
        p.name: (True if p == paths[1] else None if p == paths[2] else False) for p in paths}
    assert t["run_id"] == paths[1].name
    _, errors = read_labels(out)  # the importer keeps its strict columns
    assert [str(e) for e in errors] == ["line 1: header: unknown column(s) near_threshold "
                                        "(expected run_id, attempt, success, failure_class, "
                                        "labeled_by, labeled_at)"]


def test_every_task_has_an_instruction_and_a_class_per_rule_exists():
    from judge.ensemble.taxonomy import load_taxonomy
    from judge.tasks import task_catalog

    catalog = task_catalog()
    assert all(t.task_id in catalog for t in TASKS.values())
    classes = load_taxonomy().classes
    for name in ("grasp.slip", "grasp.premature_release", "placement.dropped", "grasp.miss",
                 "motion.collision", "task.timeout", "task.no_attempt", "task.incomplete"):
        assert name in classes


def test_truth_labels_read_another_generators_layout_through_a_mapping(tmp_path, capsys):
    # another generator's outcome.json: its own field names, "ok"/"failed", its own reasons,
    # no attempt field (it records tried runs only)
    import json

    docs = {"run-a": {"result": {"status": "ok", "reason": None}},
            "run-b": {"result": {"status": "failed", "reason": "dropped"}},
            "run-c": {"result": {"status": "failed", "reason": "bumped"}}}
    for run, doc in docs.items():
        (tmp_path / "b" / run).mkdir(parents=True)
        (tmp_path / "b" / run / "outcome.json").write_text(json.dumps(doc))
    mapping = tmp_path / "m.yaml"
    mapping.write_text("file: outcome.json\n"
                       "fields: {success: result.status, failure_class: result.reason}\n"
                       "values: {success: {ok: true, failed: false}}\n"
                       "classes: {dropped: grasp.slip, bumped: motion.collision}\n"
                       "defaults: {attempt: true}\n")
    out = tmp_path / "l.csv"
    assert main(["truth-labels", str(tmp_path / "b"), "--out", str(out), "--mapping",
                 str(mapping), "--labeled-at", "2026-12-01T00:00:00Z"]) == 0
    assert out.read_text().splitlines() == [
        "run_id,attempt,success,failure_class,labeled_by,labeled_at",
        "run-a,true,true,,truth,2026-12-01T00:00:00Z",
        "run-b,true,false,grasp.slip,truth,2026-12-01T00:00:00Z",
        "run-c,true,false,motion.collision,truth,2026-12-01T00:00:00Z"]
    capsys.readouterr()
    # without the mapping: the project's layout, and a pointer to --mapping
    (tmp_path / "b" / "run-a" / "truth.json").write_text(json.dumps({"success": True}))
    assert main(["truth-labels", str(tmp_path / "b"), "--out", str(tmp_path / "x.csv")]) == 2
    assert capsys.readouterr().err.strip() == (
        f"rcjudge: error: {tmp_path / 'b' / 'run-a' / 'truth.json'}: missing key(s) attempt, "
        "failure_class (--mapping FILE.yaml maps another layout's fields)")
    # a spelling the mapping does not cover, and a bad mapping, are one-line errors
    mapping.write_text("file: outcome.json\n"
                       "fields: {success: result.status, failure_class: result.reason}\n"
                       "values: {success: {ok: true}}\ndefaults: {attempt: true}\n")
    assert main(["truth-labels", str(tmp_path / "b"), "--out", str(out), "--mapping",
                 str(mapping)]) == 2
    assert capsys.readouterr().err.strip() == (
        f"rcjudge: error: {tmp_path / 'b' / 'run-b' / 'outcome.json'}: result.status = "
        "'failed'; expected true or false (a --mapping values: {success: {failed: "
        "true|false}} entry maps other spellings)")
    mapping.write_text("fields: {success: result.status}\nvalues: {succes: {}}\n")
    assert main(["truth-labels", str(tmp_path / "b"), "--out", str(out), "--mapping",
                 str(mapping)]) == 2
    assert "values: Value error, unknown label field(s) succes; expected attempt, success" \
        in capsys.readouterr().err
