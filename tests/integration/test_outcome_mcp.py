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
        params = mcp.StdioServerParameters(
            command=sys.executable, args=["-m", "rcjudge.cli", "mcp", "--db", db],
            env={"PYTHONPATH": os.environ.get("PYTHONPATH", "")}, cwd=os.getcwd())
        async with mcp.Client(params) as client:
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
    assert tools == ["get_sequence_outcome", "list_sequence_outcomes"]
    s = short.structured_content
    assert s["outcome"] == "failure" and not (FULL_ONLY & set(s))
    assert full.structured_content == expected_full
    p = page.structured_content
    assert [r["sequence_uid"] for r in p["results"]] == [uids[0]] and p["next"]
    assert missing.is_error
    assert missing.content[0].text == ("Error executing tool get_sequence_outcome: sequence "
                                       "'seq_none': not in dataset lab/mcp")
