"""The eval report as a person reads it: a terminal table, or a folder with ``report.json``,
one self-contained ``report.html`` and the reliability diagrams as PNG.

Last stage of ``rcjudge eval``: :func:`judge.learn.evaluate.evaluate` makes the report
dict; this module only renders it. The HTML page loads nothing from outside: styles are
inline and each diagram is embedded as a ``data:`` URI. matplotlib is imported inside
:func:`reliability_png` (Agg canvas, no pyplot), so importing this module stays light.
"""

from __future__ import annotations

import base64
import html
import io
import json
import os
from pathlib import Path
from typing import Any

from judge.learn.evaluate import ONE_ANSWER_SHARE, QUESTIONS
from judge.learn.truth import EvalError

METRICS = (("n", "n"), ("accuracy", "accuracy"), ("precision", "precision"),
           ("recall", "recall"), ("roc_auc", "ROC-AUC"), ("ece", "ECE"),
           ("brier", "Brier"), ("brier_skill", "Brier skill"),
           ("mean_confidence", "mean confidence"))
#: The rows of the terminal table (the HTML shows every metric).
TEXT_METRICS = ("n", "accuracy", "precision", "recall", "roc_auc", "ece", "brier",
                "brier_skill")


def check_out_dir(path: str) -> None:
    """Refuse, before any work, an ``--out`` folder that cannot be made or written.

    Raises:
        EvalError: naming the path and what stands in the way.
    """
    target = Path(path)
    if target.exists() and not target.is_dir():
        raise EvalError(f"--out {path}: is a file; expected a folder to write the report in")
    probe = target
    while not probe.exists():  # the folders still to be made: the first existing one decides
        probe = probe.parent
    if not probe.is_dir():
        raise EvalError(f"--out {path}: cannot be made: {probe} is a file, not a folder")
    if not os.access(probe, os.W_OK | os.X_OK):
        raise EvalError(f"--out {path}: cannot be written: {probe} is not writable")


def fmt(x: Any, digits: int = 4) -> str:
    """A metric as text: 4 decimals, ``-`` for None, integers as they are."""
    if x is None:
        return "-"
    if isinstance(x, bool) or isinstance(x, int):
        return str(x)
    return f"{x:.{digits}f}"


def fmt_ci(ci: list[float] | None) -> str:
    return "" if ci is None else f"[{ci[0]:.4f}, {ci[1]:.4f}]"


def _cell(scores: dict[str, Any], key: str) -> str:
    value = fmt(scores.get(key))
    ci = scores.get(f"{key}_ci")
    return f"{value} {fmt_ci(ci)}".strip()


def runs_line(r: dict[str, Any]) -> str:
    """How many labelled runs, how many not judged, trained on (excluded) and scored."""
    runs = r["runs"]
    names = [r["judge"]] + ([r["compare"]] if r["compare"] else [])

    def by(part: str) -> str:
        if len(names) == 1:
            return ""
        return " (" + ", ".join(f"{n}: {runs[part]['by_version'][n]}" for n in names) + ")"

    return (f"{runs['labelled']} labelled, {runs['not_judged']['count']} not judged"
            f"{by('not_judged')}, {runs['trained_on']['count']} trained on and excluded"
            f"{by('trained_on')}, {runs['scored']} scored: {runs['scored_on']}")


def _flagged(r: dict[str, Any]) -> list[tuple[str, str, str]]:
    """(version, question, sentence) of each question a version answers (nearly) alike."""
    out = []
    for name, v in r["versions"].items():
        for q in QUESTIONS:
            s = v[q]
            if not s.get("n") or not s["one_answer"]["flag"]:
                continue
            o = s["one_answer"]
            out.append((name, q, f"ONE ANSWER: {name} answers {q} = {o['answer']} to "
                        f"{100 * o['share']:.1f} % of the {s['n']} runs (flagged at >= "
                        f"{100 * ONE_ANSWER_SHARE:.0f} %): its accuracy and ECE describe the "
                        f"base rate, not the judge; Brier skill {fmt(s['brier_skill'])} (0: no "
                        f"better than always saying the base rate {fmt(s['base_rate'])})"))
    return out


