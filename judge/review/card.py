"""One run on the review page: its evidence, the judgment and the pick, as HTML pieces.

Where it sits: between the queue (:func:`judge.learn.select.next_runs`) and the page. The
evidence is gathered as ``rcjudge explain`` gathers it (:func:`judge.explain_evidence.gather`) and
drawn with the explain view's pieces (vote, models table, frames, gripper plots), so the
two views cannot disagree. What a labeller needs on one screen: the frames around each
contact event (the sampled frame nearest the event and its two neighbours, every
camera), the end state (the last sampled frame), the gripper width and effort, each
model's answers, the vote, and why the queue picked the run.
"""

from __future__ import annotations

import html
from typing import Any

import numpy as np

from judge.ensemble.judgment import Judgment
from judge.explain import frame_cell, models_table, signal_plots, vote_line
from judge.explain_evidence import Evidence

FRAME_W = 150  # px, a frame on the review page: the end state and an event side by side at 1280
PLOT_W, PLOT_H = 540, 120  # the right column's width at 1280 px, and a 600 px window's


def moments(ev: Evidence) -> list[tuple[str, list[int]]]:
    """(title, sampled-frame indices) of each contact event, in time order, then the end.

    An event shows the sampled frame nearest its time and the one before and after it
    (fewer at the ends of the run); the end state is the last sampled frame.
    """
    out: list[tuple[str, list[int]]] = []
    last = len(ev.targets) - 1
    for c in sorted(ev.contacts, key=lambda c: c.t):
        k = int(np.argmin(np.abs(ev.targets - c.t)))
        out.append((f"{c.kind} at {c.t:.2f} s", list(range(max(0, k - 1), min(last, k + 1) + 1))))
    out.append(("end state", [last]))
    return out


def _esc(x: object) -> str:
    return html.escape(str(x), quote=True)


def frames_html(ev: Evidence) -> str:
    """The moments side by side, the end state first (what *succeeded?* is answered from,
    on screen without scrolling), then the contact events in time order; in each, one
    named row of frames per camera."""
    *events, end = moments(ev)
    parts = []
    for title, idx in (end, *events):
        kind = title.split(" ", 1)[0] if title != "end state" else "end"
        parts.append(f"<section class='moment' data-kind='{_esc(kind)}'><h4>{_esc(title)}</h4>")
        for c, cam in enumerate(ev.cameras):
            parts.append(f"<div class='cam' data-camera='{_esc(cam)}'><div class='camname'>"
                         f"{_esc(cam)}</div><div class='row'>"
                         + "".join(frame_cell(ev, c, i, width=FRAME_W) for i in idx)
                         + "</div></div>")
        parts.append("</section>")
    return "".join(parts)


def card(ev: Evidence, judgment: Judgment, pick: Any) -> dict[str, Any]:
    """What the page shows of one pick (``pick``: a :class:`judge.learn.select.Pick`)."""
    return {
        "run_id": ev.run_id, "judge_version": judgment.judge_version,
        "pick": {"rank": pick.rank, "score": pick.score, "strategy": pick.strategy,
                 "reason": pick.reason,
                 **({"round_id": pick.round_id, "pi": pick.pi}
                    if getattr(pick, "round_id", None) is not None else {})},
        "head": (f"<h1>Run <code>{_esc(ev.run_id)}</code></h1><p class='meta'>task "
                 f"<code>{_esc(ev.task_id)}</code> · {ev.duration_s:.2f} s · "
                 f"{len(ev.contacts)} contact event(s)</p><p class='meta'>instruction: "
                 f"<q>{_esc(ev.instruction)}</q></p>"),
        "judgment": vote_line(judgment) + f"<div class='scroll'>{models_table(judgment)}</div>",
        "plots": "".join(signal_plots(ev, joints=False, width=PLOT_W, height=PLOT_H)),
        "frames": frames_html(ev),
    }
