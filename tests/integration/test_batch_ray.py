"""Overnight batches on a real local Ray: 50 bundles, failures recorded, resume after ^C."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

pytestmark = [pytest.mark.ray, pytest.mark.slow]

FAKE = {"name": "fake-batch", "models": [
    {"name": "a", "backend": "fake",
     "options": {"script": {"attempt": 0.9, "success": 0.2, "failure_class": "grasp.slip"}}},
    {"name": "b", "backend": "fake", "options": {"script": {"attempt": 0.8, "success": 0.7}}},
    {"name": "c", "backend": "fake",
     "options": {"script": {"attempt": 0.7, "success": 0.3, "failure_class": "grasp.miss"}}}]}


@pytest.fixture(scope="module")
def fifty(make_bundles):
    return make_bundles(50, seed=7, width=96, height=64, fps=5)


def version_file(tmp_path, delay_s=0.0, name="fake-batch"):
    data = {**FAKE, "name": name}
    data["models"] = [{**m, "options": {**m["options"], "delay_s": delay_s}}
                      for m in FAKE["models"]]
    path = tmp_path / f"{name}.yaml"
    path.write_text(yaml.safe_dump(data))
    return path


def judgments(url: str, version: str) -> set[str]:
    from judge.ledgers.store import Ledger

    with Ledger.open(url) as ledger:
        return ledger.judged_run_ids(version)


def rcjudge(*args: str) -> list[str]:
    return [sys.executable, "-m", "rcjudge.cli", *args]


def test_interrupt_then_resume_judges_each_run_once(fifty, tmp_path):
    listing = tmp_path / "runs.txt"
    listing.write_text("\n".join(str(p) for p in fifty) + "\n")
    url = f"sqlite:///{tmp_path / 'ledger.db'}"
    # slow enough that the SIGINT lands mid-batch even on a loaded machine (at 0.05 s a call,
    # the whole batch once finished before it: exit 0)
    slow = version_file(tmp_path, delay_s=0.2)
    proc = subprocess.Popen(rcjudge("batch", str(listing), "--judge", str(slow), "--db", url,
                                    "--max-in-flight", "2", "--json"),
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
                            env={**os.environ, "RAY_AUTH_MODE": "disabled"})
    deadline = time.time() + 120
    while time.time() < deadline:
        if (tmp_path / "ledger.db").exists() and len(judgments(url, "fake-batch")) >= 10:
            break
        time.sleep(0.2)
    proc.send_signal(signal.SIGINT)
    out, _ = proc.communicate(timeout=120)
    first = yaml.safe_load(out)
    assert proc.returncode == 130 and first["interrupted"] is True
    done_first = judgments(url, "fake-batch")
    assert 10 <= len(done_first) < 50
    assert first["judged"] == len(done_first)

    again = subprocess.run(rcjudge("batch", str(listing), "--judge", str(slow), "--db", url,
                                   "--json"), capture_output=True, text=True, check=True,
                           env={**os.environ, "RAY_AUTH_MODE": "disabled"})
    second = yaml.safe_load(again.stdout)
    assert second["skipped"] == len(done_first)
    assert second["judged"] == 50 - len(done_first)
    assert judgments(url, "fake-batch") == {p.name for p in fifty}


@pytest.fixture(scope="module")
def local_ray():
    import ray

    os.environ["RAY_AUTH_MODE"] = "disabled"
    ray.init(address="local", num_cpus=2, include_dashboard=False, log_to_driver=False)
    yield
    ray.shutdown()


def test_fake_batch_records_failures_and_goes_on(fifty, tmp_path, local_ray):
    from judge.batch.run import run_batch
    from judge.batch.sources import resolve_sources
    from judge.ensemble.version import load_judge_version
    from judge.ledgers.store import Ledger

    broken = tmp_path / "broken"
    shutil.copytree(fifty[0], broken)
    data = bytearray((broken / "rollout.mcap").read_bytes())
    data[999] ^= 0xFF
    (broken / "rollout.mcap").write_bytes(bytes(data))
    listing = tmp_path / "runs.txt"
    listing.write_text("\n".join([*map(str, fifty), str(broken), str(tmp_path / "gone")]))
    uris = resolve_sources(str(listing))
    with Ledger.open(f"sqlite:///{tmp_path / 'l.db'}") as ledger:
        s = run_batch(uris, load_judge_version(str(version_file(tmp_path))), ledger,
                      max_in_flight=4, progress=False)
        assert (s.total, s.judged, s.skipped, len(s.failed)) == (52, 50, 0, 2)
        assert sorted(f["error"] for f in s.failed) == ["HashMismatchError", "ManifestError"]
        kept = ledger.failures("fake-batch")
        assert sorted((f["bundle_uri"], f["error"]) for f in kept) == [
            (str(broken), "HashMismatchError"), (str(tmp_path / "gone"), "ManifestError")]
        assert "sha256 mismatch" in next(f["message"] for f in kept
                                         if f["error"] == "HashMismatchError")
        j = ledger.get_judgment(fifty[3].name, "fake-batch")
        # a: yes/no; b: yes/yes; c: yes/no -> attempt yes, success no; class tie 1-1: equal P
        # (0.8 · 0.8 each) -> the name that sorts first
        assert (j.attempt, j.success, j.failure_class) == (True, False, "grasp.miss")
        assert j.attempt_confidence == pytest.approx(0.8)
        assert j.success_confidence == pytest.approx(round((0.8 + 0.3 + 0.7) / 3, 6))
        assert ledger.counts()["judgments"] == 50


def test_tiny_models_batch_matches_single_call(fifty, tmp_path, local_ray, tiny_models):
    from judge.batch.run import run_batch
    from judge.ensemble.judge import Judge
    from judge.ensemble.version import load_judge_version
    from judge.ledgers.store import Ledger

    uris = [str(p) for p in fifty]
    with Ledger.open(f"sqlite:///{tmp_path / 'tiny.db'}") as ledger:
        s = run_batch(uris, load_judge_version("tiny"), ledger, max_in_flight=4, progress=False)
        assert (s.judged, len(s.failed)) == (50, 0)
        stored = ledger.get_judgment(fifty[5].name, "tiny")
    local = Judge("tiny").judge(uris[5])
    assert stored.answers == local.answers
    assert (stored.attempt, stored.success, stored.failure_class) == (
        local.attempt, local.success, local.failure_class)


def test_rejudge_v1_to_v2_exact_diff(fifty, tmp_path, local_ray):
    import json
    from datetime import UTC, datetime

    from judge.batch.rejudge import RejudgeError, rejudge
    from judge.batch.run import run_batch
    from judge.ensemble.version import JudgeVersion
    from judge.ledgers.records import Label
    from judge.ledgers.store import Ledger

    yes = {"attempt": 0.9, "success": 0.8}
    v1 = JudgeVersion(name="fake-v1", models=[
        {"name": n, "backend": "fake", "options": {"script": yes}} for n in "abc"])
    mug = {"prompt_contains": "mug", "script": {"attempt": 0.9, "success": 0.2,
                                                "failure_class": "grasp.slip"}}
    v2 = JudgeVersion(name="fake-v2", models=[
        {"name": n, "backend": "fake", "options": {"script": yes, "when": [mug]}}
        for n in "abc"])
    truth = {p.name: json.loads((p / "truth.json").read_text()) for p in fifty}
    mugs = sum(t["task_id"] == "tabletop.pick_place.mug_022" for t in truth.values())
    labelled = sorted(truth)[:10]
    with Ledger.open(f"sqlite:///{tmp_path / 'r.db'}") as ledger:
        run_batch([str(p) for p in fifty], v1, ledger, progress=False)
        ledger.add_labels([Label(run_id=r, attempt=truth[r]["attempt"],
                                 success=truth[r]["success"], labeled_by="op",
                                 labeled_at=datetime(2026, 11, 1, tzinfo=UTC))
                           for r in labelled])
        summary, diff = rejudge(ledger, "fake-v1", v2, progress=False)
        assert summary.judged == 50
        assert ledger.counts()["judgments"] == 100  # both versions, nothing overwritten
        assert ledger.get_judgment(fifty[0].name, "fake-v1").success is True
        with pytest.raises(RejudgeError, match="both 'fake-v1'"):
            rejudge(ledger, "fake-v1", v1)
        with pytest.raises(RejudgeError, match=r"no run was judged by 'v9' \(versions in the "
                                               r"ledger: fake-v1, fake-v2\)"):
            rejudge(ledger, "v9", v2)
    assert 0 < mugs < 50
    assert diff.runs == 50
    assert diff.success_flips == {"true->false": mugs}
    assert diff.attempt_flips == {}
    assert diff.class_transitions == {"-->grasp.slip": mugs} and diff.class_changes == mugs
    lab = [truth[r] for r in labelled]
    mug_lab = [t for t in lab if t["task_id"] == "tabletop.pick_place.mug_022"]
    assert diff.labelled == 10
    assert diff.agreement_before == {"attempt": sum(t["attempt"] for t in lab) / 10,
                                     "success": sum(t["success"] for t in lab) / 10}
    after_success = (sum(t["success"] for t in lab if t not in mug_lab)
                     + sum(not t["success"] for t in mug_lab)) / 10
    assert diff.agreement_after == {"attempt": sum(t["attempt"] for t in lab) / 10,
                                    "success": after_success}


def test_resume_knows_bundles_by_hash_not_by_folder_name(fifty, tmp_path, local_ray):
    """Another mount + new names for judged bundles: skipped. A new bundle under an old
    folder name: judged as a run of its own (before: silently reported "already judged")."""
    import json

    from judge.batch.run import run_batch
    from judge.bundle.manifest import write_manifest
    from judge.ensemble.version import load_judge_version
    from judge.ledgers.store import Ledger

    version = load_judge_version(str(version_file(tmp_path)))
    mount = tmp_path / "other-mount"
    mount.mkdir()
    shutil.copytree(fifty[0], mount / "renamed-0")  # same bundle, new folder name and path
    shutil.copytree(fifty[2], mount / fifty[1].name)  # another bundle, a judged folder's name
    attr = json.loads((mount / fifty[1].name / "attribution.json").read_text())
    attr["seed"] = "0xNEW"
    (mount / fifty[1].name / "attribution.json").write_text(json.dumps(attr))
    write_manifest(mount / fifty[1].name, [f["path"] for f in json.loads(
        (fifty[2] / "manifest.json").read_text())["files"]])
    with Ledger.open(f"sqlite:///{tmp_path / 'h.db'}") as ledger:
        first = run_batch([str(p) for p in fifty[:2]], version, ledger, progress=False)
        assert (first.judged, first.skipped) == (2, 0)
        again = run_batch([str(mount / "renamed-0"), str(mount / fifty[1].name)], version,
                          ledger, progress=False)
        assert (again.judged, again.skipped, len(again.failed)) == (1, 1, 0)
        ids = ledger.judged_run_ids("fake-batch")
        new_hash = json.loads((mount / fifty[1].name / "manifest.json").read_text())[
            "bundle_hash"]
    assert ids == {fifty[0].name, fifty[1].name, f"{fifty[1].name}-{new_hash[:8]}"}


def test_a_changed_version_is_refused_before_any_work(fifty, tmp_path):
    url = f"sqlite:///{tmp_path / 'v.db'}"
    path = version_file(tmp_path)
    done = subprocess.run(rcjudge("batch", str(fifty[0]), "--judge", str(path), "--db", url,
                                  "--json"), capture_output=True, text=True,
                          env={**os.environ, "RAY_AUTH_MODE": "disabled"})
    assert done.returncode == 0, done.stderr
    data = yaml.safe_load(path.read_text())
    data["prompts"] = {"success": "Did it work? {instruction}"}
    path.write_text(yaml.safe_dump(data))
    t0 = time.time()
    refused = subprocess.run(rcjudge("batch", str(fifty[1]), "--judge", str(path), "--db", url),
                             capture_output=True, text=True,
                             env={**os.environ, "RAY_AUTH_MODE": "disabled"})
    assert refused.returncode == 2
    assert refused.stderr.startswith("rcjudge: error: judge version 'fake-batch' judged with "
                                     "fingerprint ")
    assert "changed: prompts. The same version never judges two ways" in refused.stderr
    assert len(refused.stderr.strip().splitlines()) == 1
    assert time.time() - t0 < 20  # refused before Ray starts
    assert judgments(url, "fake-batch") == {fifty[0].name}


def _fault_version(tmp_path, name: str, **options) -> str:
    data = {**FAKE, "name": name}
    data["models"] = [{**m, "options": {**m["options"], **(options if i == 1 else {})}}
                      for i, m in enumerate(FAKE["models"])]
    path = tmp_path / f"{name}.yaml"
    path.write_text(yaml.safe_dump(data))
    return str(path)


def test_a_model_error_costs_only_its_bundles(fifty, tmp_path, local_ray):
    """Model b raises on every mug task: those bundles fail (after one retry), the rest go on."""
    import json

    from judge.batch.run import run_batch
    from judge.ensemble.version import load_judge_version
    from judge.ledgers.store import Ledger

    version = load_judge_version(_fault_version(tmp_path, "fake-raise", raise_when="mug"))
    mugs = {p.name for p in fifty[:20]
            if json.loads((p / "truth.json").read_text())["task_id"].endswith("mug_022")}
    with Ledger.open(f"sqlite:///{tmp_path / 'f.db'}") as ledger:
        s = run_batch([str(p) for p in fifty[:20]], version, ledger, max_in_flight=4,
                      progress=False)
        assert 0 < len(mugs) < 20
        assert (s.total, s.judged, len(s.failed)) == (20, 20 - len(mugs), len(mugs))
        assert {f["uri"].rsplit("/", 1)[-1] for f in s.failed} == mugs
        assert {f["error"] for f in s.failed} == {"RayTaskError(ModelError)"}
        assert all("scripted failure on a prompt containing 'mug'" in f["message"]
                   for f in s.failed)
        assert ledger.judged_run_ids("fake-raise") == {p.name for p in fifty[:20]} - mugs
        assert len(ledger.failures("fake-raise")) == len(mugs)


def test_a_replica_that_dies_is_restarted_and_every_bundle_is_judged_once(fifty, tmp_path,
                                                                          local_ray):
    from judge.batch.run import run_batch
    from judge.ensemble.version import load_judge_version
    from judge.ledgers.store import Ledger

    marker = tmp_path / "died-once"
    version = load_judge_version(_fault_version(tmp_path, "fake-die", exit_once=str(marker)))
    with Ledger.open(f"sqlite:///{tmp_path / 'd.db'}") as ledger:
        s = run_batch([str(p) for p in fifty[:12]], version, ledger, max_in_flight=4,
                      progress=False)
        assert marker.exists()  # model b's process did die mid-batch
        assert (s.total, s.judged, len(s.failed)) == (12, 12, 0)
        assert ledger.judged_run_ids("fake-die") == {p.name for p in fifty[:12]}
        assert ledger.counts()["judgments"] == 12


def test_a_replica_whose_process_dies_while_starting_is_one_line(fifty, tmp_path):
    """Model b's process ends in load(), and again when Ray restarts it (max_restarts=1):
    ready() raised ActorDiedError out of the start, a traceback; now one line, exit 2."""
    path = _fault_version(tmp_path, "fake-die-start", exit_on_load=True)
    url = f"sqlite:///{tmp_path / 's.db'}"
    proc = subprocess.run(rcjudge("batch", str(fifty[0]), "--judge", path, "--db", url),
                          capture_output=True, text=True,
                          env={**os.environ, "RAY_AUTH_MODE": "disabled"})
    assert proc.returncode == 2, proc.stderr
    assert "Traceback" not in proc.stderr
    ours = [ln for ln in proc.stderr.splitlines() if ln.startswith("rcjudge:")]
    assert len(ours) == 1
    assert ours[0].startswith("rcjudge: error: model 'b' could not load: its process died "
                              "while starting (ActorDiedError: ")
    assert judgments(url, "fake-die-start") == set()


def test_a_model_that_cannot_load_is_one_line_before_any_work(fifty, tmp_path):
    data = {"name": "broken-load", "models": [
        {"name": "a", "backend": "fake"}, {"name": "b", "backend": "fake"},
        {"name": "c", "backend": "transformers", "path": str(tmp_path)}]}  # no checkpoint
    (tmp_path / "config.json").write_text("{}")  # a folder that exists, but is no model
    path = tmp_path / "broken-load.yaml"
    path.write_text(yaml.safe_dump(data))
    url = f"sqlite:///{tmp_path / 'b.db'}"
    proc = subprocess.run(rcjudge("batch", str(fifty[0]), "--judge", str(path), "--db", url),
                          capture_output=True, text=True,
                          env={**os.environ, "RAY_AUTH_MODE": "disabled"})
    assert proc.returncode == 2
    ours = [ln for ln in proc.stderr.splitlines() if "Started a local Ray instance" not in ln]
    assert len(ours) == 1  # one line (besides Ray's own start-up notice)
    # the pre-flight (rcjudge doctor's processor row) refuses it before Ray starts
    assert ours[0].startswith(f"rcjudge: error: batch refused before it started: processor c: "
                              f"{tmp_path}: ")
    assert ours[0].endswith("; see `rcjudge doctor --judge broken-load`")
    assert judgments(url, "broken-load") == set()


def test_a_replica_whose_answer_tokens_hold_too_little_mass_refuses_the_batch(fifty, tmp_path,
                                                                             local_ray):
    """Each replica probes the reference prompt at load (ModelActor); a scripted answer-token
    mass of 0.2 is below the default min_answer_mass 0.5: one line, nothing judged."""
    from judge.batch.run import BatchError, run_batch
    from judge.ensemble.version import load_judge_version
    from judge.ledgers.store import Ledger

    data = {**FAKE, "name": "fake-tail"}
    data["models"] = [{**m, "options": {**m["options"], "answer_mass": 0.2}}
                      if m["name"] == "b" else m for m in FAKE["models"]]
    path = tmp_path / "fake-tail.yaml"
    path.write_text(yaml.safe_dump(data))
    url = f"sqlite:///{tmp_path / 't.db'}"
    with Ledger.open(url) as ledger, pytest.raises(BatchError) as err:
        run_batch([str(p) for p in fifty[:2]], load_judge_version(str(path)), ledger,
                  progress=False)
    message, _, log = str(err.value).partition(" (full log: ")
    assert message == (
        "model 'b' could not load: ModelError: model b: its answer tokens ('yes', 'no') hold "
        "0.2000 of the next-token probability on the reference prompt, below min_answer_mass "
        "0.5: the answers would be read from a tail (docs/judging.md)")
    assert log.endswith(".log)") and "ModelError" in Path(log[:-1]).read_text()
    assert judgments(url, "fake-tail") == set()


def test_a_local_batch_never_joins_a_cluster_it_was_not_given(fifty, tmp_path):
    """A Ray head started with `ray start` on the machine (another user's): Ray's default
    `ray.init()` joins it (and refuses num_cpus); a batch without --ray-address starts its own."""
    env = {k: v for k, v in os.environ.items() if k != "RAY_ADDRESS"}
    env["RAY_AUTH_MODE"] = "disabled"
    ray_bin = os.path.join(os.path.dirname(sys.executable), "ray")
    head = subprocess.Popen([ray_bin, "start", "--head", "--block", "--port", "0",
                             "--num-cpus", "1", "--include-dashboard", "false",
                             "--disable-usage-stats"], stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, text=True, env=env,
                            start_new_session=True)
    try:
        deadline = time.time() + 60
        while time.time() < deadline and head.poll() is None:
            if subprocess.run([ray_bin, "status"], capture_output=True, env=env).returncode == 0:
                break
            time.sleep(1)
        assert head.poll() is None, head.stderr.read()[-2000:]
        url = f"sqlite:///{tmp_path / 'own.db'}"
        listing = tmp_path / "three.txt"
        listing.write_text("".join(f"{p}\n" for p in fifty[:3]))
        proc = subprocess.run(rcjudge("batch", str(listing), "--judge",
                                      str(version_file(tmp_path)), "--db", url, "--json"),
                              capture_output=True, text=True, env=env, timeout=300)
        assert proc.returncode == 0, proc.stderr[-2000:]
        assert judgments(url, "fake-batch") == {p.name for p in fifty[:3]}
    finally:
        os.killpg(head.pid, signal.SIGTERM)
        head.wait(timeout=60)
