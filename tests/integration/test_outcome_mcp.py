"""The read-only MCP tools through a real MCP client session over stdio (`rcjudge mcp`)."""

from __future__ import annotations

import asyncio
import os
import sys

import pytest

from judge.ledgers import Ledger
from judge.outcomes.store import OutcomeStore

mcp = pytest.importorskip("mcp", reason="needs the mcp extra: pip install -e '.[mcp]'")

FULL_ONLY = {"subtasks", "hand_actions", "mistake_type", "recovery_type", "failure_stage",
             "leakage_groups", "source_metadata", "labeled_by"}


def _server(db: str):
    """``rcjudge mcp --db DB`` as a stdio server, in this interpreter."""
    return mcp.StdioServerParameters(
        command=sys.executable, args=["-m", "rcjudge.cli", "mcp", "--db", db],
        env={"PYTHONPATH": os.environ.get("PYTHONPATH", "")}, cwd=os.getcwd())


def test_get_and_list_over_stdio(tmp_path):
    db = f"sqlite:///{tmp_path / 'l.db'}"
    with Ledger.open(db) as ledger:
        store = OutcomeStore(ledger.engine)
        store.create_dataset("lab/mcp")
        uids = sorted(store.add_sequence("lab/mcp", f"{i}" * 64, f"/b/{i}") for i in range(3))
        for uid, outcome in zip(uids, ["failure", "aborted", "intervention"], strict=True):
            store.put_label("lab/mcp", uid, {"outcome": outcome, "mistake_type": "slip",
                                             "leakage_groups": {"location": "loc_1"}},
                            labeled_by="op-kim")
        expected_full = store.get_label("lab/mcp", uids[0])

    async def talk():
        async with mcp.Client(_server(db)) as client:
            tools = sorted(t.name for t in (await client.list_tools()).tools)
            short = await client.call_tool("get_sequence_outcome", {
                "owner": "lab", "slug": "mcp", "sequenceUid": uids[0]})
            full = await client.call_tool("get_sequence_outcome", {
                "owner": "lab", "slug": "mcp", "sequenceUid": uids[0], "detail": "full"})
            page = await client.call_tool("list_sequence_outcomes", {
                "owner": "lab", "slug": "mcp", "outcome": "failure,intervention", "limit": 1})
            missing = await client.call_tool("get_sequence_outcome", {
                "owner": "lab", "slug": "mcp", "sequenceUid": "seq_none"})
            return tools, short, full, page, missing

    tools, short, full, page, missing = asyncio.run(talk())
    assert tools == ["get_campaign_acceptance_summary", "get_result_acceptance",
                     "get_sequence_outcome", "list_quality_targets", "list_sequence_outcomes"]
    s = short.structured_content
    assert s["outcome"] == "failure" and not (FULL_ONLY & set(s))
    assert full.structured_content == expected_full
    p = page.structured_content
    assert [r["sequence_uid"] for r in p["results"]] == [uids[0]] and p["next"]
    assert missing.is_error
    assert missing.content[0].text == ("Error executing tool get_sequence_outcome: sequence "
                                       "'seq_none': not in dataset lab/mcp")


