"""The rates as a person reads them: ``rcjudge rates`` and ``rcjudge compare`` reports.

Where it sits: after :mod:`judge.learn.rate_inputs` (the rows of one version's rate, what
was left out and why) and :mod:`judge.learn.rates` (the estimators); before the terminal,
``--json`` and ``--html``. Pure: a :class:`~judge.learn.rate_inputs.RateInputs` (and the
recorded rounds, and an optional truth) in, a report dict out, rendered as text or HTML.

Each cell gets three readings, each from the runs it may be read from:

* **judge-only** ("uncorrected"): every run the version judged in the cell
  (``RateInputs.rows``);
* **labels-only** and **rectified**: the runs the rectified rate covers (``RateInputs.covered``:
  inside a usable sampling round's frame, less drawn runs left unlabelled), so a cell says
  how many of its judged runs they are.

:func:`overall` is the one-cell reading of every run (``rcjudge eval``'s report).
"""

from __future__ import annotations

import html
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

from judge.learn.rate_inputs import RateInputError, RateInputs
from judge.learn.rates import (
    ALPHA,
    Rate,
    RateRow,
    by_cell,
    cell_rates,
    compare,
    design_of,
    disagreement,
    pooled,
    split,
)

UNCOVERED = ("no run of this cell is inside a sampling round's frame usable for this "
             "version: no labels-only or rectified reading")
DEMO_TRUTH = "truth (known only in a demo)"
POOLED = ("all",)  # the cell rates.compare gives its pooled comparison


def _none(reading: str, n_runs: int, note: str, alpha: float) -> Rate:
    return Rate(reading, None, None, None, n_runs, 0, "none", note, level=1 - alpha)


def _round_lines(inputs: RateInputs, rounds: Mapping[int, Any]) -> list[dict[str, Any]]:
    return [{"round_id": r, "strategy": rounds[r].strategy,
             "judge_version": rounds[r].judge_version, "seed": rounds[r].seed,
             "candidates": rounds[r].candidates, "drawn": rounds[r].drawn}
            for r in inputs.rounds if r in rounds]


def _truth(rows: Sequence[RateRow], truth: Mapping[str, Any] | None,
           outcome: str) -> dict[str, Any] | None:
    """The truth's rate over ``rows`` (the runs it knows)."""
    if truth is None:
        return None
    known = [bool(getattr(truth[r.run_id].label, outcome)) for r in rows if r.run_id in truth]
    return {"runs": len(known), "successes": sum(known),
            "rate": sum(known) / len(known) if known else None}


def cell_entry(cell: tuple[str, ...], judged: Sequence[RateRow], covered: Sequence[RateRow],
               alpha: float = ALPHA, truth: Mapping[str, Any] | None = None,
               outcome: str = "success") -> dict[str, Any]:
    """One cell's readings: judge-only of ``judged``, the others of ``covered``."""
    arrays = split(judged)
    design = design_of(arrays[2], arrays[4])
    judge_only = cell_rates([replace(r, cell=cell) for r in judged], alpha).judge_only
    if covered:
        got = cell_rates([replace(r, cell=cell) for r in covered], alpha)
        labels_only, rectified = got.labels_only, got.rectified
    else:
        labels_only = _none("labels-only", 0, UNCOVERED, alpha)
        rectified = _none("rectified", 0, UNCOVERED, alpha)
    out = {"cell": list(cell), "runs_judged": len(judged), "runs_covered": len(covered),
           "labels": int(arrays[2].sum()), "design": design,
           "judge_only": judge_only.to_dict(), "labels_only": labels_only.to_dict(),
           "rectified": rectified.to_dict(),
           "disagreement": disagreement(design, arrays, alpha)}
    if truth is not None:
        out["truth"] = _truth(judged, truth, outcome)
    return out


