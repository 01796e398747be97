"""Explain: one self-contained HTML page showing why a judge version said what it said.

``rcjudge explain BUNDLE|RUN_ID`` (``docs/explain.md``). The page is rebuilt from the
bundle exactly as judging reads it — intake, streams, contacts, sampled timestamps,
decoded frames (:func:`judge.explain_evidence.gather`), the images the questions show
(:func:`judge.ensemble.prompts.question_indices`) — next to a :class:`Judgment`: one just
made, or one read from the ledger. Plots are inline SVG, images inline JPEG (base64):
the file opens anywhere, offline, with no script.
"""

from __future__ import annotations

import base64
import html
import io
import os
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
from PIL import Image

from judge.ensemble.judgment import Judgment
from judge.ensemble.version import JudgeVersion
from judge.explain_evidence import Evidence, ExplainError, gather

if TYPE_CHECKING:
    from judge.ledgers.records import Run
    from judge.ledgers.store import Ledger


THUMB_W = 240  # px, the widest a frame is drawn
KIND_COLOUR = {"grasp": "#1a7f37", "release": "#0969da", "slip": "#cf222e",
               "miss": "#9a6700", "impact": "#8250df"}


def _jpeg(img: np.ndarray, width: int = THUMB_W) -> str:
    im = Image.fromarray(img)
    if im.width > width:
        im = im.resize((width, round(im.height * width / im.width)))
    buf = io.BytesIO()
    im.save(buf, format="JPEG", quality=85)
    return "data:image/jpeg;base64," + base64.b64encode(buf.getvalue()).decode("ascii")


def _esc(x: object) -> str:
    return html.escape(str(x), quote=True)


def nice_ticks(lo: float, hi: float, most: int = 6) -> list[float]:
    """Round tick values (steps of 1, 2 or 5 x 10^k) inside ``lo..hi``: the widest step
    giving at least 3 and at most ``most`` of them."""
    span = hi - lo
    if span <= 0:
        return [lo]
    mag = 10 ** np.floor(np.log10(span))
    for step in (m * mag * 10.0 ** e for e in (0, -1, -2) for m in (5, 2, 1)):
        first = np.ceil(lo / step - 1e-9) * step
        ticks = [float(round(v, 12)) + 0.0 for v in np.arange(first, hi + step * 1e-9, step)]
        if 3 <= len(ticks) <= most or len(ticks) > most:
            return ticks if len(ticks) <= most else ticks[::2]
    return [lo, (lo + hi) / 2, hi]


def _axes(x, y, lo: float, hi: float, t1: float, box: tuple[int, int, int, int]) -> list[str]:
    """Grid lines and labelled ticks on both axes (``box``: left, top, plot w, plot h)."""
    left, top, pw, ph = box
    out = []
    for v in nice_ticks(lo, hi, 5):
        out.append(f'<line class="grid" x1="{left}" x2="{left + pw}" y1="{y(v):.1f}" '
                   f'y2="{y(v):.1f}"/><text class="axis ytick" x="{left - 4}" '
                   f'y="{y(v) + 3:.1f}" text-anchor="end">{v:.4g}</text>')
    for v in nice_ticks(0.0, t1, 9):
        out.append(f'<line class="grid" x1="{x(v):.1f}" x2="{x(v):.1f}" y1="{top}" '
                   f'y2="{top + ph}"/><text class="axis xtick" x="{x(v):.1f}" '
                   f'y="{top + ph + 16}" text-anchor="middle">{v:g} s</text>')
    return out