def one_answer_lines(r: dict[str, Any]) -> list[str]:
    """The warnings of the text report: one line per flagged version and question."""
    return [line for _, _, line in _flagged(r)]


def one_answer_html(r: dict[str, Any]) -> str:
    """The same warnings as HTML paragraphs (``id="one-answer-VERSION-QUESTION"``)."""
    return "".join(f'<p class="warning" id="one-answer-{_e(n)}-{q}">{_e(line)}</p>'
                   for n, q, line in _flagged(r))


def truth_line(r: dict[str, Any]) -> str:
    t = r["truth"]
    where = f"label file {t['file']}" if t["source"] == "file" else "the ledger's operator labels"
    near = f", {t['near_threshold_given']} with near_threshold" if t["near_threshold_given"] else ""
    return f"truth: {where} ({t['labelled_runs']} runs{near})"


# --- text ---------------------------------------------------------------------------

def version_heads(names: list[str]) -> list[str]:
    """Column heads: the name alone, or ``A: name`` / ``B: name`` when two are compared."""
    if len(names) < 2:
        return list(names)
    return [f"{tag}: {n}" for tag, n in zip("AB", names, strict=False)]


def difference_line(names: list[str]) -> str:
    """What the difference column holds: which version is subtracted from which."""
    return f"B − A: {names[1]} minus {names[0]} (the second version minus the first)"


def rates_lines(r: dict[str, Any]) -> list[str]:
    """Each version's success rate over every run it judged: judge-only (uncorrected),
    labels-only and rectified (docs/rates.md), or the line saying no label can rectify it."""
    from judge.learn.rates_report import fmt_rate, reading_lines

    lines = ["success rate of every run each version judged (the ledger's sampled labels it "
             "never trained on; per cell: `rcjudge rates`, docs/rates.md)"]
    for name, e in r["rates"].items():
        sample = f" ({e['design']} sample)" if e["labels"] else ""
        lines.append(f"  {name}: {e['runs_judged']} run(s) judged, {e['runs_covered']} inside "
                     f"a usable sampling frame, {e['labels']} labelled{sample}")
        if e["no_valid_rectification"]:
            lines += [f"    {'judge-only (uncorrected)':<30}{fmt_rate(e['judge_only'])}",
                      f"    {e['no_valid_rectification']}"]
        else:
            lines += reading_lines(e, truth=False)
    return lines


