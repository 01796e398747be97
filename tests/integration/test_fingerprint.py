"""Judge versions pin what they judge with: fingerprints, and the ledgers refusing a changed one."""

from __future__ import annotations

import json
import shutil

import pytest
import yaml

from judge.config import SamplingConfig, configs_dir
from judge.ensemble.fingerprint import fingerprint
from judge.ensemble.judge import Judge
from judge.ensemble.taxonomy import load_taxonomy
from judge.ensemble.version import JudgeVersion
from judge.ledgers.errors import JudgeVersionChanged, LedgerError
from judge.ledgers.records import Run
from judge.ledgers.store import Ledger
from models.base import BackendSpec
from models.fake import FakeBackend
from rcjudge.cli import main


def version_with_files(folder, **changes) -> JudgeVersion:
    data = {"name": "fp-v1", "models": [
        {"name": "a", "backend": "transformers", "path": str(folder / "a")},
        {"name": "b", "backend": "fake", "options": {"script": {"attempt": 0.9}}},
        {"name": "c", "backend": "fake"}]}
    data.update(changes)
    return JudgeVersion.model_validate(data)


@pytest.fixture
def model_folder(tmp_path):
    (tmp_path / "m" / "a").mkdir(parents=True)
    (tmp_path / "m" / "a" / "model.safetensors").write_bytes(b"weights-1")
    (tmp_path / "m" / "a" / "tokenizer.json").write_text("{}")
    return tmp_path / "m"


def test_each_part_that_can_change_an_answer_changes_the_fingerprint(model_folder, tmp_path):
    tax = load_taxonomy()
    base = fingerprint(version_with_files(model_folder), tax)
    assert base == fingerprint(version_with_files(model_folder), tax)  # deterministic
    assert sorted(base.parts) == ["frames", "models.a", "models.b", "models.c", "prompts",
                                  "sampling", "taxonomy", "vote"]

    def changed(version: JudgeVersion, taxonomy=tax) -> list[str]:
        return fingerprint(version, taxonomy).changed(base.parts)

    # where the files are, which card and what share of it: no answer changes
    shutil.copytree(model_folder, tmp_path / "moved")
    models = version_with_files(model_folder).model_dump()["models"]
    assert changed(version_with_files(tmp_path / "moved")) == []
    on_gpu = [fingerprint(version_with_files(model_folder, models=[
        {**models[0], "device": device, "gpu_share": share}, models[1], models[2]]), tax)
        for device, share in (("cuda:0", 0.2), ("cuda:1", 0.5))]
    assert on_gpu[0] == on_gpu[1] and on_gpu[0].changed(base.parts) == ["models.a"]  # cpu->cuda
    # every part that can
    prompts = {"attempt": "Attempted? {instruction}"}
    assert changed(version_with_files(model_folder, prompts=prompts)) == ["prompts"]
    assert changed(version_with_files(model_folder, frames={"images_per_question": 4})) == \
        ["frames"]
    assert changed(version_with_files(model_folder, vote={"yes_threshold": 0.6})) == ["vote"]
    assert changed(version_with_files(model_folder, sampling=SamplingConfig(
        sample={"frames_per_camera": 8}))) == ["sampling"]
    assert changed(version_with_files(model_folder, models=[
        {**models[0], "max_pixels": 1024}, models[1], models[2]])) == ["models.a"]
    assert changed(version_with_files(model_folder, models=[
        models[0], {**models[1], "options": {"script": {"attempt": 0.1}}}, models[2]])) == \
        ["models.b"]
    data = yaml.safe_load((configs_dir() / "taxonomy.yaml").read_text())
    data["classes"]["hardware.estop"]["counts_against_policy"] = True
    (tmp_path / "taxonomy.yaml").write_text(yaml.safe_dump(data))
    assert changed(version_with_files(model_folder),
                   load_taxonomy(str(tmp_path / "taxonomy.yaml"))) == ["taxonomy"]
    (model_folder / "a" / "model.safetensors").write_bytes(b"weights-2")
    assert changed(version_with_files(model_folder)) == ["models.a"]


def fake_judge(version: JudgeVersion) -> Judge:
    backends = [FakeBackend(BackendSpec(name=m.name, backend="fake", options=m.options))
                for m in version.models]
    for b in backends:
        b.load()
    return Judge(version, backends=backends)


FAKE = {"name": "fake-fp", "models": [
    {"name": f"m{i}", "backend": "fake", "options": {"script": {"attempt": 0.9, "success": 0.8}}}
    for i in range(3)]}


@pytest.fixture(scope="module")
def bundle(make_bundles):
    return str(make_bundles(1, seed=3, outcome="grasp.slip", width=96, height=64, fps=10)[0])


def record(ledger: Ledger, judge: Judge, uri: str):
    from judge.ensemble.judge import prepare

    p = prepare(uri, judge.version)
    j = judge.judge_prepared(p)
    run = Run(run_id=p.run_id, bundle_uri=p.uri, bundle_hash=p.bundle_hash,
              attribution=p.attribution, duration_s=p.duration_s, cycle_sec=p.cycle_sec)
    return j, ledger.record(run, j)