def rates_report(inputs: RateInputs, rounds: Mapping[int, Any],
                 truth: Mapping[str, Any] | None = None, truth_file: str | None = None,
                 alpha: float = ALPHA) -> dict[str, Any]:
    """``rcjudge rates``' report of ``inputs`` (``rounds``: every recorded round by id, as
    :func:`judge.ledgers.rounds.read_frames` gives them; ``truth``: run id -> Truth)."""
    judged, covered = by_cell(inputs.rows), by_cell(inputs.covered)
    cells = [cell_entry(c, rows, covered.get(c, []), alpha, truth, inputs.outcome)
             for c, rows in judged.items()]
    out: dict[str, Any] = {
        "judge_version": inputs.judge_version, "outcome": inputs.outcome,
        "by": list(inputs.by), "level": 1 - alpha, "runs_judged": len(inputs.rows),
        "runs_covered": len(inputs.covered),
        "labels": sum(r.y is not None for r in inputs.rows),
        "rounds": _round_lines(inputs, rounds),
        "no_valid_rectification": inputs.no_valid_rectification,
        "left_out": [{"reason": x.reason, "count": x.count, "detail": x.detail}
                     for x in inputs.left_out],
        "cells": cells, "pooled": None, "truth": None}
    if len(judged) > 1:
        out["pooled"] = _pooled(inputs, alpha, truth)
    if truth is not None:
        out["truth"] = {"file": truth_file, **_truth(inputs.rows, truth, inputs.outcome)}
    return out


def _pooled(inputs: RateInputs, alpha: float, truth: Mapping[str, Any] | None) -> dict:
    """Judge-only over every judged run; labels-only and rectified stratified over the cells
    with covered runs (each weighted by its covered runs)."""
    rows, covered = inputs.rows, inputs.covered
    share = sum(r.vote for r in rows) / len(rows)
    judge_only = Rate("judge-only", share, None, None, len(rows), len(
        [r for r in rows if r.y is not None]), "uncorrected",
        "uncorrected: the judge's votes counted as the truth", level=1 - alpha)
    if covered:
        got = pooled(covered, alpha)
        labels_only, rectified = got.labels_only, got.rectified
    else:
        labels_only = _none("labels-only", 0, UNCOVERED, alpha)
        rectified = _none("rectified", 0, UNCOVERED, alpha)
    out = {"cells": len(by_cell(rows)), "cells_covered": len(by_cell(covered)),
           "runs_judged": len(rows), "runs_covered": len(covered),
           "judge_only": judge_only.to_dict(), "labels_only": labels_only.to_dict(),
           "rectified": rectified.to_dict()}
    if truth is not None:
        out["truth"] = _truth(rows, truth, inputs.outcome)
    return out


def overall(inputs: RateInputs, alpha: float = ALPHA) -> dict[str, Any]:
    """The three readings of every run as one cell (``rcjudge eval``), with the rounds'
    count, what was left out and the line saying no label can rectify the version."""
    cell = ("all",)
    entry = cell_entry(cell, inputs.rows, inputs.covered, alpha)
    return {**entry, "no_valid_rectification": inputs.no_valid_rectification,
            "rounds": len(inputs.rounds),
            "left_out": [{"reason": x.reason, "count": x.count, "detail": x.detail}
                         for x in inputs.left_out]}


# --- compare --------------------------------------------------------------------------

