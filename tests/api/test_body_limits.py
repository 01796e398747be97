"""Issue 29 item 6: body limits per route, sized from the contract.

The largest valid label (3,600 actions on each hand and 256 subtasks, every string at its
longest, 20 metadata keys) must fit ``PUT …/outcome/``; every other route keeps 64 KiB.
"""

from __future__ import annotations

import json

from judge.api.routes import LABEL_MAX_BODY, MAX_BODY
from judge.outcomes.store import OutcomeStore
from tests.api.conftest import bearer


def largest_label() -> dict:
    def act(i: int, hand: str) -> dict:
        return {"start_ts": round(i * 0.008, 3), "end_ts": round(i * 0.008 + 0.004, 3),
                "action": (hand[0] * 500), "object": "o" * 255, "verb": "v" * 64,
                "contact": True}

    return {"outcome": "partial_success", "progress": 0.5, "quality": 3, "speed": 3,
            "subtasks": [{"label": "s" * 500, "start_ts": round(i * 0.1, 1),
                          "end_ts": round(i * 0.1 + 0.05, 2), "outcome": "failure"}
                         for i in range(256)],
            "hand_actions": {h: [act(i, h) for i in range(3600)] for h in ("left", "right")},
            "mistake_type": "m" * 128, "recovery_type": "r" * 128, "failure_stage": "f" * 128,
            "autonomy_level": "teleoperation", "model_version": "x" * 255,
            "evaluation_membership": "train",
            "leakage_groups": {k: "g" * 255 for k in ("location", "object", "mechanism",
                                                       "operator", "environment_family")},
            "source": "model", "confidence": 0.5,
            "source_metadata": {f"{i:02d}" + "k" * 62: "v" * 512 for i in range(20)}}


def test_the_largest_valid_label_fits_and_other_routes_stay_small(client, service):
    key = service.create_key("lab", "live", ["datasets:read", "datasets:write"])[0]
    assert client.post("/api/v1/datasets/", json={"owner": "lab", "slug": "big"},
                       headers=bearer(key)).status_code == 201
    uid = OutcomeStore(service.modes["live"].engine).add_sequence("lab/big", "b" * 64, "/b",
                                                                  length_s=30.0)
    body = json.dumps(largest_label()).encode()
    assert MAX_BODY < len(body) < LABEL_MAX_BODY / 2  # fits with 2x headroom
    url = f"/api/v1/datasets/lab/big/sequences/{uid}/outcome/"
    r = client.put(url, content=body, headers={**bearer(key),
                                               "Content-Type": "application/json"})
    assert r.status_code == 200, r.text[:300]
    assert len(r.json()["hand_actions"]["right"]) == 3600
    over = b'{"outcome": "failure", "mistake_type": "' + b"x" * LABEL_MAX_BODY + b'"}'
    r = client.put(url, content=over, headers={**bearer(key),
                                               "Content-Type": "application/json"})
    assert r.status_code == 413
    small = json.dumps({"owner": "lab", "slug": "x" * MAX_BODY}).encode()
    r = client.post("/api/v1/datasets/", content=small,
                    headers={**bearer(key), "Content-Type": "application/json"})
    assert (r.status_code, r.json()["detail"]) == (
        413, f"request body of {len(small)} bytes is over the {MAX_BODY}-byte limit")
