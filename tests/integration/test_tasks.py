"""A lab's own task ids (issue 38, item 5): a home of their own (``$RCJUDGE_HOME/tasks.yaml``,
``rcjudge tasks add|list``), checked when a bundle is created or imported, never an edit of a
file inside the package; a task added later changes no judge version's fingerprint."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest
import yaml

from bench.bagsynth import ARM, FINGERS, BagSpec, write_bag
from judge.bundle.create import create_bundle
from judge.config import configs_dir
from judge.errors import BundleError
from rcjudge.cli import main
from tests.integration.test_create import recordings

LAB_TASK = "lab.pick_place.red_cube"
INSTRUCTION = "pick up the red cube and put it in the bin"
ADD = f"add its instruction: rcjudge tasks add {LAB_TASK} \"<instruction>\""
FAKE = {"name": "fake-tasks", "models": [
    {"name": n, "backend": "fake", "options": {"script": {"attempt": 0.9, "success": 0.8}}}
    for n in "abc"]}


@pytest.fixture
def home(tmp_path, monkeypatch) -> Path:
    path = tmp_path / "home"
    monkeypatch.setenv("RCJUDGE_HOME", str(path))
    return path


@pytest.fixture
def lab_recording(tmp_path_factory) -> dict:
    """The recordings of ``test_create``, their attribution naming the lab's own task."""
    rec = dict(recordings(str(tmp_path_factory.getbasetemp() / "recordings")))
    attr = json.loads(Path(rec["attribution"]).read_text())
    attr["task"] = {"id": LAB_TASK, "tier": "A"}
    path = tmp_path_factory.mktemp("lab") / "attribution.json"
    path.write_text(json.dumps(attr))
    return {**rec, "attribution": str(path)}


def test_bundle_create_refuses_an_unknown_task_until_it_is_added(home, lab_recording,
                                                                  tmp_path, capsys):
    rec = lab_recording
    out = tmp_path / "bundle"
    with pytest.raises(BundleError) as err:
        create_bundle(rec["videos"], rec["signals"], rec["attribution"], str(out))
    assert str(err.value) == (f"{rec['attribution']}: task '{LAB_TASK}' is not in the task "
                              f"catalog; {ADD}")
    assert not out.exists()
    assert main(["tasks", "add", LAB_TASK, INSTRUCTION]) == 0
    assert capsys.readouterr().out == f"{LAB_TASK}: added to {home / 'tasks.yaml'}\n"
    assert yaml.safe_load((home / "tasks.yaml").read_text()) == {"tasks": {LAB_TASK:
                                                                           INSTRUCTION}}
    create_bundle(rec["videos"], rec["signals"], rec["attribution"], str(out))
    from judge.ensemble.judge import admit

    assert admit(str(out)).instruction == INSTRUCTION
    assert main(["tasks", "list", "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert rows[-1] == {"id": LAB_TASK, "instruction": INSTRUCTION, "source": "home"}
    assert {r["source"] for r in rows[:-1]} == {"package"}
    assert main(["tasks", "list"]) == 0
    assert re.search(rf"^{re.escape(LAB_TASK)} +\(home\)  {INSTRUCTION}$",
                     capsys.readouterr().out, re.M)
    # another RCJUDGE_HOME lacks the task: inspect warns, judging refuses (the same line)
    shutil.rmtree(home)
    assert main(["inspect", str(out), "--json"]) == 0
    warnings = json.loads(capsys.readouterr().out)["warnings"]
    assert f"task '{LAB_TASK}' is not in the task catalog; {ADD}" in warnings
    from judge.tasks import UnknownTaskError

    with pytest.raises(UnknownTaskError, match=f"^task '{LAB_TASK}' is not in the task "
                                               "catalog; add its instruction"):
        admit(str(out))


def test_import_rosbag_checks_the_task_before_reading_the_bag(home, tmp_path, capsys):
    bag = write_bag(tmp_path / "b", "mcap", BagSpec(seconds=0.5))
    mapping = tmp_path / "mapping.yaml"
    mapping.write_text(yaml.safe_dump({
        "cameras": {"front": "/cam/front", "side": "/cam/side/compressed",
                    "wrist": "/cam/wrist"},
        "joints": {"topic": "/joint_states", "names": list(ARM)},
        "gripper": {"profile": "franka-hand", "width": {"joints": list(FINGERS)}},
        "attribution": {
            "policy": {"vendor": "lab", "name": "pi0", "version": "1", "checkpoint": "c"},
            "body": {"arm": "panda", "hand": "franka-hand", "dof": 7, "mount_h_mm": 800,
                     "calibrated_at": "2026-01-01"},
            "task": {"id": LAB_TASK, "tier": "A"}}}))
    out = tmp_path / "out"
    argv = ["import", "rosbag", str(bag), "--mapping", str(mapping), "--out", str(out)]
    assert main(argv) == 2
    assert capsys.readouterr().err == (f"rcjudge: error: {mapping}: task '{LAB_TASK}' is not "
                                       f"in the task catalog; {ADD}\n")
    assert not out.exists()
    assert main(["tasks", "add", LAB_TASK, INSTRUCTION]) == 0
    assert main(argv) == 0


def test_an_id_keeps_its_instruction(home, capsys):
    shipped = "tabletop.pick_place.cube_001"
    assert main(["tasks", "add", shipped, "another wording"]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"rcjudge: error: task '{shipped}' is already in "
                          f"{configs_dir() / 'tasks.yaml'} with the instruction 'pick up the "
                          "orange cube and put it on the gray tray'; an id keeps its "
                          "instruction")
    assert main(["tasks", "add", LAB_TASK, INSTRUCTION]) == 0
    assert main(["tasks", "add", LAB_TASK, INSTRUCTION]) == 0  # the same again: no change
    assert capsys.readouterr().out.splitlines()[-1] == f"{LAB_TASK}: already in " \
                                                       f"{home / 'tasks.yaml'}"
    assert main(["tasks", "add", LAB_TASK, "pick the red cube"]) == 2
    assert f"is already in {home / 'tasks.yaml'}" in capsys.readouterr().err
    for bad_id, text, message in (("has space", "x", "task id 'has space': expected 1-200 "
                                   "characters without spaces or control characters"),
                                  ("ok.id", " ", "task ok.id: the instruction must be one "
                                   "line of 1-500 characters (got 0)")):
        assert main(["tasks", "add", bad_id, text]) == 2
        assert capsys.readouterr().err == f"rcjudge: error: {message}\n"
    # a shipped id redefined by hand in the lab's file is refused wherever the catalog is read
    (home / "tasks.yaml").write_text(yaml.safe_dump({"tasks": {shipped: "move it"}}))
    assert main(["tasks", "list"]) == 2
    assert capsys.readouterr().err == (
        f"rcjudge: error: {home / 'tasks.yaml'}: task '{shipped}' is defined in "
        f"{configs_dir() / 'tasks.yaml'} with another instruction; a task id has one "
        "instruction: give yours a new id\n")


def test_a_task_added_later_changes_no_fingerprint(home, tmp_path):
    from judge.ensemble.fingerprint import fingerprint
    from judge.ensemble.taxonomy import load_taxonomy
    from judge.ensemble.version import JudgeVersion

    version = JudgeVersion.model_validate(FAKE)
    before = fingerprint(version, load_taxonomy())
    assert main(["tasks", "add", LAB_TASK, INSTRUCTION]) == 0
    assert fingerprint(version, load_taxonomy()) == before