def compare_report(inputs: RateInputs, policy_a: str, policy_b: str,
                   alpha: float = ALPHA) -> dict[str, Any]:
    """``rcjudge compare``: A − B per cell of ``inputs.by[1:]`` (``("all",)`` when none) and
    pooled, from the covered runs of each policy (``inputs.by[0]`` is ``policy``).

    Raises:
        RateInputError: A and B the same, or a policy the version judged no run of.
    """
    if policy_a == policy_b:
        raise RateInputError(f"compare: POLICY_A and POLICY_B are both {policy_a!r}")
    known = sorted({r.cell[0] for r in inputs.rows})
    for name in (policy_a, policy_b):
        if name not in known:
            raise RateInputError(f"policy {name!r}: no run of it judged by "
                                 f"{inputs.judge_version} (policies: {', '.join(known)})")

    def side(rows: Sequence[RateRow], policy: str) -> list[RateRow]:
        return [replace(r, cell=r.cell[1:] or ("all",)) for r in rows if r.cell[0] == policy]

    judged = {p: by_cell(side(inputs.rows, p)) for p in (policy_a, policy_b)}
    cov_a, cov_b = side(inputs.covered, policy_a), side(inputs.covered, policy_b)
    result = compare(cov_a, cov_b, alpha)

    pooled_cells = [x.cell for x in result.cells]

    def one(p: str, c: tuple[str, ...], got: Any) -> dict[str, Any]:
        rows = (judged[p].get(c, []) if c != POOLED
                else [r for x in pooled_cells for r in judged[p][x]])
        jo = sum(r.vote for r in rows) / len(rows) if rows else None
        return {"policy": p, "runs_judged": len(rows), "runs_covered": got.n_runs,
                "labels": got.n_labels, "design": got.design, "judge_only": jo,
                "labels_only": got.labels_only.to_dict(), "rectified": got.rectified.to_dict()}

    def entry(cmp: Any) -> dict[str, Any]:
        return {"cell": list(cmp.cell), "a": one(policy_a, cmp.cell, cmp.a),
                "b": one(policy_b, cmp.cell, cmp.b),
                "rectified": cmp.rectified.to_dict(), "labels_only": cmp.labels_only.to_dict()}

    both = {c for c in judged[policy_a] if c in judged[policy_b]}
    return {"judge_version": inputs.judge_version, "outcome": inputs.outcome,
            "by": list(inputs.by[1:]), "a": policy_a, "b": policy_b, "level": 1 - alpha,
            "cells": [entry(c) for c in result.cells],
            "pooled": None if result.pooled is None or len(result.cells) < 2
            else {**entry(result.pooled), "cells": len(result.cells)},
            "uncovered": sorted(list(c) for c in both if c not in {x.cell for x in result.cells}),
            "unmatched": [list(c) for c in result.unmatched],
            "no_valid_rectification": inputs.no_valid_rectification,
            "left_out": [{"reason": x.reason, "count": x.count, "detail": x.detail}
                         for x in inputs.left_out]}


# --- text -----------------------------------------------------------------------------

def fmt_rate(r: Mapping[str, Any]) -> str:
    """``0.312 [0.152, 0.473]``, the estimate alone, or ``-``."""
    if r.get("estimate") is None:
        return "-"
    if r.get("low") is None:
        return f"{r['estimate']:.3f}"
    return f"{r['estimate']:.3f} [{r['low']:.3f}, {r['high']:.3f}]"


def fmt_diff(d: Mapping[str, Any]) -> str:
    if d.get("estimate") is None:
        return "-"
    p = "" if d.get("p_value") is None else f"  p = {d['p_value']:.3g}"
    return f"{d['estimate']:+.3f} [{d['low']:+.3f}, {d['high']:+.3f}]{p}"


def reading_lines(e: Mapping[str, Any], truth: bool) -> list[str]:
    """The three readings of one entry (and the truth's, the disagreement note)."""
    jo = e["judge_only"]
    lines = [f"    {'judge-only (uncorrected)':<30}{fmt_rate(jo):<26}the judge's votes "
             "counted as the truth"]
    for key, name in (("labels_only", "labels-only"), ("rectified", "rectified")):
        r = e[key]
        lines.append(f"    {name:<30}{fmt_rate(r):<26}{r['method']}")
        if r["note"]:
            lines.append(f"      {r['note']}")
    if truth and e.get("truth") is not None:
        t = e["truth"]
        rate = "-" if t["rate"] is None else f"{t['rate']:.3f}"
        lines.append(f"    {DEMO_TRUTH:<30}{rate:<26}{t['successes']} of {t['runs']} runs")
    if e.get("disagreement"):
        lines.append(f"    ! {e['disagreement']}")
    return lines


