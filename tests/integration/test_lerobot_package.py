"""The outcome sidecar beside a dataset written by the `lerobot` package itself.

The dataset is the committed fixture ``tests/fixtures/lerobot/pick_cube`` (lerobot 0.6.1,
three episodes; ``tests/fixtures/lerobot/make_dataset.py`` made it). `make test-lerobot`
writes a fresh one with the lerobot of its own Python >= 3.12 environment and points
``RCJUDGE_LEROBOT_DATASET`` at it, to re-check against the writer itself.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
from pathlib import Path

from judge.api.protocol import Attribution
from judge.ledgers import Ledger
from judge.outcomes.release import SIDECAR_KEYS, export_sidecar
from judge.outcomes.store import OutcomeStore

FIXTURE = Path(__file__).parents[1] / "fixtures" / "lerobot" / "pick_cube"


def test_sidecar_beside_a_lerobot_written_dataset(tmp_path):
    root = tmp_path / "ds"
    shutil.copytree(os.environ.get("RCJUDGE_LEROBOT_DATASET") or FIXTURE, root)
    info = json.loads((root / "meta" / "info.json").read_text())
    assert info["codebase_version"].startswith("v3")
    repo = "lab/lerobot_made"
    with Ledger.open(f"sqlite:///{tmp_path / 'l.db'}") as ledger:
        store = OutcomeStore(ledger.engine)
        store.create_dataset("lab/made")
        uids = []
        for ep in (0, 2):  # episode 1 in no sequence
            h = hashlib.sha256(f"{repo}/{ep}".encode()).hexdigest()
            ledger.record_run(Attribution.model_validate({
                "policy": {"vendor": "lab", "name": "act", "version": "1", "checkpoint": "c"},
                "body": {"arm": "so100", "hand": "jaw", "dof": 6, "mount_h_mm": 0,
                         "calibrated_at": "2026-10-01"},
                "task": {"id": "tabletop.pick_place.cube_001", "tier": "A"},
                "env": {"dataset": repo, "episode_index": ep}, "seed": 0}),
                run_id=f"ep{ep}", bundle_uri=f"/b/ep{ep}", bundle_hash=h, duration_s=1.0,
                cycle_sec=1.0)
            uids.append(store.add_sequence("lab/made", h, f"/b/ep{ep}", 1.0))
        store.put_label("lab/made", uids[1], {"outcome": "aborted", "progress": 0.25})
        out = export_sidecar(store, "lab/made", root, repo_id=repo)
    assert (out["episodes"], out["labelled"], out["without_sequence"]) == (3, 1, 1)
    lines = [json.loads(x) for x in
             (root / "meta" / "avala_sequence_outcomes.jsonl").read_text().splitlines()]
    assert lines[:2] == [{"episode_index": 0, "avala_sequence_uid": uids[0], "outcome": None},
                         {"episode_index": 1, "avala_sequence_uid": None, "outcome": None}]
    assert list(lines[2]) == list(SIDECAR_KEYS)
    assert (lines[2]["episode_index"], lines[2]["avala_sequence_uid"], lines[2]["outcome"],
            lines[2]["progress"], lines[2]["outcome_version"]) == (2, uids[1], "aborted",
                                                                   0.25, 1)