def format_eval(r: dict[str, Any]) -> str:
    """The report as a compact terminal table (``--json`` has everything)."""
    names = list(r["versions"])
    vs = [r["versions"][n] for n in names]
    diff = r["differences"]
    heads = version_heads(names)
    head = f"{'':<9}{'':<16}" + "".join(f"{h[:26]:>28}" for h in heads) + (
        f"{'B − A':>28}" if diff else "")
    lines = [f"eval {' vs '.join(names)}", truth_line(r), "runs: " + runs_line(r), ""]
    if diff:
        lines.append(difference_line(names))
    lines += [head, "-" * len(head)]
    for q in QUESTIONS:
        for key, label in (m for m in METRICS if m[0] in TEXT_METRICS):
            cells = [_cell(v[q], key) for v in vs]
            if diff:
                cells.append(_cell(diff[q], key) if key in ("accuracy", "ece", "brier")
                             else "")
            lines.append(f"{q if key == 'n' else '':<9}{label:<16}"
                         + "".join(f"{c:>28}" for c in cells))
    warnings = one_answer_lines(r)
    if warnings:
        lines += ["", *warnings]
    fc = [v["failure_class"] for v in vs]
    cells = [_cell(c, "accuracy") for c in fc] + ([_cell(diff["failure_class"], "accuracy")]
                                                  if diff else [])
    lines.append(f"{'class':<9}{'n':<16}" + "".join(f"{c['n']:>28}" for c in fc))
    lines.append(f"{'':<9}{'accuracy':<16}" + "".join(f"{c:>28}" for c in cells))
    for part, title in (("per_task", "task"), ("per_outcome", "true outcome")):
        lines += ["", f"{'success accuracy per ' + title:<32}{'n':>6}"
                  + "".join(f"{n[:18]:>20}" for n in names)]
        for key, row in vs[0][part].items():
            lines.append(f"  {key[:30]:<30}{row['n']:>6}" + "".join(
                f"{fmt(v[part][key]['success_accuracy']):>20}" for v in vs))
    if vs[0]["near_threshold"]:
        lines += ["", f"{'near threshold (att. / succ.)':<32}{'n':>6}"
                  + "".join(f"{n[:18]:>20}" for n in names)]
        for part in ("near", "other"):
            n = vs[0]["near_threshold"][part]["n"]
            lines.append(f"  {part:<30}{n:>6}" + "".join(
                f"{fmt(v['near_threshold'][part]['attempt'].get('accuracy'))} / "
                f"{fmt(v['near_threshold'][part]['success'].get('accuracy'))}".rjust(20)
                for v in vs))
    if r["flips"] is not None:
        lines += ["", f"flips ({len(r['flips'])} runs changed an answer):"]
        for f in r["flips"][:20]:
            lines.append(f"  {f['run_id']:<30} " + ", ".join(
                f"{q} -> {str(f['answers'][names[1]][q]).lower()} (truth "
                f"{str(f['truth'][q]).lower()}, {f['right'][q]} right)" for q in f["changed"]))
        if len(r["flips"]) > 20:
            lines.append(f"  … and {len(r['flips']) - 20} more (--json lists all)")
    if r.get("rates"):
        lines += ["", *rates_lines(r)]
    b = r["bootstrap"]
    lines += ["", f"intervals: 95 % percentile bootstrap, {b['resamples']} resamples of the "
              f"runs, seed {b['seed']}"]
    if r.get("written"):
        lines.append("wrote " + ", ".join(r["written"]))
    return "\n".join(lines)


# --- pictures -----------------------------------------------------------------------

def reliability_png(r: dict[str, Any], question: str) -> bytes:
    """The reliability diagram of ``{question}_confidence`` as PNG bytes."""
    buf = io.BytesIO()
    reliability_figure(r, question).savefig(buf, format="png")
    return buf.getvalue()