def sample_line(r: Mapping[str, Any]) -> str:
    """Where the labels came from: the usable rounds, or none."""
    if not r["rounds"]:
        return "labels: no sampling round usable for this version"
    parts = [f"round {x['round_id']} ({x['strategy']}" + (
        f", seed {x['seed']}" if x["seed"] is not None else "")
        + f": {x['drawn']} drawn of {x['candidates']} candidates)" for x in r["rounds"]]
    return "labels: a sample drawn by " + "; ".join(parts)


def format_rates(r: Mapping[str, Any]) -> str:
    """``rcjudge rates``' text."""
    truth = r["truth"] is not None
    lines = [f"rates of {r['judge_version']} ({r['outcome']}) by {', '.join(r['by'])}: "
             f"{r['runs_judged']} judged run(s); labels-only and rectified read from the "
             f"{r['runs_covered']} inside a usable sampling frame, {r['labels']} labelled",
             sample_line(r)]
    if r["no_valid_rectification"]:
        lines.append(r["no_valid_rectification"])
    for e in r["cells"]:
        lines += ["", "cell " + " · ".join(e["cell"]),
                  f"  runs judged {e['runs_judged']}, covered {e['runs_covered']}, labelled "
                  f"{e['labels']}" + (f" ({e['design']} sample)" if e["labels"] else "")]
        lines += reading_lines(e, truth)
    p = r["pooled"]
    if p is not None:
        lines += ["", f"pooled over {p['cells']} cells (labels-only and rectified: the "
                  f"{p['cells_covered']} with covered runs, stratified, weighted by their runs)",
                  f"  runs judged {p['runs_judged']}, covered {p['runs_covered']}"]
        lines += reading_lines(p, truth)
    if r["left_out"]:
        lines += ["", "left out of the labels-only and rectified readings:"]
        lines += [f"  {x['detail']}" for x in r["left_out"]]
    if truth:
        t = r["truth"]
        lines += ["", f"truth: {t['file']} ({t['successes']} of {t['runs']} judged runs): a "
                  "rate a lab does not know; shown to check the readings against"]
    lines += ["", f"{100 * r['level']:g} % intervals; judge-only has none (its bias is unknown "
              "until runs are labelled); how to read this: docs/rates.md"]
    return "\n".join(lines)


def format_compare(r: Mapping[str, Any]) -> str:
    """``rcjudge compare``'s text."""
    lines = [f"compare {r['a']} (A) with {r['b']} (B), judged by {r['judge_version']} "
             f"({r['outcome']})" + (f", per {', '.join(r['by'])}" if r["by"] else "")
             + ": differences A − B"]
    if r["no_valid_rectification"]:
        lines.append(r["no_valid_rectification"])

    def block(e: Mapping[str, Any], title: str) -> list[str]:
        out = ["", title]
        for key, tag in (("a", "A"), ("b", "B")):
            s = e[key]
            jo = "-" if s["judge_only"] is None else f"{s['judge_only']:.3f}"
            out.append(f"  {tag}: judged {s['runs_judged']}, covered {s['runs_covered']}, "
                       f"labelled {s['labels']}; judge-only {jo} (uncorrected); rectified "
                       f"{fmt_rate(s['rectified'])}; labels-only {fmt_rate(s['labels_only'])}")
        for key, name in (("rectified", "rectified"), ("labels_only", "labels-only")):
            d = e[key]
            out.append(f"  {name + ' A − B':<22}{fmt_diff(d)}  ({d['method']})")
            if d["note"]:
                out.append(f"    {d['note']}")
        return out

    for e in r["cells"]:
        lines += block(e, "cell " + " · ".join(e["cell"]))
    if r["pooled"] is not None:
        lines += block(r["pooled"], f"pooled over the {r['pooled']['cells']} cells both have "
                       "(each weighted by its runs of both policies)")
    if r["uncovered"]:
        lines += ["", "no covered run of one policy (no rectified difference): "
                  + "; ".join(" · ".join(c) for c in r["uncovered"])]
    if r["unmatched"]:
        lines += ["", "cells only one policy has: "
                  + "; ".join(" · ".join(c) for c in r["unmatched"])]
    if r["left_out"]:
        lines += ["", "left out of the rectified readings:"]
        lines += [f"  {x['detail']}" for x in r["left_out"]]
    lines += ["", f"{100 * r['level']:g} % intervals; p: two-sided, where both sides' "
              "intervals are by the CLT; docs/rates.md"]
    return "\n".join(lines)


