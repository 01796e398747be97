"""`rcjudge train --split-seed` and `rcjudge average`: members of one split, their mean as a
version, and the refusals."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch
from safetensors.torch import load_file

from judge.ensemble.judge import Judge, prepare
from judge.ensemble.version import load_judge_version
from judge.learn.average import average_versions
from judge.learn.calibrate import write_version
from judge.learn.train import TrainConfig, TrainError, train_version
from judge.ledgers.seen import Seen, runs_of_bundles, seen_runs
from judge.ledgers.store import Ledger
from rcjudge.cli import main
from rcjudge.home import models_dir

pytestmark = pytest.mark.slow
# idefics3 and llava move off their initial weights at both seeds; gemma3 at neither
MEMBER = TrainConfig(seed=3, split_seed=3, epochs=2, max_steps=6, batch=4, lr=1e-3,
                     test_fraction=0.25, val_fraction=0.2, calib_fraction=0.2)
ARCHS = ("gemma3-tiny", "idefics3-tiny", "llava-tiny")


@pytest.fixture(scope="module")
def members(labelled_tiny_ledger, tiny_models, tmp_path_factory):
    """Versions trained from `tiny` on the 24 labelled runs: avg-a (seed 3) and avg-b (seed
    4) on split 3, avg-c (seed 4) on split 4, avg-d (seed 5, split 3, lr 2e-3); name ->
    (config path, report)."""
    out = tmp_path_factory.mktemp("members")
    made = {}
    with Ledger.open(labelled_tiny_ledger) as ledger:
        for name, seed, split, lr in (("avg-a", 3, 3, 1e-3), ("avg-b", 4, 3, 1e-3),
                                      ("avg-c", 4, 4, 1e-3), ("avg-d", 5, 3, 2e-3)):
            cfg = TrainConfig(**{**MEMBER.__dict__, "seed": seed, "split_seed": split,
                                 "lr": lr})
            made[name] = train_version(ledger, load_judge_version("tiny"), name, cfg,
                                       config_out=str(out / f"{name}.yaml"), progress=False)
    return made


def test_one_split_seed_keeps_the_parts_while_the_seed_changes_the_weights(members,
                                                                         tiny_models):
    a, b, c = (load_judge_version(str(members[n][0])).training
               for n in ("avg-a", "avg-b", "avg-c"))
    assert (a.seed, b.seed, a.options["split_seed"], b.options["split_seed"]) == (3, 4, 3, 3)
    assert a.held_out == b.held_out and a.split == b.split and a.data_sha256 == b.data_sha256
    assert c.held_out["test_seed_groups"] != a.held_out["test_seed_groups"]  # split 4
    for arch, moved in zip(ARCHS, (False, True, True), strict=True):
        assert [members[n][1]["models"][arch]["best_epoch"] > 0
                for n in ("avg-a", "avg-b")] == [moved, moved], arch
        wa = load_file(tiny_models.parent / "avg-a" / arch / "model.safetensors")
        wb = load_file(tiny_models.parent / "avg-b" / arch / "model.safetensors")
        assert any(not torch.equal(wa[k], wb[k]) for k in wa) == moved, arch


def test_the_average_answers_with_the_mean_of_its_members(members, labelled_tiny_ledger,
                                                          tmp_path, make_bundles):
    path_a, path_b = members["avg-a"][0], members["avg-b"][0]
    with Ledger.open(labelled_tiny_ledger) as ledger:
        path, report = average_versions(ledger, [load_judge_version(str(path_a)),
                                                 load_judge_version(str(path_b))], "avg-ab",
                                        config_out=str(tmp_path / "avg-ab.yaml"),
                                        progress=False)
    ab = load_judge_version(str(path))
    a, b = load_judge_version(str(path_a)), load_judge_version(str(path_b))
    assert [m.path for m in ab.models] == [m.path for m in a.models]
    assert [m.members for m in ab.models] == [(m.path,) for m in b.models]
    t = ab.training
    assert t.members == ["avg-a", "avg-b"] and t.parent == "tiny" and t.seed == 3
    assert t.data_sha256 == a.training.data_sha256 and t.held_out == a.training.held_out
    assert report["calibration_runs"] == a.training.split["calibration"]
    assert report["validation_runs"] == a.training.split["validation"]
    assert t.used_runs == "{models_dir}/avg-ab/used_runs.json"
    used = models_dir() / "avg-ab" / "used_runs.json"
    assert used.read_text() == (models_dir() / "avg-a" / "used_runs.json").read_text()
    assert t.fingerprint == Judge(ab, load=False).fingerprint.digest
    assert t.fingerprint not in (a.training.fingerprint, b.training.fingerprint)

    bundle = make_bundles(24, seed=11, width=96, height=64, fps=5, duration_s=3.0)[0]
    raw = {}
    for v in (a, b, ab):
        judge = Judge(v)
        raw[v.name] = [(x.p_attempt_raw, x.p_success_raw)
                       for x in judge.judge_prepared(prepare(str(bundle), v)).answers]
        judge.close()
    mean = (np.array(raw["avg-a"]) + np.array(raw["avg-b"])) / 2
    assert np.allclose(raw["avg-ab"], mean, rtol=0, atol=1e-9)
    assert not np.allclose(raw["avg-a"], raw["avg-b"], rtol=0, atol=1e-6)

    # the mean does not depend on the order of what it averages
    swapped = ab.model_copy(update={"models": tuple(
        m.model_copy(update={"path": m.members[0], "members": (m.path,)}) for m in ab.models)})
    assert Judge(swapped, load=False).fingerprint.digest == t.fingerprint
    # an average is not trained from
    with Ledger.open(labelled_tiny_ledger) as ledger, pytest.raises(
            TrainError, match=r"^--from avg-ab: its models average several checkpoints "
                              r"\(avg-a, avg-b\); train from a version with one checkpoint "
                              r"a model$"):
        train_version(ledger, ab, "avg-ab-t", MEMBER, config_out=str(tmp_path / "t.yaml"),
                      progress=False)


def test_members_served_by_vllm_are_averaged_and_calibrated_through_transformers(
        members, labelled_tiny_ledger, tmp_path):
    # as `rcjudge train` trains them: the same checkpoints, the same calibration maps; the
    # average is served as its members are (no vLLM in this environment)
    served = tmp_path / "served"
    served.mkdir()
    hf = [load_judge_version(str(members[n][0])) for n in ("avg-a", "avg-b")]
    vllm = [load_judge_version(str(write_version(v.model_copy(update={"models": tuple(
        m.model_copy(update={"backend": "vllm"}) for m in v.models)}), served / f"{v.name}.yaml")))
            for v in hf]
    with Ledger.open(labelled_tiny_ledger) as ledger:
        ref_path, ref = average_versions(ledger, hf, "avg-ab-hf",
                                         config_out=str(tmp_path / "avg-ab-hf.yaml"),
                                         progress=False)
        path, report = average_versions(ledger, vllm, "avg-ab-sv",
                                        config_out=str(tmp_path / "avg-ab-sv.yaml"),
                                        progress=False)
        fake = [v.model_copy(update={"models": tuple(
            m.model_copy(update={"backend": "fake"}) for m in v.models)}) for v in hf]
        with pytest.raises(TrainError) as err:
            average_versions(ledger, fake, "avg-ab-fk", config_out=str(tmp_path / "fk.yaml"),
                             progress=False)
    assert str(err.value) == (
        "--versions avg-a: model gemma3-tiny is served by the 'fake' backend, which has no "
        "weights to train; rcjudge train trains checkpoints served by transformers or vllm")
    assert not (tmp_path / "fk.yaml").exists() and not (models_dir() / "avg-ab-fk").exists()
    sv, ref_v = load_judge_version(str(path)), load_judge_version(str(ref_path))
    assert [(m.backend, m.path, m.members) for m in sv.models] == [
        ("vllm", m.path, m.members) for m in ref_v.models]
    assert report["validation"] == ref["validation"]
    assert [m.calibration for m in sv.models] == [m.calibration for m in ref_v.models]
    assert sv.vote.calibration == ref_v.vote.calibration


def test_versions_of_other_splits_or_one_alone_are_refused_before_anything_is_written(
        members, labelled_tiny_ledger, tmp_path, capsys):
    a, c, d = (str(members[n][0]) for n in ("avg-a", "avg-c", "avg-d"))
    config = tmp_path / "avg-ac.yaml"
    twin = tmp_path / "avg-twin.yaml"  # avg-a's file under another name: the same weights
    twin.write_text(open(a, encoding="utf-8").read().replace("name: avg-a", "name: avg-twin", 1))
    cases = [
        (f"{a},{d}", "rcjudge: error: the versions differ in training options (avg-a: "
         "{'lr': 0.001}; avg-d: {'lr': 0.002}); average versions trained alike on one split "
         "(rcjudge train --split-seed S --seed 0, 1, ...)"),
        (f"{a},{c}", "rcjudge: error: the versions differ in their split's test seed groups "
         "(split seeds: avg-a 3, avg-c 4); average versions trained on one split (rcjudge "
         "train --split-seed S --seed 0, 1, ...)"),
        (a, "rcjudge: error: --versions: at least 2 versions to average, got 1"),
        (f"{a},{a}", "rcjudge: error: --versions: each version once, got avg-a, avg-a"),
        ("tiny,tiny-vision", "rcjudge: error: tiny: not made by rcjudge train (no training "
         "record); only trained versions are averaged"),
        (f"{a},{twin}", "rcjudge: error: avg-a and avg-twin name the same checkpoint folder "
         "{models_dir}/avg-a/gemma3-tiny; average versions with checkpoints of their own"),
    ]
    for versions, error in cases:
        assert main(["average", "--versions", versions, "--out", "avg-ac", "--db",
                     labelled_tiny_ledger, "--config", str(config)]) == 2
        assert capsys.readouterr().err.strip() == error
        assert not config.exists() and not (models_dir() / "avg-ac").exists()


def test_the_average_is_written_once_and_reported(members, labelled_tiny_ledger, tmp_path,
                                                  capsys):
    a, b = str(members["avg-a"][0]), str(members["avg-b"][0])
    config = tmp_path / "avg-ab2.yaml"
    args = ["average", "--versions", f"{a},{b}", "--out", "avg-ab2", "--db",
            labelled_tiny_ledger, "--config", str(config), "--json"]
    assert main(args) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["members"] == ["avg-a", "avg-b"] and report["config"] == str(config)
    assert report["used_runs"] == load_judge_version(a).training.runs
    used = json.loads((models_dir() / "avg-ab2" / "used_runs.json").read_text())
    with Ledger.open(labelled_tiny_ledger) as ledger:  # what it saw, in the ledger (issue 37)
        assert seen_runs(ledger, "avg-ab2") == Seen("avg-ab2", runs_of_bundles(ledger, used),
                                                    ("avg-ab2",), True)
    written = config.read_text()
    assert main(args) == 2
    assert capsys.readouterr().err.strip() == (
        f"rcjudge: error: {config}: already exists; judge versions are never overwritten")
    assert config.read_text() == written


@pytest.mark.ray
def test_a_ray_rejudge_with_the_average_matches_a_single_call_and_eval_skips_members_runs(
        members, labelled_tiny_ledger, tmp_path, make_bundles):
    import os
    import shutil
    import subprocess
    import sys

    db_file = tmp_path / "l.db"  # a copy: the shared ledger stays as other tests read it
    shutil.copy(labelled_tiny_ledger.removeprefix("sqlite:///"), db_file)
    db = f"sqlite:///{db_file}"
    config = tmp_path / "avg-ray.yaml"
    env = {**os.environ, "RAY_AUTH_MODE": "disabled"}

    def rcjudge(*args: str) -> str:
        proc = subprocess.run([sys.executable, "-m", "rcjudge.cli", *args], capture_output=True,
                              text=True, timeout=600, env=env)
        assert proc.returncode == 0, proc.stderr[-2000:]
        return proc.stdout

    rcjudge("average", "--versions", f"{members['avg-a'][0]},{members['avg-b'][0]}", "--out",
            "avg-ray", "--config", str(config), "--db", db)
    with Ledger.open(db) as ledger:
        v1_before = {r: ledger.get_judgment(r, "tiny") for r in ledger.judged_run_ids("tiny")}
    rcjudge("rejudge", "--from", "tiny", "--to", str(config), "--db", db)
    labels = tmp_path / "truth.csv"
    bundles = make_bundles(24, seed=11, width=96, height=64, fps=5, duration_s=3.0)
    rcjudge("truth-labels", str(bundles[0].parent), "--out", str(labels), "--labeled-at",
            "2026-12-01T00:00:00Z")
    report = json.loads(rcjudge("eval", "--judge", "tiny", "--compare", str(config), "--labels",
                                str(labels), "--db", db, "--bootstrap", "20", "--json"))
    version = load_judge_version(str(config))
    judge = Judge(version)
    local = judge.judge_prepared(prepare(str(bundles[0]), version))
    judge.close()
    with Ledger.open(db) as ledger:
        assert {r: ledger.get_judgment(r, "tiny") for r in v1_before} == v1_before
        assert ledger.judged_run_ids("avg-ray") == set(v1_before)
        row = ledger.get_judgment(bundles[0].name, "avg-ray")
    assert [p for a in row.answers for p in (a.p_attempt_raw, a.p_success_raw)] == pytest.approx(
        [p for a in local.answers for p in (a.p_attempt_raw, a.p_success_raw)], abs=1e-9)
    assert row.fingerprint == local.fingerprint == version.training.fingerprint
    assert report["runs"]["scored"] == version.training.split["test"]  # never a member's run
