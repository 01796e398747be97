"""A task's runs on the verdict screen, each linked to its ``rcjudge explain`` page.

The runs are the round's ``evaluation_run`` rows of the task (``episode_id`` is the run id in
the ledger export); a run's page is ``EXPLAIN_DIR/<rcjudge.pages.page_name(run id)>``,
written beforehand by ``rcjudge explain --runs evaluation_run.parquet --out-dir EXPLAIN_DIR``
(``docs/explain.md``). A run whose page is not there is listed without a link. Failures come
first (the policy's, then exempt ones, then rows with ``success`` empty, then successes; table
order within each); only the first :data:`MAX_RUNS` of a task are listed (the rest counted).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pyarrow.compute as pc

from rcjudge.pages import page_href, page_name
from verdict.tables import EXEMPT_FLAG, Inputs

MAX_RUNS = 100


@dataclass(frozen=True)
class RunLink:
    """One ``evaluation_run`` row of a task, as the screen lists it."""

    run_id: str
    success: bool | None
    failure_reason: str | None
    exempt: bool  # success false and counts_against_policy false: not an evaluation row
    href: str | None  # the explain page, None when it was not written


def task_runs(inputs: Inputs, explain_dir: str | Path, base: str) -> dict[str, list[RunLink]]:
    """task_id -> its rows of the round's artifact, failures first, linked where a page exists.

    Args:
        inputs: the round's tables.
        explain_dir: the folder holding the explain pages.
        base: the URL prefix of that folder as the screen sees it (``"explain/"`` when
            served, a path relative to the written page otherwise; ends with ``/``).
    """
    table = inputs.evaluation_run
    table = table.filter(pc.fill_null(pc.equal(table.column("model_artifact"),
                                               inputs.artifact), False))
    flag = (table.column(EXEMPT_FLAG).to_pylist() if EXEMPT_FLAG in table.column_names
            else [None] * table.num_rows)
    folder = Path(explain_dir)
    out: dict[str, list[RunLink]] = {}
    for task, run, ok, reason, counts in zip(
            table.column("task_id").to_pylist(), table.column("episode_id").to_pylist(),
            table.column("success").to_pylist(), table.column("failure_reason").to_pylist(),
            flag, strict=True):
        if task is None or run is None:
            continue
        href = base + page_href(run) if (folder / page_name(run)).is_file() else None
        out.setdefault(task, []).append(
            RunLink(run, ok, reason or None, ok is False and counts is False, href))
    for links in out.values():
        links.sort(key=_rank)  # stable: table order within a rank
    return out


def _rank(r: RunLink) -> int:
    if r.success is False:
        return 1 if r.exempt else 0
    return 2 if r.success is None else 3
