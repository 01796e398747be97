"""Technical validity on real bundles: verdicts, a review, quality targets, the two filters."""

from __future__ import annotations

import json
import logging
import shutil

import pytest

from judge.bundle.manifest import write_manifest
from judge.ledgers import Ledger
from judge.outcomes.acceptance import Campaign, check_capture
from judge.outcomes.store import OutcomeStore
from judge.outcomes.validity import check_dataset, report, review, select
from rcjudge.cli import main


def broken_copy(src, dst):
    """A copy whose MCAP lost its second half (the manifest rewritten: intake passes)."""
    shutil.copytree(src, dst)
    mcap = next(dst.glob("*.mcap"))
    data = mcap.read_bytes()
    mcap.write_bytes(data[: len(data) // 2])
    paths = [f["path"] for f in json.loads((dst / "manifest.json").read_text())["files"]]
    write_manifest(dst, paths)
    return dst


@pytest.fixture(scope="module")
def four(make_bundles, tmp_path_factory):
    """Two healthy bundles and two broken copies of them."""
    good = make_bundles(2, seed=31, width=96, height=64, fps=10)
    out = tmp_path_factory.mktemp("broken")
    return [*good, *(broken_copy(b, out / b.name) for b in good)]


def test_a_healthy_capture(four):
    res = check_capture(str(four[0]), Campaign(requested_length_s=1000.0))
    c = res["criteria"]
    assert {k: v["status"] for k, v in c.items()} == {
        "capture_health": "pass", "frame_rate": "pass", "completeness": "fail",
        "framing": "insufficient_evidence", "shake": "pass"}
    assert c["completeness"]["reasons"] == ["acceptance_too_short"]
    assert c["framing"]["reasons"] == ["acceptance_no_visibility_detector"]
    assert {k: (v["status"], v["median_fps"]) for k, v in c["frame_rate"]["cameras"].items()} \
        == {"front": ("pass", 10.0), "side": ("pass", 10.0), "top": ("pass", 10.0)}
    assert c["shake"]["pairs"] == 24  # 8 pairs x 3 cameras
    assert res["verdict"] == "quarantine"
    assert check_capture(str(four[0]))["verdict"] == "accept"  # nothing asked of its length
    missing = check_capture(str(four[0]), Campaign(required_channels=["/joint_states",
                                                                       "/wrist_force"]))
    assert (missing["verdict"], missing["criteria"]["capture_health"]) == (
        "reject", {"status": "fail", "reasons": ["acceptance_missing_channel"],
                   "missing": ["/wrist_force"]})


def test_a_truncated_mcap_is_rejected(four):
    res = check_capture(str(four[2]))
    health = res["criteria"]["capture_health"]
    assert (res["verdict"], health["status"], health["reasons"]) == (
        "reject", "fail", ["acceptance_mcap_invalid"])
    assert {k: v["status"] for k, v in res["criteria"].items() if k != "capture_health"} == {
        "frame_rate": "skipped", "completeness": "skipped", "framing": "skipped",
        "shake": "skipped"}


def test_review_targets_and_the_two_filters(four, tmp_path, caplog, capsys):
    db = f"sqlite:///{tmp_path / 'l.db'}"
    with Ledger.open(db) as ledger:
        store = OutcomeStore(ledger.engine)
        store.create_dataset("lab/mixed")
        uids = []
        for b in four:
            manifest = json.loads((b / "manifest.json").read_text())
            uids.append(store.add_sequence("lab/mixed", manifest["bundle_hash"], str(b)))
        # healthy+failure, healthy+success, broken+success, broken+failure
        for uid, outcome in zip(uids, ["failure", "expert_success", "expert_success",
                                       "failure"], strict=True):
            store.put_label("lab/mixed", uid, {"outcome": outcome})
        rows = check_dataset(store, "lab/mixed")
        assert [r["verdict"] for r in rows] == ["accept", "accept", "reject", "reject"]

        clean = select(store, "lab/mixed", clean=True)
        assert sorted((r["outcome"], r["verdict"]) for r in clean) == [
            ("expert_success", "accept"), ("failure", "accept")]  # the failure is kept
        wins = select(store, "lab/mixed", outcomes=["expert_success", "slow_success"])
        assert sorted((r["outcome"], r["verdict"]) for r in wins) == [
            ("expert_success", "accept"), ("expert_success", "reject")]  # broken one shown

        with caplog.at_level(logging.WARNING, logger="rcjudge.outcomes"):
            out = report(store, "lab/mixed", {"min_acceptance_rate": 0.8,
                                              "max_reject_rate": 0.5})
        assert out == {"dataset": "lab/mixed", "checked": 4, "acceptance_rate": 0.5,
                       "counts": {"accept": 2, "quarantine": 0, "reject": 2, "issue": 2},
                       "reject_rate": 0.5, "issue_rate": 0.5,
                       "alerts": [{"target": "min_acceptance_rate", "limit": 0.8,
                                   "value": 0.5}]}
        assert [r.getMessage() for r in caplog.records] == [
            "quality target crossed: lab/mixed min_acceptance_rate: acceptance_rate = 0.5000 "
            "(limit 0.8)"]

        reviewed = review(store, "lab/mixed", uids[2], "quarantine", "rev-ana", "re-export")
        assert (reviewed["machine_verdict"], reviewed["verdict"], reviewed["review"]["by"],
                reviewed["review"]["note"]) == ("reject", "quarantine", "rev-ana", "re-export")
        assert reviewed["review"]["at"]
        assert report(store, "lab/mixed", {})["reject_rate"] == 0.25
    campaign = tmp_path / "campaign.yaml"
    campaign.write_text("targets: {max_issue_rate: 0.2}\n")
    assert main(["acceptance", "report", "lab/mixed", "--campaign", str(campaign), "--db",
                 db]) == 0
    assert capsys.readouterr().out.splitlines()[-1] == "ALERT max_issue_rate: 0.5 (limit 0.2)"
    campaign.write_text("targets: {max_issue_rate: 0.2}\nshake: 3\n")
    assert main(["acceptance", "report", "lab/mixed", "--campaign", str(campaign), "--db",
                 db]) == 2
    assert capsys.readouterr().err.startswith(f"rcjudge: error: {campaign}: shake: Extra "
                                              "inputs are not permitted")