def reliability_figure(r: dict[str, Any], question: str) -> Any:
    """The reliability diagram of ``{question}_confidence``, every version on one axes, each
    bar labelled with the runs in its bin (a matplotlib Figure on an Agg canvas)."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=(5.6, 4.4), dpi=100)
    FigureCanvasAgg(fig)
    ax = fig.add_subplot()
    ax.plot([0.5, 1.0], [0.5, 1.0], ls="--", color="grey", lw=1, label="calibrated")
    names = list(r["versions"])
    width = 0.05 / len(names)
    for k, name in enumerate(names):
        s = r["versions"][name][question]
        full = [b for b in s["bins"] if b["n"]]
        colour = f"C{k}"
        xs = [b["lo"] + width * (k + 0.5) for b in full]
        ax.bar(xs, [b["accuracy"] for b in full],
               width=width * 0.9, alpha=0.6, color=colour,
               label=f"{name} (ECE {fmt(s['ece'])}, n {s['n']})")
        for x, b in zip(xs, full, strict=True):
            ax.text(x, b["accuracy"] + 0.015, str(b["n"]), ha="center", va="bottom",
                    fontsize=6, color=colour)
        ax.plot([b["mean_confidence"] for b in full], [b["accuracy"] for b in full], "o",
                ms=4, color=colour, markeredgecolor="black")
    ax.set_xlim(0.5, 1.0)
    ax.set_ylim(0.0, 1.3)  # room above the bars for the legend
    ax.set_yticks([0, 0.2, 0.4, 0.6, 0.8, 1.0])
    ax.set_xlabel(f"{question}_confidence (bins of 0.05; dots: mean confidence; "
                  "bar labels: runs in the bin)", fontsize=8)
    ax.set_ylabel("share of answers right")
    ax.set_title(f"reliability of {question}_confidence")
    ax.legend(loc="upper left", fontsize=8)
    fig.tight_layout()
    return fig


# --- HTML ---------------------------------------------------------------------------

_CSS = """body{font:14px/1.4 system-ui,sans-serif;margin:24px;color:#222}
table{border-collapse:collapse;margin:8px 0 18px}td,th{border:1px solid #ccc;padding:3px 8px}
th{background:#f3f3f3;text-align:left}td.num{text-align:right;font-variant-numeric:tabular-nums}
img{border:1px solid #ddd;margin:4px 12px 4px 0}.note{color:#555}
.warning{color:#8a1f11;background:#fdecea;padding:6px 10px;border-left:4px solid #c0392b}"""


def _e(x: Any) -> str:
    return html.escape(str(x))


def _table(head: list[str], rows: list[list[str]], cls: str) -> str:
    th = "".join(f"<th>{_e(h)}</th>" for h in head)
    body = "".join("<tr>" + "".join(f'<td class="num">{_e(c)}</td>' if k else f"<td>{_e(c)}</td>"
                                    for k, c in enumerate(row)) + "</tr>" for row in rows)
    return f'<table class="{cls}"><thead><tr>{th}</tr></thead><tbody>{body}</tbody></table>'


def render_html(r: dict[str, Any], pngs: dict[str, bytes]) -> str:
    """One self-contained page: every table of the report and the diagrams as data: URIs."""
    names = list(r["versions"])
    vs = [r["versions"][n] for n in names]
    diff = r["differences"]
    head = ["metric", *version_heads(names)] + (
        [f"B − A ({names[1]} minus {names[0]})"] if diff else [])
    parts = [f"<h1>eval {_e(' vs '.join(names))}</h1>",
             f'<p id="truth">{_e(truth_line(r))}</p>', f'<p id="runs">{_e(runs_line(r))}</p>',
             one_answer_html(r)]
    if r.get("rates"):
        parts.append(rates_html(r))
    for q in QUESTIONS:
        rows = [[label, *(_cell(v[q], key) for v in vs)]
                + ([_cell(diff[q], key) if key in ("accuracy", "ece", "brier") else ""]
                   if diff else [])
                for key, label in METRICS]
        parts += [f"<h2>{q}</h2>", _table(head, rows, f"question {q}")]
    parts.append("<h2>reliability</h2>")
    parts += [f'<img id="reliability-{q}" alt="reliability of {q}_confidence" '
              f'src="data:image/png;base64,{base64.b64encode(pngs[q]).decode()}">'
              for q in QUESTIONS if q in pngs]
    parts.append("<h2>failure class</h2>")
    fc_rows = [["n", *(str(v["failure_class"]["n"]) for v in vs)] + ([""] if diff else []),
               ["accuracy", *(_cell(v["failure_class"], "accuracy") for v in vs)]
               + ([_cell(diff["failure_class"], "accuracy")] if diff else [])]
    parts.append(_table(head, fc_rows, "failure-class"))
    for name, v in zip(names, vs, strict=True):
        conf = v["failure_class"]["confusion"]
        judged = sorted({j for row in conf.values() for j in row})
        rows = [[t, *(str(row.get(j, 0)) for j in judged), fmt(v["failure_class"]["per_class"]
                                                                [t]["accuracy"])]
                for t, row in conf.items()]
        parts += [f"<h3>confusion of {_e(name)}: true class (rows) × judged class</h3>",
                  _table(["true \\ judged", *judged, "accuracy"], rows, "confusion")]
    for part, title in (("per_task", "task"), ("per_outcome", "true outcome")):
        rows = [[key, str(row["n"]), *(f"{fmt(v[part][key]['attempt_accuracy'])} / "
                                       f"{fmt(v[part][key]['success_accuracy'])}" for v in vs)]
                for key, row in vs[0][part].items()]
        parts += [f"<h2>per {title}</h2>",
                  _table([title, "n", *(f"{n}: attempt / success accuracy" for n in names)],
                         rows, part.replace("_", "-"))]
    if vs[0]["near_threshold"]:
        rows = [[part, str(vs[0]["near_threshold"][part]["n"]),
                 *(f"{fmt(v['near_threshold'][part]['attempt'].get('accuracy'))} / "
                   f"{fmt(v['near_threshold'][part]['success'].get('accuracy'))}" for v in vs)]
                for part in ("near", "other")]
        parts += ["<h2>near-threshold runs</h2>",
                  _table(["slice", "n", *(f"{n}: attempt / success accuracy" for n in names)],
                         rows, "near-threshold")]
    if r["flips"] is not None:
        rows = [[f["run_id"], f["task_id"], q, str(f["truth"][q]).lower(),
                 *(str(f["answers"][n][q]).lower() for n in names), f["right"][q]]
                for f in r["flips"] for q in f["changed"]]
        parts += [f"<h2>flips ({len(r['flips'])} runs)</h2>",
                  _table(["run", "task", "question", "truth", *names, "right"], rows, "flips")]
    b = r["bootstrap"]
    parts.append(f'<p class="note">Intervals: 95 % percentile bootstrap over {b["resamples"]} '
                 f'resamples of the scored runs, seed {b["seed"]}. ROC-AUC is of P(yes) = '
                 "confidence if the answer is yes, else 1 − confidence (docs/eval.md).</p>")
    return ("<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\">"
            f"<title>eval {_e(' vs '.join(names))}</title><style>{_CSS}</style></head><body>"
            + "\n".join(parts) + "</body></html>\n")


def rates_html(r: dict[str, Any]) -> str:
    """The versions' success rates as a table (``id="rates"``)."""
    from judge.learn.rates_report import fmt_rate

    rows = []
    for name, e in r["rates"].items():
        none = e["no_valid_rectification"]
        rows.append([name, str(e["runs_judged"]), str(e["runs_covered"]), str(e["labels"]),
                     fmt_rate(e["judge_only"]),
                     none or f"{fmt_rate(e['labels_only'])} ({e['labels_only']['method']})",
                     "" if none else
                     f"{fmt_rate(e['rectified'])} ({e['rectified']['method']})"])
    return ("<h2>success rate</h2><p class=\"note\">Every run each version judged: judge-only "
            "(uncorrected: the votes counted as the truth), labels-only and rectified by the "
            "ledger's sampled labels the version never trained on (docs/rates.md; per cell: "
            "<code>rcjudge rates</code>).</p>"
            + _table(["version", "runs judged", "covered", "labelled", "judge-only "
                      "(uncorrected)", "labels-only", "rectified"], rows, "rates"))


def write_report(r: dict[str, Any], out: str | Path) -> list[str]:
    """Write ``report.json``, the two PNGs and ``report.html`` into ``out``; their paths."""
    folder = Path(out)
    folder.mkdir(parents=True, exist_ok=True)
    pngs = {q: reliability_png(r, q) for q in QUESTIONS}
    written = []
    for q, data in pngs.items():
        (folder / f"reliability_{q}.png").write_bytes(data)
        written.append(str(folder / f"reliability_{q}.png"))
    (folder / "report.json").write_text(json.dumps(r, indent=2, ensure_ascii=False) + "\n",
                                        encoding="utf-8")
    (folder / "report.html").write_text(render_html(r, pngs), encoding="utf-8")
    return [str(folder / "report.json"), str(folder / "report.html"), *written]
