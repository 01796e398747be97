"""Split by leakage group, release slices, the two-axes filters and the LeRobot sidecar."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from judge.api.protocol import Attribution
from judge.ledgers import Ledger
from judge.outcomes.release import SIDECAR_KEYS, export_sidecar, release, split
from judge.outcomes.store import OutcomeError, OutcomeStore
from rcjudge.cli import main


@pytest.fixture
def ledger(tmp_path):
    with Ledger.open(f"sqlite:///{tmp_path / 'l.db'}") as led:
        yield led


def h(name: str) -> str:
    return hashlib.sha256(name.encode()).hexdigest()


# 12 sequences; location/object values chain some of them together
GROUPS = [("L1", "O1"), ("L1", "O2"), ("L2", "O2"), ("L3", "O3"), ("L4", "O4"), ("L4", "O5"),
          ("L5", "O6"), ("L6", "O7"), ("L7", "O7"), ("L8", "O8"), ("L9", "O9"), ("L9", "O10")]


def filled(ledger: Ledger) -> tuple[OutcomeStore, list[str]]:
    store = OutcomeStore(ledger.engine)
    store.create_dataset("lab/rollouts")
    uids = []
    for i, (loc, obj) in enumerate(GROUPS):
        uid = store.add_sequence("lab/rollouts", h(f"s{i}"), f"/b/{i}")
        store.put_label("lab/rollouts", uid, {
            "outcome": ["failure", "mistake_and_recovery", "intervention", "unsafe",
                        "expert_success"][i % 5],
            "leakage_groups": {"location": loc, "object": obj, "operator": f"op{i % 2}"}})
        uids.append(uid)
    return store, uids


@pytest.mark.parametrize("seed", [0, 1, 2, 3])
def test_split_holds_out_whole_groups(ledger, seed):
    store, _ = filled(ledger)
    store.add_sequence("lab/rollouts", h("unlabelled"), "/b/u")
    out = split(store, "lab/rollouts", ["location", "object"], 0.2, seed=seed)
    # components: {0,1,2} {3} {4,5} {6} {7,8} {9} {10,11}: 7 groups
    assert (out["groups"], out["unlabelled_skipped"]) == (7, 1)
    train = release(store, "lab/rollouts", "train")
    held = release(store, "lab/rollouts", "held_out_eval")
    assert len(train) + len(held) == 12 and len(held) >= 0.2 * 12
    assert out["held_out_eval"] == len(held)
    held_values = {(k, v) for r in held for k, v in r["leakage_groups"].items()
                   if k in ("location", "object")}
    train_values = {(k, v) for r in train for k, v in r["leakage_groups"].items()
                    if k in ("location", "object")}
    assert held_values & train_values == set()  # no held-out group value in the train release
    assert all(r["evaluation_membership"] == "train" for r in train)
    assert {r["sequence_uid"] for r in held} & {r["sequence_uid"] for r in train} == set()
    again = split(store, "lab/rollouts", ["location", "object"], 0.2, seed=seed)
    assert again["versions_written"] == 0  # the same split writes no new versions


def test_split_keeps_the_label_and_records_a_version(ledger):
    store, uids = filled(ledger)
    split(store, "lab/rollouts", ["location"], 0.5, seed=7)
    hist = store.history("lab/rollouts", uids[0])
    assert [v["version"] for v in hist] == [2, 1]
    assert hist[0]["labeled_by"] == "split"
    assert {k: v for k, v in hist[0].items() if k not in (
        "uid", "version", "is_current", "evaluation_membership", "labeled_by", "created_at",
        "updated_at")} == {k: v for k, v in hist[1].items() if k not in (
            "uid", "version", "is_current", "evaluation_membership", "labeled_by",
            "created_at", "updated_at")}
    with pytest.raises(OutcomeError, match=r"^--by site: unknown key\(s\) site; known: "):
        split(store, "lab/rollouts", ["site"], 0.2)
    with pytest.raises(OutcomeError, match=r"^--held-out 1.5: must be between 0 and 1"):
        split(store, "lab/rollouts", ["location"], 1.5)


def test_recovery_lane_is_the_outcome_filter_and_never_unsafe(ledger):
    store, _ = filled(ledger)
    lane = [r["sequence_uid"] for r in release(store, "lab/rollouts", "recovery")]
    listed = store.list_labels("lab/rollouts",
                               filters={"outcome": "mistake_and_recovery,intervention"})
    assert lane == [r["sequence_uid"] for r in listed["results"]]
    assert len(lane) == 5  # i % 5 in (1, 2) of 12
    assert all(r["outcome"] != "unsafe" for r in release(store, "lab/rollouts", "recovery"))


# --- LeRobot sidecar ---------------------------------------------------------------------
TASK = "Pick up the cube."


def v3_meta(root: Path, n: int) -> Path:
    (root / "meta" / "episodes" / "chunk-000").mkdir(parents=True)
    (root / "meta" / "info.json").write_text(json.dumps({
        "codebase_version": "v3.0", "repo_id": "lab/pick_cube", "fps": 10, "features": {},
        "data_path": "data/chunk-{chunk_index:03d}/file-{file_index:03d}.parquet",
        "video_path": "videos/{video_key}/chunk-{chunk_index:03d}/file-{file_index:03d}.mp4"}))
    pq.write_table(pa.table({"task_index": [0], "task": [TASK]}), root / "meta" /
                   "tasks.parquet")
    pq.write_table(pa.Table.from_pylist([
        {"episode_index": ep, "tasks": [TASK], "length": 10, "data/chunk_index": 0,
         "data/file_index": 0, "dataset_from_index": 10 * ep,
         "dataset_to_index": 10 * ep + 10} for ep in range(n)]),
        root / "meta" / "episodes" / "chunk-000" / "file-000.parquet")
    return root


def v21_meta(root: Path, n: int) -> Path:
    (root / "meta").mkdir(parents=True)
    (root / "meta" / "info.json").write_text(json.dumps({
        "codebase_version": "v2.1", "fps": 10, "features": {}, "chunks_size": 1000,
        "data_path": "data/chunk-{episode_chunk:03d}/episode_{episode_index:06d}.parquet",
        "video_path": "videos/chunk-{episode_chunk:03d}/{video_key}/"
                      "episode_{episode_index:06d}.mp4"}))
    (root / "meta" / "episodes.jsonl").write_text("".join(
        json.dumps({"episode_index": ep, "tasks": [TASK], "length": 10}) + "\n"
        for ep in range(n)))
    return root


def imported_runs(ledger: Ledger, repo: str, episodes: list[int]) -> list[str]:
    """Runs as `rcjudge import lerobot` records them (env.dataset + env.episode_index)."""
    store = OutcomeStore(ledger.engine)
    store.create_dataset("lab/pick")
    uids = []
    for ep in episodes:
        attribution = Attribution.model_validate({
            "policy": {"vendor": "lab", "name": "act", "version": "1", "checkpoint": "c"},
            "body": {"arm": "so100", "hand": "jaw", "dof": 6, "mount_h_mm": 0,
                     "calibrated_at": "2026-10-01"},
            "task": {"id": "tabletop.pick_place.cube_001", "tier": "A"},
            "env": {"dataset": repo, "episode_index": ep}, "seed": 0})
        ledger.record_run(attribution, run_id=f"ep{ep}", bundle_uri=f"/b/ep{ep}",
                          bundle_hash=h(f"{repo}{ep}"), duration_s=1.0, cycle_sec=1.0)
        uids.append(store.add_sequence("lab/pick", h(f"{repo}{ep}"), f"/b/ep{ep}", 1.0))
    return uids


@pytest.mark.parametrize("layout", ["v3.0", "v2.1"])
def test_sidecar_lines_exact(ledger, tmp_path, layout, capsys):
    root = (v3_meta if layout == "v3.0" else v21_meta)(tmp_path / "ds", 3)
    repo = "lab/pick_cube" if layout == "v3.0" else "ds"  # v2.1: the folder name
    uids = imported_runs(ledger, repo, [0, 1])  # episode 2 is in no sequence
    store = OutcomeStore(ledger.engine)
    store.put_label("lab/pick", uids[0], {"outcome": "failure", "subtasks": [
        {"label": "grasp", "start_ts": 0, "end_ts": 0.5, "outcome": "failure"}],
        "hand_actions": {"right": [{"start_ts": 0, "end_ts": 0.5, "action": "reach",
                                    "object": "", "contact": False}]},
        "leakage_groups": {"location": "loc_1"}, "source": "model", "confidence": 0.25,
        "source_metadata": {"judge_version": "fake-v1"}})
    store.put_label("lab/pick", uids[0], {"outcome": "partial_success", "progress": 0.5,
                                          "quality": 3, "evaluation_membership": "train"})
    out = export_sidecar(store, "lab/pick", root)
    assert out == {"path": str(root / "meta" / "avala_sequence_outcomes.jsonl"),
                   "episodes": 3, "labelled": 1, "without_sequence": 1}
    lines = (root / "meta" / "avala_sequence_outcomes.jsonl").read_text().splitlines()
    assert [json.loads(line) for line in lines] == [
        {"episode_index": 0, "avala_sequence_uid": uids[0], "outcome": "partial_success",
         "outcome_version": 2, "progress": 0.5, "quality": 3, "speed": None, "subtasks": [],
         "hand_actions": {"left": [], "right": []}, "mistake_type": None,
         "recovery_type": None, "failure_stage": None, "autonomy_level": None,
         "model_version": None, "evaluation_membership": "train", "leakage_groups": {},
         "outcome_source": "human", "outcome_source_metadata": {}, "outcome_confidence": None},
        {"episode_index": 1, "avala_sequence_uid": uids[1], "outcome": None},
        {"episode_index": 2, "avala_sequence_uid": None, "outcome": None}]
    assert list(json.loads(lines[0])) == list(SIDECAR_KEYS)
    # the CLI, and without --include-outcomes
    db = str(ledger.engine.url)
    assert main(["export", "lerobot", str(root), "--include-outcomes", "--dataset",
                 "lab/pick", "--db", db, "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["labelled"] == 1
    assert main(["export", "lerobot", str(root), "--dataset", "lab/pick", "--db", db]) == 2
    assert capsys.readouterr().err == ("rcjudge: error: rcjudge export lerobot writes the "
                                       "outcome sidecar only: pass --include-outcomes\n")

