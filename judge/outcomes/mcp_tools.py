"""Read-only MCP tools over the outcome labels (``rcjudge mcp``, stdio): after the store.

``get_sequence_outcome(owner, slug, sequenceUid, detail)`` and
``list_sequence_outcomes(owner, slug, outcome, evaluationMembership, source,
autonomyLevel, modelVersion, limit, cursor, detail)``, as in the contract. Both answer
the **short** form by default; ``detail: "full"`` adds subtasks, hand actions, the
mistake / recovery / failure-stage tags, leakage groups, source metadata and the
labeller. Nothing is written. Served with the ``mcp`` package (``pip install -e '.[mcp]'``,
imported only when served).
"""

from __future__ import annotations

from typing import Any

from judge.outcomes.store import OutcomeStore

SHORT = ("uid", "sequence_uid", "version", "is_current", "outcome", "progress", "quality",
         "speed", "autonomy_level", "model_version", "evaluation_membership", "source",
         "confidence", "created_at", "updated_at")
DETAILS = ("short", "full")


def shaped(label: dict[str, Any], detail: str) -> dict[str, Any]:
    """A label in the short form, or whole for ``full``."""
    if detail not in DETAILS:
        raise ValueError(f"detail {detail!r}: expected short or full")
    return dict(label) if detail == "full" else {k: label[k] for k in SHORT}


def get_sequence_outcome(store: OutcomeStore, owner: str, slug: str, sequence_uid: str,
                         detail: str = "short") -> dict[str, Any]:
    return shaped(store.get_label(f"{owner}/{slug}", sequence_uid), detail)


def list_sequence_outcomes(store: OutcomeStore, owner: str, slug: str, *,
                           outcome: str | None = None, evaluation_membership: str | None = None,
                           source: str | None = None, autonomy_level: str | None = None,
                           model_version: str | None = None, limit: int = 100,
                           cursor: str | None = None, detail: str = "short") -> dict[str, Any]:
    page = store.list_labels(f"{owner}/{slug}", filters={
        "outcome": outcome, "evaluation_membership": evaluation_membership, "source": source,
        "autonomy_level": autonomy_level}, model_version=model_version, limit=limit,
        cursor=cursor)
    return {"results": [shaped(r, detail) for r in page["results"]], "next": page["next"],
            "previous": page["previous"]}


def build_server(store: OutcomeStore) -> Any:
    """The MCP server with the two read-only tools."""
    try:
        from mcp.server.mcpserver import MCPServer
        from mcp.server.mcpserver.exceptions import ToolError
    except ImportError as exc:
        from judge.errors import ConfigError

        raise ConfigError(f"rcjudge mcp needs the mcp package: pip install -e '.[mcp]' "
                          f"({exc})") from None
    server = MCPServer("rcjudge", instructions="Read-only sequence outcome labels "
                       "(docs/outcomes.md).")

    @server.tool(name="get_sequence_outcome",
                 description="The current outcome label of one sequence (short form; "
                 "detail='full' for subtasks, hand actions, tags, leakage groups, source "
                 "metadata and labeller).")
    def get_sequence_outcome_tool(owner: str, slug: str, sequenceUid: str,
                                  detail: str = "short") -> dict[str, Any]:
        try:
            return get_sequence_outcome(store, owner, slug, sequenceUid, detail)
        except ValueError as exc:  # OutcomeError and friends: the one-line reason
            raise ToolError(str(exc)) from None

    @server.tool(name="list_sequence_outcomes",
                 description="Current outcome labels of a dataset, paged (cursor), filtered "
                 "by outcome, evaluationMembership, source, autonomyLevel (one value or a "
                 "comma list) and modelVersion (exact).")
    def list_sequence_outcomes_tool(owner: str, slug: str, outcome: str | None = None,
                                    evaluationMembership: str | None = None,
                                    source: str | None = None,
                                    autonomyLevel: str | None = None,
                                    modelVersion: str | None = None,
                                    limit: int = 100, cursor: str | None = None,
                                    detail: str = "short") -> dict[str, Any]:
        try:
            return list_sequence_outcomes(
                store, owner, slug, outcome=outcome, evaluation_membership=evaluationMembership,
                source=source, autonomy_level=autonomyLevel, model_version=modelVersion,
                limit=limit, cursor=cursor, detail=detail)
        except ValueError as exc:
            raise ToolError(str(exc)) from None

    return server