def _plot(title: str, t: np.ndarray, series: list[tuple[str, np.ndarray]], ev: Evidence,
          unit: str, width: int = 900, height: int = 150) -> str:
    """An inline SVG line plot with the dense windows shaded and contact events marked,
    ticks on both axes and a legend naming every line in its colour (a ``figure``)."""
    left, right, top, bottom = 56, 10, 18, 22
    pw, ph = width - left - right, height - top - bottom
    t0, t1 = 0.0, max(ev.duration_s, float(t[-1]) if len(t) else 0.0, 1e-9)
    ys = np.concatenate([s for _, s in series]) if series else np.zeros(1)
    lo, hi = float(np.min(ys)), float(np.max(ys))
    if hi - lo < 1e-12:
        lo, hi = lo - 1.0, hi + 1.0

    def x(v: float) -> float:
        return left + (v - t0) / (t1 - t0) * pw

    def y(v: float) -> float:
        return top + (hi - v) / (hi - lo) * ph

    out = [f'<figure class="plotbox"><svg class="plot" width="{width}" height="{height}" '
           f'viewBox="0 0 {width} {height}" role="img" aria-label="{_esc(title)}">',
           f'<text x="{left}" y="12" class="ptitle">{_esc(title)} ({_esc(unit)})</text>']
    for a, b in ev.windows:
        out.append(f'<rect class="window" x="{x(a):.1f}" y="{top}" width="{x(b) - x(a):.1f}" '
                   f'height="{ph}"/>')
    out += _axes(x, y, lo, hi, t1, (left, top, pw, ph))
    for i, s in enumerate(ev.targets):
        cls = "tick shown" if i in set(ev.shown.tolist()) else "tick"
        out.append(f'<line class="{cls}" x1="{x(s):.1f}" x2="{x(s):.1f}" y1="{top + ph}" '
                   f'y2="{top + ph + 6}"/>')
    palette = ["#24292f", "#bc4c00", "#0550ae", "#116329", "#8250df", "#bf3989", "#4d2d00"]
    step = max(1, len(t) // 1500)  # at most ~1500 points a line
    legend = []
    for k, (name, s) in enumerate(series):
        colour = palette[k % len(palette)]
        pts = " ".join(f"{x(float(a)):.1f},{y(float(b)):.1f}"
                       for a, b in zip(t[::step], s[::step], strict=True))
        out.append(f'<polyline class="line" fill="none" stroke="{colour}" '
                   f'points="{pts}"><title>{_esc(name)}</title></polyline>')
        legend.append(f'<span data-colour="{colour}" style="color:{colour}">'
                      f'<i style="background:{colour}"></i>{_esc(name)}</span>')
    for c in ev.contacts:
        colour = KIND_COLOUR.get(c.kind, "#57606a")
        out.append(f'<line class="event event-{_esc(c.kind)}" data-t="{c.t:.3f}" '
                   f'x1="{x(c.t):.1f}" x2="{x(c.t):.1f}" y1="{top}" y2="{top + ph}" '
                   f'stroke="{colour}"><title>{_esc(c.kind)} t={c.t:.3f}s</title></line>')
        out.append(f'<text class="elabel" x="{x(c.t) + 3:.1f}" y="{top + 10}" fill="{colour}">'
                   f'{_esc(c.kind)}</text>')
    out.append("</svg>")
    out.append(f'<figcaption class="plot-legend">{"".join(legend)}</figcaption></figure>')
    return "\n".join(out)


def _yes(b: bool) -> str:
    return f"<b class='{'yes' if b else 'no'}'>{'yes' if b else 'no'}</b>"


def vote_line(judgment: Judgment) -> str:
    """The vote: attempt, success (with their confidences) and the failure class."""
    return (f"<div class='verdict' id='vote'>vote: attempt {_yes(judgment.attempt)} "
            f"(confidence {judgment.attempt_confidence:.3f}) · success "
            f"{_yes(judgment.success)} (confidence {judgment.success_confidence:.3f})"
            + (f" · failure class <code>{_esc(judgment.failure_class)}</code>"
               if judgment.failure_class else "") + "</div>")


def models_table(judgment: Judgment) -> str:
    """Each model's answers: calibrated and raw P(attempt), P(success), its class."""
    parts = ["<h2>Models</h2><table id='models'><tr><th>model</th><th>P(attempt)</th>"
             "<th>raw</th><th>P(success)</th><th>raw</th><th>family</th><th>class</th>"
             "<th>P(class)</th></tr>"]
    for a in judgment.answers:
        fam = a.failure_class.partition(".")[0] if a.failure_class else "—"
        parts.append(
            f"<tr><td>{_esc(a.model)}</td><td class='num'>{a.p_attempt:.3f}</td>"
            f"<td class='num'>{a.p_attempt_raw:.3f}</td><td class='num'>{a.p_success:.3f}</td>"
            f"<td class='num'>{a.p_success_raw:.3f}</td><td>{_esc(fam)}</td>"
            f"<td>{_esc(a.failure_class or '—')}</td><td class='num'>"
            + ("—" if a.p_failure_class is None else f"{a.p_failure_class:.3f}")
            + "</td></tr>")
    parts.append("</table>")
    return "\n".join(parts)


def frame_cell(ev: Evidence, c: int, i: int, cls: str = "frame", label: str = "",
               width: int = THUMB_W) -> str:
    """Camera ``c``'s decoded frame at sampled timestamp ``i``: the image and its time."""
    cam, t = ev.cameras[c], ev.timestamps[c, i]
    return (f"<div class='{cls}' data-t='{t:.3f}'><img alt='{_esc(cam)} t={t:.3f}s' "
            f"src='{_jpeg(ev.images[c, i], width)}'>{label}{t:.3f} s</div>")


PEAK_NOTE = ("peak: a force event's grip force (N); an impact's joint-effort residual (Nm) "
             "and its robust z-score (σ); a finger event's held opening (mm)")


def _peak(c: Any) -> str:
    """A contact event's peak in its channel's unit (an impact: and its z-score)."""
    value = c.peak if c.peak_value is None else c.peak_value
    text = f"{value:.2f} {c.unit}".rstrip()
    return f"{text} ({c.peak:.2f} σ)" if c.kind == "impact" else text


def contacts_table(contacts: Any) -> str:
    """The contact events: kind, times (s) and the peak with its unit."""
    rows = "".join(f"<tr class='contact'><td>{_esc(c.kind)}</td><td class='num'>{c.t:.3f}"
                   f"</td><td class='num'>{c.t_start:.3f}</td><td class='num'>"
                   + ("—" if c.t_end is None else f"{c.t_end:.3f}")
                   + f"</td><td class='num'>{_esc(_peak(c))}</td></tr>" for c in contacts)
    return ("<table id='contacts'><tr><th>event</th><th>t (s)</th><th>start</th>"
            f"<th>end</th><th>peak</th></tr>{rows or '<tr><td colspan=5>none</td></tr>'}"
            f"</table><p class='meta'>{_esc(PEAK_NOTE)}</p>")


def signal_plots(ev: Evidence, joints: bool = True, width: int = 900, height: int = 150
                 ) -> list[str]:
    """The gripper width and effort plots (and the joint efforts when ``joints``)."""
    s = ev.signals
    out = [_plot("gripper width", s.gripper_t, [("width", 1e3 * s.gripper_width)], ev, "mm",
                 width, height),
           _plot("gripper effort", s.gripper_t, [("effort", s.gripper_force)], ev, "N",
                 width, height)]
    if joints:
        out.append(_plot("joint effort", s.t, [(n, s.effort[:, j]) for j, n in
                                               enumerate(s.joint_names)], ev, "Nm", width,
                         height))
    return out


CSS = """
body{font:14px system-ui,sans-serif;margin:24px;color:#24292f}
h1{font-size:20px;margin:0 0 4px} h2{font-size:16px;margin:24px 0 8px}
.meta{color:#57606a} .meta code{color:#24292f}
table{border-collapse:collapse} td,th{border:1px solid #d0d7de;padding:4px 8px;text-align:left}
th{background:#f6f8fa} .num{text-align:right;font-variant-numeric:tabular-nums}
.verdict{font-size:16px;margin:8px 0} .yes{color:#1a7f37} .no{color:#cf222e}
.plot .window{fill:#fff8c5} .plot .tick{stroke:#8c959f;stroke-width:1}
.plot .tick.shown{stroke:#0969da;stroke-width:2} .plot .line{stroke-width:1.3}
.plot .event{stroke-width:2;stroke-dasharray:4 2} .plot .ptitle{font-size:12px;font-weight:600}
.plot .axis,.plot .elabel{font-size:10px;fill:#57606a}
.cam{display:flex;flex-wrap:wrap;gap:6px;padding-bottom:6px}
.frame{flex:none;text-align:center;font-size:11px;color:#57606a}
.frame img{display:block;border:3px solid transparent}
.frame.shown img{border-color:#0969da} .frame.dense{color:#9a6700}
.legend span{margin-right:12px}
figure.plotbox{margin:8px 0;max-width:900px}
svg.plot{display:block;width:100%;height:auto}
.plot .grid{stroke:#eaeef2;stroke-width:1}
.plot-legend{font-size:11px;display:flex;flex-wrap:wrap;gap:2px 12px;padding-left:56px}
.plot-legend i{display:inline-block;width:14px;height:3px;margin:0 4px 3px 0;
  vertical-align:middle}
h1,p,code,td{overflow-wrap:anywhere} table{max-width:100%}
@media (max-width:760px){body{margin:12px} td,th{padding:3px 4px;font-size:12px}}
"""


def render(ev: Evidence, judgment: Judgment) -> str:
    """The HTML page (a string) for one bundle's evidence and one judgment of it."""
    shown = set(ev.shown.tolist())
    order = {int(i): n + 1 for n, i in enumerate(ev.shown)}  # question image number
    dense = [any(a <= float(t) <= b for a, b in ev.windows) for t in ev.targets]
    parts = ["<!doctype html><html lang='en'><head><meta charset='utf-8'>",
             f"<title>explain {_esc(ev.run_id)} — {_esc(judgment.judge_version)}</title>",
             f"<style>{CSS}</style></head><body>",
             f"<h1>Run {_esc(ev.run_id)} judged by {_esc(judgment.judge_version)}</h1>",
             f"<p class='meta'>bundle <code>{_esc(ev.bundle_uri)}</code> · hash "
             f"<code>{_esc(ev.bundle_hash[:16])}…</code> · task <code>{_esc(ev.task_id)}"
             f"</code> · {ev.duration_s:.2f} s · fingerprint "
             f"<code>{_esc((judgment.fingerprint or 'none')[:16])}</code></p>",
             f"<p class='meta'>instruction: <q>{_esc(ev.instruction)}</q></p>"]
    if judgment.bundle_hash != ev.bundle_hash:
        parts.append("<p class='no'>The judgment was made on a bundle with hash "
                     f"{_esc(judgment.bundle_hash[:16])}…, not this one.</p>")
    parts += [vote_line(judgment), models_table(judgment)]
    parts.append("<h2>Contacts and sampling</h2><p class='legend'>"
                 + "".join(f"<span style='color:{c}'>┆ {k}</span>"
                           for k, c in KIND_COLOUR.items())
                 + "<span style='background:#fff8c5'>dense window</span>"
                 "<span style='color:#0969da'>▮ shown to the models</span>"
                 "<span style='color:#8c959f'>▮ sampled</span></p>")
    parts.append(contacts_table(ev.contacts))
    parts += signal_plots(ev)
    parts.append(f"<h2>Frames</h2><p class='meta'>{len(ev.targets)} sampled timestamps per "
                 f"camera; the {len(shown)} outlined in blue are the images every question "
                 "showed, numbered in the order the models saw them (cameras side by side).</p>")
    for c, cam in enumerate(ev.cameras):
        parts.append(f"<h3>{_esc(cam)}</h3><div class='cam' data-camera='{_esc(cam)}'>")
        for i in range(len(ev.targets)):
            cls = "frame" + (" shown" if i in shown else "") + (" dense" if dense[i] else "")
            label = f"#{order[i]} · " if i in order else ""
            parts.append(frame_cell(ev, c, i, cls, label))
        parts.append("</div>")
    parts.append("</body></html>")
    return "\n".join(parts)


def _is_bundle(target: str) -> bool:
    return "://" in target or Path(target).exists()


def _write_page(page: str, path: Path) -> None:
    """Write ``page`` to a temporary file beside ``path``, renamed into place when complete."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(page)
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(tmp, 0o666 & ~umask)  # mkstemp makes it private; a page is for sharing
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def _from_ledger(ledger: Ledger, run_id: str, version: JudgeVersion,
                 or_bundle: bool = True) -> tuple[Run, Judgment]:
    """(run, judgment) of ``run_id`` by ``version``; ExplainError naming what is missing."""
    run = ledger.get_run(run_id)
    if run is None:
        what = "neither a bundle path nor a run id" if or_bundle else "not a run id"
        raise ExplainError(f"{run_id}: {what} in the ledger "
                           f"{ledger.engine.url.render_as_string(hide_password=True)}")
    judgment = ledger.get_judgment(run_id, version.name)
    if judgment is None:
        by = [v for v in ledger.judge_versions() if ledger.get_judgment(run_id, v) is not None]
        raise ExplainError(f"run {run_id}: no judgment by judge version {version.name!r} "
                           f"(judged by: {', '.join(by) or 'none'})")
    return run, judgment


def _summary(ev: Evidence, path: Path | None, version: JudgeVersion, source: str,
             mcap: str | None = None, rrd: str | None = None) -> dict:
    return {"out": None if path is None else str(path), "mcap": mcap, "rrd": rrd,
            "run_id": ev.run_id, "judge_version": version.name,
            "judgment": source, "bundle_hash": ev.bundle_hash,
            "sampled": len(ev.targets), "shown": len(ev.shown),
            "contacts": [c.as_dict() for c in ev.contacts],
            "bytes": None if path is None else path.stat().st_size}


def explain(target: str, judge_version: str, out: str | None, db: str | None = None,
            mcap: str | None = None, rrd: str | None = None) -> dict:
    """Write the page for ``target`` (a bundle, judged now; or a run id, from the ledger).

    Returns a summary (``--json``). The page goes to a temporary file beside ``out``,
    renamed into place when complete; ``mcap``, when given, gets the contact events and
    sampled frames as Foxglove annotations (:func:`judge.bundle.write.write_annotations`);
    ``rrd`` the same content as the page, as a Rerun recording
    (:func:`judge.explain_rrd.write_rrd`). ``out`` may be None when ``rrd`` is given.

    Raises:
        ExplainError: a run id that is not in the ledger or has no judgment by the version;
            ``rrd`` without rerun-sdk installed (before anything is judged or written).
    """
    from judge.ensemble.version import load_judge_version

    if rrd:
        from judge.explain_rrd import require_rerun

        require_rerun()
    version = load_judge_version(judge_version)
    if _is_bundle(target):
        from judge.ensemble.judge import Judge

        judge = Judge(version)
        try:
            judgment = judge.judge(target)
        finally:
            judge.close()
        ev = gather(target, version, judgment.run_id)
        source = "judged now"
    else:
        from judge.ledgers.store import Ledger

        with Ledger.open(db, create=False) as ledger:
            run, judgment = _from_ledger(ledger, target, version)
        ev = gather(run.bundle_uri, version, target)
        source = "ledger"
    path = Path(out) if out else None
    if path is not None:
        _write_page(render(ev, judgment), path)
    if rrd:
        from judge.explain_rrd import write_rrd

        write_rrd(ev, judgment, rrd)
    if mcap:
        from judge.bundle.write import write_annotations

        tmp_m = Path(mcap).with_name(f".{Path(mcap).name}.part")
        write_annotations(tmp_m, ev.start_ns, ev.contacts, ev.targets, ev.shown,
                          f"rcjudge explain {version.name}")
        os.replace(tmp_m, mcap)
    return _summary(ev, path, version, source, mcap, rrd)


def read_run_ids(path: str) -> list[str]:
    """The run ids of a table (``.parquet``, ``.csv``, ``.jsonl``): its ``run_id`` column,
    else ``episode_id`` (the ledger's ``evaluation_run`` export has both), in order, once each.
    """
    import pyarrow.csv as pacsv
    import pyarrow.json as pajson
    import pyarrow.parquet as pq

    suffix = Path(path).suffix.lower()
    readers = {".parquet": pq.read_table, ".csv": pacsv.read_csv, ".jsonl": pajson.read_json,
               ".ndjson": pajson.read_json}
    if suffix not in readers:
        raise ExplainError(f"--runs {path}: suffix {suffix!r}; expected .parquet, .csv or "
                           ".jsonl")
    if not Path(path).is_file():
        raise ExplainError(f"--runs {path}: file not found")
    from judge.bundle.boundary import reading

    with reading(f"--runs {path}", ExplainError, "cannot read: {}"):
        table = readers[suffix](path)
    column = next((c for c in ("run_id", "episode_id") if c in table.column_names), None)
    if column is None:
        raise ExplainError(f"--runs {path}: no run_id or episode_id column "
                           f"(columns: {', '.join(table.column_names)})")
    return list(dict.fromkeys(str(v) for v in table.column(column).to_pylist()
                              if v is not None))


def explain_runs(run_ids: list[str], judge_version: str, out_dir: str,
                 db: str | None = None) -> list[dict]:
    """Write ``out_dir/<rcjudge.pages.page_name(run_id)>`` for each run id, from the ledger.

    These are the pages the verdict screen links (``--explain-dir``). Every run is checked
    (in the ledger, judged by the version) before any page is written.

    Raises:
        ExplainError: no run ids, or a run id the ledger lacks or has no judgment of.
    """
    from judge.ensemble.version import load_judge_version
    from judge.ledgers.store import Ledger
    from rcjudge.pages import page_name

    if not run_ids:
        raise ExplainError("rcjudge explain --out-dir: no run ids (give RUN_IDs or --runs)")
    version = load_judge_version(judge_version)
    with Ledger.open(db, create=False) as ledger:
        found = [(rid, *_from_ledger(ledger, rid, version, or_bundle=False))
                 for rid in run_ids]
    out = []
    for rid, run, judgment in found:
        ev = gather(run.bundle_uri, version, rid)
        path = Path(out_dir) / page_name(rid)
        _write_page(render(ev, judgment), path)
        out.append(_summary(ev, path, version, "ledger"))
    return out