# --- HTML -----------------------------------------------------------------------------

_CSS = ("body{font:14px/1.4 system-ui,sans-serif;margin:24px;color:#222}"
        "table{border-collapse:collapse;margin:8px 0 18px}td,th{border:1px solid #ccc;"
        "padding:3px 8px;vertical-align:top}th{background:#f3f3f3;text-align:left}"
        ".note{color:#555;font-size:12px}.warning{color:#8a1f11}")


def _e(x: Any) -> str:
    return html.escape(str(x))


def _cell_html(r: Mapping[str, Any]) -> str:
    note = f'<div class="note">{_e(r["method"])}' + (
        f": {_e(r['note'])}" if r["note"] else "") + "</div>"
    return f"<td>{_e(fmt_rate(r))}{note}</td>"


def render_rates_html(r: Mapping[str, Any]) -> str:
    """One self-contained page of ``rcjudge rates`` (no script, nothing loaded)."""
    truth = r["truth"] is not None
    head = ["cell", "runs judged", "covered", "labelled", "sample", "judge-only (uncorrected)",
            "labels-only", "rectified"] + ([DEMO_TRUTH] if truth else [])
    rows = []
    entries = [(" · ".join(e["cell"]), e) for e in r["cells"]]
    if r["pooled"] is not None:
        entries.append((f"pooled over {r['pooled']['cells']} cells", r["pooled"]))
    for name, e in entries:
        t = e.get("truth")
        cells = [f"<td>{_e(name)}" + (f'<div class="warning">{_e(e["disagreement"])}</div>'
                                      if e.get("disagreement") else "") + "</td>",
                 f"<td>{e['runs_judged']}</td>", f"<td>{e['runs_covered']}</td>",
                 f"<td>{e.get('labels', '')}</td>", f"<td>{_e(e.get('design', ''))}</td>",
                 f"<td>{_e(fmt_rate(e['judge_only']))}</td>",
                 _cell_html(e["labels_only"]), _cell_html(e["rectified"])]
        if truth:
            cells.append("<td>-</td>" if t is None or t["rate"] is None else
                         f"<td>{t['rate']:.3f} ({t['successes']} of {t['runs']})</td>")
        rows.append("<tr>" + "".join(cells) + "</tr>")
    th = "".join(f"<th>{_e(h)}</th>" for h in head)
    title = f"rates of {r['judge_version']} ({r['outcome']}) by {', '.join(r['by'])}"
    parts = [f"<h1>{_e(title)}</h1>", f"<p>{_e(format_rates(r).splitlines()[0])}</p>",
             f"<p>{_e(sample_line(r))}</p>"]
    if r["no_valid_rectification"]:
        parts.append(f'<p class="warning">{_e(r["no_valid_rectification"])}</p>')
    parts.append(f'<table id="rates"><thead><tr>{th}</tr></thead><tbody>{"".join(rows)}'
                 "</tbody></table>")
    if r["left_out"]:
        parts.append("<h2>left out of the labels-only and rectified readings</h2><ul>"
                     + "".join(f"<li>{_e(x['detail'])}</li>" for x in r["left_out"]) + "</ul>")
    parts.append(f'<p class="note">{100 * r["level"]:g} % intervals; judge-only has none (its '
                 "bias is unknown until runs are labelled); docs/rates.md</p>")
    return ("<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\">"
            f"<title>{_e(title)}</title><style>{_CSS}</style></head><body>"
            + "\n".join(parts) + "</body></html>\n")
