"""``build_cards``: three tables in, one card per task out (``spec/verdict.md``).

Stages, each a plain function so a benchmark can time them one by one:
:func:`verdict.tables.load_inputs` → :func:`verdict.metrics.compute` →
:func:`verdict.rules.align` + :func:`verdict.rules.decide` → :func:`make_cards`
(evidence, hedge, summary per task) → :func:`order_cards` (grouped by verdict
in the spec's order, 능력 불일치 before 평가 미실시, task_spec order within).
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

import pyarrow as pa

from verdict.evidence import build_evidence, hedge_and_missing
from verdict.metrics import Metrics, compute
from verdict.model import CANDIDATE, CAUSES, NOT_TRAINED, VERDICTS, Card, card_to_dict
from verdict.rules import Aligned, Decision, align, decide
from verdict.summary import TextBackend, default_summary, model_prompt, model_summary_problem
from verdict.tables import Inputs, load_inputs
from verdict.view import TaskView, task_views

TableSource = str | Path | pa.Table


def card_for(v: TaskView) -> Card:
    """The card of one task with the rules' summary."""
    hedge, missing = hedge_and_missing(v)
    evaluated = v.n_rows > 0
    recapture = v.verdict != CANDIDATE and v.has_row
    return Card(
        task_id=v.task_id, model_artifact=v.artifact, verdict=v.verdict,
        blocked_cause=v.cause if v.verdict == NOT_TRAINED else None,
        success_rate=v.success_rate if evaluated else None,
        failure_total=v.failure_total if evaluated else None,
        top_failure_reason=v.top_reason if evaluated else None,
        top_failure_count=v.top_count if evaluated else None,
        top_failure_share=v.top_share if evaluated else None,
        cycle_sec_median=v.cycle_median if evaluated else None,
        more_episode_count=v.more,
        recapture_site=v.capture_site if recapture else None,
        recapture_hand=v.robot_hand_type if recapture else None,
        evidence=build_evidence(v), summary=default_summary(v), hedge=hedge,
        missing=missing,
    )


def with_model_summary(card: Card, backend: TextBackend, columns: Iterable[str]) -> Card:
    """Ask ``backend`` for the summary; keep it only if it passes the checks.

    A rejected or failing model leaves the rules' sentence and records why in
    ``summary_note`` (``summary_source`` is ``fallback``).
    """
    data = card_to_dict(card)
    try:
        text = str(backend(model_prompt(data, card.summary))).strip()
    except Exception as exc:  # a backend failure must not lose the card
        return _replace(card, summary_source="fallback",
                        summary_note=f"model failed: {type(exc).__name__}: {exc}")
    problem = model_summary_problem(text, data, columns)
    if problem:
        return _replace(card, summary_source="fallback",
                        summary_note=f"model summary rejected ({problem}): {text}")
    return _replace(card, summary=text, summary_source="model", summary_note=None)


def _replace(card: Card, **changes: object) -> Card:
    from dataclasses import replace

    return replace(card, **changes)


def make_cards(al: Aligned, m: Metrics, d: Decision, artifact: str) -> list[Card]:
    """One card per task, in task_spec order."""
    return [card_for(v) for v in task_views(al, m, d, artifact)]


def order_cards(cards: list[Card]) -> list[Card]:
    """Group by verdict in the spec's order; 능력 불일치 before 평가 미실시; stable within."""
    rank = {v: i for i, v in enumerate(VERDICTS)}
    cause = {c: i for i, c in enumerate(CAUSES)}
    return sorted(cards, key=lambda c: (rank[c.verdict], cause.get(c.blocked_cause, -1)))


def build_from_inputs(inputs: Inputs, summary_backend: TextBackend | None = None) -> list[Card]:
    """Cards of one round from already loaded :class:`verdict.tables.Inputs`."""
    metrics = compute(inputs)
    aligned = align(inputs)
    decision = decide(aligned, metrics)
    cards = make_cards(aligned, metrics, decision, inputs.artifact)
    if summary_backend is not None:
        columns = set().union(*(inputs.columns(t) for t in
                                ("evaluation_run", "task_spec", "dataset_index")))
        cards = [with_model_summary(c, summary_backend, columns) for c in cards]
    return order_cards(cards)


def build_cards(evaluation_run: TableSource, task_spec: TableSource,
                dataset_index: TableSource, artifact: str,
                summary_backend: TextBackend | None = None) -> list[Card]:
    """Build one card per task of ``task_spec`` for the round's ``artifact``.

    Args:
        evaluation_run: Arrow table or ``.parquet``/``.csv``/``.jsonl`` path.
        task_spec: Arrow table or path; one card per row.
        dataset_index: Arrow table or path.
        artifact: the ``model_artifact`` judged this round; other artifacts' rows
            are ignored, and a task without rows still gets a card.
        summary_backend: optional text backend (``prompt -> text``) that may write
            each summary; accepted only when it passes the checks.

    Returns:
        Cards grouped by verdict in the spec's order.

    Raises:
        VerdictInputError: a table is unreadable, lacks columns or has bad keys.
    """
    inputs = load_inputs(evaluation_run, task_spec, dataset_index, artifact)
    return build_from_inputs(inputs, summary_backend)
