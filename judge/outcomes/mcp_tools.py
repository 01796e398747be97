"""Read-only MCP tools over the outcome labels (``rcjudge mcp``, stdio): after the store.

``get_sequence_outcome(owner, slug, sequenceUid, detail)`` and
``list_sequence_outcomes(owner, slug, outcome, evaluationMembership, source,
autonomyLevel, modelVersion, limit, cursor, detail)``, as in the contract. Both answer
the **short** form by default; ``detail: "full"`` adds subtasks, hand actions, the
mistake / recovery / failure-stage tags, leakage groups, source metadata and the
labeller. Technical validity, as the original document names the tools:
``get_result_acceptance(owner, slug, sequenceUid)`` (one capture: machine and effective
verdict, every criterion with status, reasons and facts, the review),
``get_campaign_acceptance_summary(owner, slug)`` (counts and rates per verdict, issue
rate, the stored targets crossed now) and ``list_quality_targets(owner, slug)``. Nothing
is written (not even alert state: only ``rcjudge acceptance`` records crossings).
Served with the ``mcp`` package (``pip install -e '.[mcp]'``, imported only when served).
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


def get_result_acceptance(store: OutcomeStore, owner: str, slug: str,
                          sequence_uid: str) -> dict[str, Any]:
    from judge.outcomes.validity import get

    store.sequence(store.dataset(f"{owner}/{slug}"), sequence_uid)  # name a missing one
    return get(store, f"{owner}/{slug}", sequence_uid)


def get_campaign_acceptance_summary(store: OutcomeStore, owner: str,
                                    slug: str) -> dict[str, Any]:
    from judge.outcomes.targets import stored_targets
    from judge.outcomes.validity import report

    name = f"{owner}/{slug}"
    return report(store, name, stored_targets(store, name), log=False)


def list_quality_targets(store: OutcomeStore, owner: str, slug: str) -> dict[str, Any]:
    from judge.outcomes.targets import listing

    return {"dataset": f"{owner}/{slug}", "targets": listing(store, f"{owner}/{slug}")}


def build_server(store: OutcomeStore) -> Any:
    """The MCP server with the five read-only tools."""
    try:
        from mcp.server.mcpserver import MCPServer
        from mcp.server.mcpserver.exceptions import ToolError
    except ImportError as exc:
        from judge.errors import ConfigError

        raise ConfigError(f"rcjudge mcp needs the mcp package: pip install -e '.[mcp]' "
                          f"({exc})") from None
    server = MCPServer("rcjudge", instructions="Read-only sequence outcome labels and "
                       "technical validity (docs/outcomes.md).")

    def answer(fn: Any, *args: Any, **kwargs: Any) -> dict[str, Any]:
        try:
            return fn(*args, **kwargs)
        except ValueError as exc:  # OutcomeError and friends: the one-line reason
            raise ToolError(str(exc)) from None

    @server.tool(name="get_sequence_outcome",
                 description="The current outcome label of one sequence (short form; "
                 "detail='full' for subtasks, hand actions, tags, leakage groups, source "
                 "metadata and labeller).")
    def get_sequence_outcome_tool(owner: str, slug: str, sequenceUid: str,
                                  detail: str = "short") -> dict[str, Any]:
        return answer(get_sequence_outcome, store, owner, slug, sequenceUid, detail)

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
        return answer(list_sequence_outcomes, store, owner, slug, outcome=outcome,
                      evaluation_membership=evaluationMembership, source=source,
                      autonomy_level=autonomyLevel, model_version=modelVersion,
                      limit=limit, cursor=cursor, detail=detail)

    @server.tool(name="get_result_acceptance",
                 description="Technical validity of one capture: machine verdict, effective "
                 "verdict, every criterion with status, reason codes and facts, and a "
                 "reviewer's override (who, when, note).")
    def get_result_acceptance_tool(owner: str, slug: str, sequenceUid: str) -> dict[str, Any]:
        return answer(get_result_acceptance, store, owner, slug, sequenceUid)

    @server.tool(name="get_campaign_acceptance_summary",
                 description="A dataset's checked captures: counts per effective verdict, "
                 "acceptance / reject / issue rates, and the quality targets crossed now.")
    def get_campaign_acceptance_summary_tool(owner: str, slug: str) -> dict[str, Any]:
        return answer(get_campaign_acceptance_summary, store, owner, slug)

    @server.tool(name="list_quality_targets",
                 description="A dataset's quality targets: limit, current value, whether "
                 "each is crossed now, and since when its crossing was alerted.")
    def list_quality_targets_tool(owner: str, slug: str) -> dict[str, Any]:
        return answer(list_quality_targets, store, owner, slug)

    return server
