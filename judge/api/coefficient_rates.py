"""The coefficients table's rectified rate: a published cell's success rate corrected by
the labels its runs' owners drew at random.

Where it sits: beside :mod:`judge.api.coefficients` (the cells, pure) and under
:meth:`judge.api.catalog.CatalogMixin.coefficients`, which passes a :class:`Rectifier` to
:func:`judge.api.coefficients.published_table`. For each published cell it reads, through
the mode's blind ledger, each owner's rate rows of the cell's judge version
(:func:`judge.learn.rate_inputs.rate_rows`: the owner's judgments, its labels from its own
sampling rounds — the review page's ``sample`` / ``sample-uniform`` — and what the version
trained on) and rectifies the cell's **counted** runs (those ``n`` counts: successes and
failures that count against the policy) that a usable round of their owner covers
(:func:`judge.learn.rates.cell_rates`). Owners' rounds are independent draws with known π,
so their covered runs form one sample (unequal π across owners: the weighted, active form).

Never served: on an ``insufficient`` cell (n < 40: no number at all) and on tier B (a new
label moves the value by one run's error, which publication in blocks of ≥ 5 tasks does not
cover). A cell with no usable label keeps every ``rectified_*`` field empty.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import Any

import sqlalchemy as sa

from judge.api.protocol import CoefficientCell
from judge.ensemble.taxonomy import load_taxonomy
from judge.ledgers import schema as S

TIER_B = ("tier B: no rectified value (a new label would move it by one run's error, which "
          "publication in blocks of at least 5 tasks does not cover)")


class Rectifier:
    """``rectify(cell, stored rows)`` for one read of the table (owners' rows cached)."""

    def __init__(self, ledger: Any) -> None:
        self.ledger = ledger  # the mode's blind ledger (reads no tier-B content column)
        self.tax = load_taxonomy()
        self._covered: dict[tuple[str, str], dict[str, Any]] = {}

    def covered(self, owner: str, judge_version: str) -> dict[str, Any]:
        """run id -> RateRow of ``owner``'s runs a usable round of ``judge_version`` covers."""
        from judge.learn.rate_inputs import rate_rows

        key = (owner, judge_version)
        if key not in self._covered:
            got = rate_rows(self.ledger.owned_by(owner), judge_version, "success", ("policy",))
            self._covered[key] = {r.run_id: r for r in got.covered}
        return self._covered[key]

    def _runs(self, judgment_ids: Sequence[int]) -> list[tuple[str, str]]:
        """(run id, owner) of each judgment."""
        j, r = S.judgments, S.runs
        with self.ledger.engine.connect() as conn:
            got = dict((row.judgment_id, (row.run_id, row.owner)) for row in conn.execute(
                sa.select(j.c.judgment_id, j.c.run_id, r.c.owner)
                .join(r, r.c.run_id == j.c.run_id)
                .where(j.c.judgment_id.in_(list(judgment_ids)))))
        return [got[i] for i in judgment_ids if i in got]

    def __call__(self, cell: CoefficientCell, rows: list[Any]) -> CoefficientCell:
        from judge.learn.rates import cell_rates

        if cell.status != "ok":
            return cell
        if cell.tier != "A":
            return cell.model_copy(update={"rectified_note": TIER_B})
        counted = [r.judgment_id for r in rows
                   if r.success or self.tax.counts_against_policy(r.failure_class)]
        mine = []
        for run_id, owner in self._runs(counted):
            row = self.covered(owner, cell.judge_version).get(run_id)
            if row is not None:
                mine.append(replace(row, cell=(cell.cell_id,)))
        labels = sum(r.y is not None for r in mine)
        if not labels:
            return cell
        rect = cell_rates(mine).rectified
        interval = None if rect.low is None else [round(rect.low, 6), round(rect.high, 6)]
        return cell.model_copy(update={
            "rectified_rate": None if interval is None else round(rect.estimate, 6),
            "rectified_interval": interval, "rectified_method": rect.method,
            "rectified_runs": len(mine), "rectified_labels": labels,
            "rectified_note": rect.note or None})
