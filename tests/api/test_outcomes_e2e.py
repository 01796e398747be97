"""End to end: 10 synthetic bundles judged into a dataset → v1 model labels → a person's v2
through the SDK over real HTTP → history shows both → list with filters and two pages →
LeRobot sidecar export → lines exact.

The bundles get ``env.dataset`` / ``env.episode_index`` in their attribution (and a new
manifest), exactly what ``rcjudge import lerobot`` records, so a v3.0 episode table written
with pyarrow joins them back to their episodes.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import yaml

from judge.api.routes import create_app
from judge.api.server import running
from judge.api.service import JudgeService
from judge.bundle.manifest import write_manifest
from judge.ledgers import Ledger
from judge.outcomes.mapping import expert_times
from judge.outcomes.store import OutcomeStore, sequence_uid
from rcjudge.client import ApiCallError, AsyncClient, Client
from tests.api.conftest import TMP_ROOTS

pytestmark = [pytest.mark.ray, pytest.mark.slow]

FAKE = {"name": "fake-e2e", "models": [
    {"name": "a", "backend": "fake",
     "options": {"script": {"attempt": 0.9, "success": 0.2, "failure_class": "grasp.slip"}}},
    {"name": "b", "backend": "fake", "options": {"script": {"attempt": 0.8, "success": 0.7}}},
    {"name": "c", "backend": "fake",
     "options": {"script": {"attempt": 0.7, "success": 0.3, "failure_class": "grasp.slip"}}}]}
REPO = "lab/synth"


def as_episodes(bundles, out):
    """Copies of the bundles, bundle i recorded as episode i of REPO."""
    copies = []
    for i, src in enumerate(bundles):
        dst = out / src.name
        shutil.copytree(src, dst)
        attr = json.loads((dst / "attribution.json").read_text())
        attr["env"] = {**(attr.get("env") or {}), "dataset": REPO, "episode_index": i}
        (dst / "attribution.json").write_text(json.dumps(attr, indent=2) + "\n")
        paths = [f["path"] for f in json.loads((dst / "manifest.json").read_text())["files"]]
        write_manifest(dst, paths)
        copies.append(dst)
    return copies


def lerobot_meta(root, n):
    (root / "meta" / "episodes" / "chunk-000").mkdir(parents=True)
    (root / "meta" / "info.json").write_text(json.dumps({
        "codebase_version": "v3.0", "repo_id": REPO, "fps": 5, "features": {},
        "data_path": "data/chunk-{chunk_index:03d}/file-{file_index:03d}.parquet",
        "video_path": "videos/{video_key}/chunk-{chunk_index:03d}/file-{file_index:03d}.mp4"}))
    pq.write_table(pa.table({"task_index": [0], "task": ["t"]}), root / "meta" / "tasks.parquet")
    pq.write_table(pa.Table.from_pylist([
        {"episode_index": ep, "tasks": ["t"], "length": 10, "data/chunk_index": 0,
         "data/file_index": 0} for ep in range(n)]),
        root / "meta" / "episodes" / "chunk-000" / "file-000.parquet")


def rcjudge(*args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "RAY_AUTH_MODE": "disabled", "RAY_ADDRESS": "local"}
    return subprocess.run([sys.executable, "-m", "rcjudge.cli", *args], capture_output=True,
                          text=True, env=env, timeout=600)


def test_judge_label_relabel_list_export(make_bundles, tmp_path):
    bundles = as_episodes(make_bundles(10, seed=21, width=96, height=64, fps=5),
                          tmp_path / "runs")
    db = f"sqlite:///{tmp_path / 'ledger.db'}"
    version = tmp_path / "fake-e2e.yaml"
    version.write_text(yaml.safe_dump(FAKE))
    assert rcjudge("datasets", "create", "lab/e2e", "--db", db).returncode == 0
    done = rcjudge("batch", str(tmp_path / "runs"), "--judge", str(version), "--db", db,
                   "--dataset", "lab/e2e", "--json")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["dataset"] == {"name": "lab/e2e", "sequences": 10,
                                                  "labels_written": 10, "labels_unchanged": 0}
    uids = sorted(sequence_uid(json.loads((b / "manifest.json").read_text())["bundle_hash"])
                  for b in bundles)

    service = JudgeService(db, bundle_roots=TMP_ROOTS)
    try:
        key, who = service.create_key("person", "live", ["datasets:read", "datasets:write"])
        OutcomeStore(service.modes["live"].engine).grant("lab/e2e", who.key_id, "edit")
        with running(create_app(service)) as base, Client(base, api_key=key) as client:
            v1 = client.sequence_outcomes.get("lab", "e2e", uids[3])
            assert (v1.version, v1.source, v1.outcome, v1.mistake_type, v1.failure_stage,
                    v1.autonomy_level) == (1, "model", "failure", "grasp.slip", "grasp",
                                           "autonomous")
            assert v1.labeled_by == "judge:fake-e2e"
            v2 = client.sequence_outcomes.set(
                "lab", "e2e", uids[3], outcome="mistake_and_recovery", progress=1.0,
                quality=4, recovery_type="regrasp", evaluation_membership="train",
                leakage_groups={"location": "loc_1"},
                hand_actions={"left": [{"start_ts": 0.0, "end_ts": 1.0, "action": "regrasp",
                                        "verb": "", "contact": True}]})
            assert (v2.version, v2.labeled_by, v2.source) == (2, who.key_id, "human")
            hist = client.sequence_outcomes.history("lab", "e2e", uids[3])
            assert [(h.version, h.is_current, h.source) for h in hist] == [
                (2, True, "human"), (1, False, "model")]
            page1 = client.sequence_outcomes.list("lab", "e2e", source="model",
                                                  outcome=["failure", "aborted"], limit=5)
            page2 = page1.next_page()
            assert [len(page1), len(page2), page2.next] == [5, 4, None]
            assert [i.sequence_uid for i in [*page1, *page2]] == uids[:3] + uids[4:]
            lane = client.sequence_outcomes.list("lab", "e2e",
                                                 outcome="mistake_and_recovery,intervention")
            assert [i.sequence_uid for i in lane] == [uids[3]]
            with pytest.raises(ApiCallError, match=r"^HTTP 400: confidence: is allowed only "
                                                   r"with source 'model' \(source is 'human'\)$"):
                client.sequence_outcomes.set("lab", "e2e", uids[3], outcome="failure",
                                             confidence=0.5)

            import asyncio

            async def read_async():
                async with AsyncClient(base, api_key=key) as aclient:
                    return await aclient.sequence_outcomes.get("lab", "e2e", uids[3])

            assert asyncio.run(read_async()) == client.sequence_outcomes.get("lab", "e2e",
                                                                               uids[3])
    finally:
        service.close()

    root = tmp_path / "lerobot"
    lerobot_meta(root, 10)
    out = rcjudge("lerobot", "export", str(root), "--include-outcomes", "--dataset", "lab/e2e",
                  "--db", db, "--json")
    assert out.returncode == 0, out.stderr
    lines = [json.loads(x) for x in
             (root / "meta" / "avala_sequence_outcomes.jsonl").read_text().splitlines()]
    by_episode = {i: sequence_uid(json.loads((b / "manifest.json").read_text())["bundle_hash"])
                  for i, b in enumerate(bundles)}
    assert [line["episode_index"] for line in lines] == list(range(10))
    assert [line["avala_sequence_uid"] for line in lines] == [by_episode[i] for i in range(10)]
    person = next(line for line in lines if line["avala_sequence_uid"] == uids[3])
    assert person == {
        "episode_index": person["episode_index"], "avala_sequence_uid": uids[3],
        "outcome": "mistake_and_recovery", "outcome_version": 2, "progress": 1.0,
        "quality": 4, "speed": None, "subtasks": [],
        "hand_actions": {"left": [{"start_ts": 0.0, "end_ts": 1.0, "action": "regrasp",
                                   "object": None, "verb": None, "contact": True}],
                         "right": []},
        "mistake_type": None, "recovery_type": "regrasp", "failure_stage": None,
        "autonomy_level": None, "model_version": None, "evaluation_membership": "train",
        "leakage_groups": {"location": "loc_1"}, "outcome_source": "human",
        "outcome_source_metadata": {}, "outcome_confidence": None}
    model = lines[0] if lines[0]["avala_sequence_uid"] != uids[3] else lines[1]
    with Ledger.open(db) as ledger:
        run = next(r for r in ledger.judged_run_ids("fake-e2e")
                   if ledger.get_judgment(r, "fake-e2e").bundle_hash[:32] ==
                   model["avala_sequence_uid"][4:])
        j = ledger.get_judgment(run, "fake-e2e")
        r = ledger.get_run(run)
    expert = expert_times().get(r.attribution.task.id)
    assert model == {
        "episode_index": model["episode_index"], "avala_sequence_uid": model["avala_sequence_uid"],
        "outcome": "failure", "outcome_version": 1, "progress": None, "quality": None,
        "speed": None, "subtasks": [], "hand_actions": {"left": [], "right": []},
        "mistake_type": "grasp.slip", "recovery_type": None, "failure_stage": "grasp",
        "autonomy_level": "autonomous",
        "model_version": f"{r.attribution.policy.name}@{r.attribution.policy.version}",
        "evaluation_membership": None, "leakage_groups": {}, "outcome_source": "model",
        "outcome_source_metadata": {"judge_version": "fake-e2e", "run_id": run,
                                    "cycle_sec": r.cycle_sec,
                                    "attempt_confidence": j.attempt_confidence,
                                    **({"judge_fingerprint": j.fingerprint}
                                       if j.fingerprint else {}),
                                    **({"expert_time_s": expert} if expert else {})},
        "outcome_confidence": j.success_confidence}
    again = rcjudge("batch", str(tmp_path / "runs"), "--judge", str(version), "--db", db,
                    "--dataset", "lab/e2e", "--json")  # resumed: no new versions
    assert json.loads(again.stdout)["dataset"]["labels_unchanged"] == 10