def test_a_changed_version_under_the_same_name_is_refused_naming_what_changed(bundle, tmp_path):
    v1 = JudgeVersion.model_validate(FAKE)
    with Ledger.open(f"sqlite:///{tmp_path / 'l.db'}") as ledger:
        judge = fake_judge(v1)
        ledger.register_version(v1.name, judge.fingerprint.digest, judge.fingerprint.parts)
        j, written = record(ledger, judge, bundle)
        assert written.judgment and j.fingerprint == judge.fingerprint.digest
        assert ledger.get_judgment(written.run_id, "fake-fp").fingerprint == j.fingerprint
        assert ledger.version_fingerprint("fake-fp") == (j.fingerprint,
                                                          judge.fingerprint.parts)
        edited = v1.model_copy(update={"sampling": SamplingConfig(
            sample={"frames_per_camera": 8})})
        judge2 = fake_judge(edited)
        with pytest.raises(JudgeVersionChanged, match=(
                rf"^judge version 'fake-fp' judged with fingerprint {j.fingerprint[:12]}…, now "
                rf"it is {judge2.fingerprint.digest[:12]}…: changed: sampling\. The same version "
                r"never judges two ways: create a new judge version")):
            ledger.register_version("fake-fp", judge2.fingerprint.digest,
                                    judge2.fingerprint.parts)
        with pytest.raises(JudgeVersionChanged):  # the write itself refuses it too
            record(ledger, judge2, bundle)
        assert ledger.counts()["judgments"] == 1


def test_an_edited_task_instruction_is_refused_for_the_same_version(bundle, tmp_path,
                                                                    monkeypatch):
    v1 = JudgeVersion.model_validate(FAKE)
    with Ledger.open(f"sqlite:///{tmp_path / 'l.db'}") as ledger:
        record(ledger, fake_judge(v1), bundle)
        configs = tmp_path / "configs"
        shutil.copytree(configs_dir(), configs)
        data = yaml.safe_load((configs / "tasks.yaml").read_text())
        data["tasks"] = {k: v + " quickly" for k, v in data["tasks"].items()}
        (configs / "tasks.yaml").write_text(yaml.safe_dump(data))
        monkeypatch.setenv("RCJUDGE_CONFIGS", str(configs))
        try:
            other = make_copy(bundle, tmp_path)  # another run of the same task
            with pytest.raises(LedgerError, match=(
                    r"judge version 'fake-fp' judged task '[^']+' with another instruction "
                    r"\(sha256 [0-9a-f]{12}…, now [0-9a-f]{12}…\): its entry in the task "
                    r"catalog changed")):
                record(ledger, fake_judge(v1), other)
        finally:
            monkeypatch.delenv("RCJUDGE_CONFIGS")
        assert ledger.counts()["judgments"] == 1


def make_copy(bundle: str, tmp_path) -> str:
    """The same rollout as another bundle: a different seed in attribution.json, re-hashed."""
    from judge.bundle.manifest import write_manifest

    dst = tmp_path / "copy"
    shutil.copytree(bundle, dst)
    attr = json.loads((dst / "attribution.json").read_text())
    attr["seed"] = "another"
    (dst / "attribution.json").write_text(json.dumps(attr))
    manifest = json.loads((dst / "manifest.json").read_text())
    write_manifest(dst, [f["path"] for f in manifest["files"]])
    return str(dst)


def test_judges_show_prints_the_fingerprint_and_compares_with_the_ledger(tmp_path, capsys):
    path = tmp_path / "fake-fp.yaml"
    path.write_text(yaml.safe_dump(FAKE))
    url = f"sqlite:///{tmp_path / 'l.db'}"
    Ledger.open(url).close()  # judges show reads a ledger, never creates one
    assert main(["judges", "show", str(path), "--db", url, "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    fp = fingerprint(JudgeVersion.model_validate(FAKE), load_taxonomy())
    assert out["fingerprint"] == fp.digest and out["ledger"] is None
    assert {n: p["sha256"] for n, p in out["parts"].items()} == fp.parts
    assert out["parts"]["models.m0"]["content"]["options"] == FAKE["models"][0]["options"]
    with Ledger.open(url) as ledger:
        ledger.register_version("fake-fp", "0" * 64, {**fp.parts, "prompts": "1" * 64})
    assert main(["judges", "show", str(path), "--db", url]) == 0
    assert capsys.readouterr().out.splitlines()[-1] == (
        "ledger: judged with 0000000000000000, changed since: prompts")


def test_settings_added_later_at_their_defaults_leave_the_fingerprint_as_it_was(model_folder):
    """The fingers section (width + actuator detection) and the impact floor are newer than
    the first fingerprints: at their defaults the sampling part hashes exactly as before
    they existed; a changed setting is a changed part."""
    from judge.ensemble.fingerprint import version_parts

    taxonomy = load_taxonomy()
    base = version_with_files(model_folder)
    parts = version_parts(base, taxonomy)
    assert parts["sampling"] == {  # the sampling part as the first fingerprints hashed it
        "contacts": {"force_on_n": 3.0, "force_off_n": 1.0, "min_contact_s": 0.05,
                     "effort_window_s": 0.31, "impact_on_sigma": 12.0, "impact_off_sigma": 5.0,
                     "min_gap_s": 0.2},
        "sample": {"frames_per_camera": 16, "dense_half_window_s": 0.4, "dense_step_s": 0.1,
                   "snap_sparse_to_keyframes": True}}
    before = fingerprint(base, taxonomy).parts
    for changed in ({"fingers": {"settle_s": 0.2}}, {"contacts": {"impact_min_nm": 300.0}}):
        version = version_with_files(model_folder, sampling=changed)
        assert fingerprint(version, taxonomy).changed(before) == ["sampling"], changed
    floored = version_parts(version_with_files(
        model_folder, sampling={"contacts": {"impact_min_nm": 300.0}}), taxonomy)
    assert floored["sampling"]["contacts"]["impact_min_nm"] == 300.0