def test_acceptance_tools_over_stdio(tmp_path, make_bundles):
    """get_result_acceptance, get_campaign_acceptance_summary and list_quality_targets read
    what `rcjudge acceptance` stored, and write nothing."""
    import json

    from judge.outcomes.targets import evaluate, set_targets
    from judge.outcomes.validity import check_dataset, get, review
    from tests.integration.test_acceptance_captures import broken_copy

    good = make_bundles(2, seed=31, width=96, height=64, fps=10)
    bad = broken_copy(good[0], tmp_path / "broken")
    db = f"sqlite:///{tmp_path / 'l.db'}"
    with Ledger.open(db) as ledger:
        store = OutcomeStore(ledger.engine)
        store.create_dataset("lab/acc")
        uids = [store.add_sequence("lab/acc", json.loads((b / "manifest.json").read_text())[
            "bundle_hash"], str(b)) for b in (*good, bad)]
        check_dataset(store, "lab/acc")
        review(store, "lab/acc", uids[1], "quarantine", "rev-ana", "hand out of frame")
        set_targets(store, "lab/acc", {"min_acceptance_rate": 0.5, "max_reject_rate": 0.2,
                                       "max_issue_rate": 0.5}, "c.yaml")
        _, alerted = evaluate(store, "lab/acc")
        expected_result = json.loads(json.dumps(get(store, "lab/acc", uids[1])))

    async def talk():
        async with mcp.Client(_server(db)) as client:
            tools = sorted(t.name for t in (await client.list_tools()).tools)
            one = await client.call_tool("get_result_acceptance", {
                "owner": "lab", "slug": "acc", "sequenceUid": uids[1]})
            summary = await client.call_tool("get_campaign_acceptance_summary", {
                "owner": "lab", "slug": "acc"})
            targets = await client.call_tool("list_quality_targets", {
                "owner": "lab", "slug": "acc"})
            missing = await client.call_tool("get_result_acceptance", {
                "owner": "lab", "slug": "acc", "sequenceUid": "seq_none"})
            nods = await client.call_tool("list_quality_targets", {
                "owner": "lab", "slug": "nope"})
            return tools, one, summary, targets, missing, nods

    tools, one, summary, targets, missing, nods = asyncio.run(talk())
    assert tools == ["get_campaign_acceptance_summary", "get_result_acceptance",
                     "get_sequence_outcome", "list_quality_targets", "list_sequence_outcomes"]
    r = one.structured_content
    assert r == expected_result
    assert (r["sequence_uid"], r["machine_verdict"], r["verdict"]) == (
        uids[1], "accept", "quarantine")
    assert (r["review"]["verdict"], r["review"]["by"], r["review"]["note"]) == (
        "quarantine", "rev-ana", "hand out of frame")
    assert {k: v["status"] for k, v in r["criteria"].items()} == {
        "capture_health": "pass", "frame_rate": "pass", "completeness": "skipped",
        "framing": "insufficient_evidence", "shake": "pass"}
    assert r["criteria"]["framing"]["reasons"] == ["acceptance_no_visibility_detector"]
    assert r["criteria"]["shake"]["pairs"] == 24
    # effective verdicts: accept, quarantine (review), reject; issues: the reject only
    assert summary.structured_content == {
        "dataset": "lab/acc", "checked": 3,
        "counts": {"accept": 1, "quarantine": 1, "reject": 1, "issue": 1},
        "acceptance_rate": 0.3333, "reject_rate": 0.3333, "issue_rate": 0.3333,
        "alerts": [{"target": "max_reject_rate", "limit": 0.2, "value": 0.3333},
                   {"target": "min_acceptance_rate", "limit": 0.5, "value": 0.3333}]}
    at = alerted[0]["crossed_at"]
    assert [a["target"] for a in alerted] == ["max_reject_rate", "min_acceptance_rate"]
    t = targets.structured_content
    assert t["dataset"] == "lab/acc" and all(x.pop("set_at") for x in t["targets"])
    assert t["targets"] == [
        {"target": "max_issue_rate", "metric": "issue_rate", "limit": 0.5, "value": 0.3333,
         "crossed": False, "campaign": "c.yaml", "alerted_at": None},
        {"target": "max_reject_rate", "metric": "reject_rate", "limit": 0.2, "value": 0.3333,
         "crossed": True, "campaign": "c.yaml", "alerted_at": at},
        {"target": "min_acceptance_rate", "metric": "acceptance_rate", "limit": 0.5,
         "value": 0.3333, "crossed": True, "campaign": "c.yaml", "alerted_at": at}]
    assert missing.is_error and missing.content[0].text == (
        "Error executing tool get_result_acceptance: sequence 'seq_none': not in dataset "
        "lab/acc")
    assert nods.is_error and nods.content[0].text == (
        "Error executing tool list_quality_targets: dataset lab/nope: not found")
