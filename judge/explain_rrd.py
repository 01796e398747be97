"""Explain as a Rerun recording: the page's content in an ``.rrd`` file (``--rrd``).

Written offline with ``rerun-sdk`` (the ``rerun`` extra; no viewer is started): open it
with ``rerun FILE.rrd``. Everything sits on one timeline, ``bundle_time`` (seconds since
the bundle's first message, as on the page); the recording's start time is the bundle's
own clock. Entities (``docs/explain.md``):

* ``cameras/<camera>`` — the sampled frames the page shows (JPEG, full size), at each
  decoded frame's own time;
* ``sampling/frames`` — a text log line per sampled timestamp ("frame t=2.300s shown to
  the models as image 3" / "… sampled"), ``sampling/dense_windows`` one per window;
* ``gripper/width_mm``, ``gripper/effort``, ``joints/effort/<joint>`` — scalars;
* ``contacts`` — a text log line per contact event (WARN for slip, miss and impact);
* ``judgment/vote`` and ``judgment/models/<model>`` — static: a Markdown text document
  and the same figures as typed values (``AnyValues``).
"""

from __future__ import annotations

import io
import os
import tempfile
from pathlib import Path
from typing import Any

import numpy as np
from PIL import Image

from judge.bundle.write import ALERT_KINDS, contact_text
from judge.ensemble.judgment import Judgment
from judge.explain_evidence import Evidence, ExplainError

TIMELINE = "bundle_time"
EXTRA_HINT = "pip install 'rcjudge[rerun]' (rerun-sdk)"


def require_rerun() -> Any:
    """The ``rerun`` module, or ExplainError naming the extra that installs it."""
    try:
        import rerun
    except ImportError:
        raise ExplainError(f"rcjudge explain --rrd: rerun-sdk is not installed; "
                           f"{EXTRA_HINT}") from None
    return rerun


def _jpeg(img: np.ndarray) -> bytes:
    buf = io.BytesIO()
    Image.fromarray(img).save(buf, format="JPEG", quality=90)
    return buf.getvalue()


def _vote_doc(ev: Evidence, j: Judgment) -> str:
    yn = lambda b: "yes" if b else "no"  # noqa: E731
    lines = [f"# Run {ev.run_id} judged by {j.judge_version}", "",
             f"- bundle `{ev.bundle_uri}` (hash `{ev.bundle_hash[:16]}`), task `{ev.task_id}`,"
             f" {ev.duration_s:.2f} s, fingerprint `{(j.fingerprint or 'none')[:16]}`",
             f"- instruction: {ev.instruction}",
             f"- **vote**: attempt **{yn(j.attempt)}** (confidence {j.attempt_confidence:.3f}),"
             f" success **{yn(j.success)}** (confidence {j.success_confidence:.3f})"
             + (f", failure class `{j.failure_class}`" if j.failure_class else "")]
    if j.bundle_hash != ev.bundle_hash:
        lines.append(f"- the judgment was made on a bundle with hash {j.bundle_hash[:16]}, "
                     "not this one")
    return "\n".join(lines)


def _model_doc(a: Any) -> str:
    fam = a.failure_class.partition(".")[0] if a.failure_class else "—"
    pc = "—" if a.p_failure_class is None else f"{a.p_failure_class:.3f}"
    return (f"# {a.model}\n\n| P(attempt) | raw | P(success) | raw | family | class | P(class) |\n"
            "| --- | --- | --- | --- | --- | --- | --- |\n"
            f"| {a.p_attempt:.3f} | {a.p_attempt_raw:.3f} | {a.p_success:.3f} | "
            f"{a.p_success_raw:.3f} | {fam} | {a.failure_class or '—'} | {pc} |")


def _scalars(rr: Any, rec: Any, entity: str, t: np.ndarray, values: np.ndarray) -> None:
    rec.send_columns(entity, indexes=[rr.TimeColumn(TIMELINE, duration=np.asarray(t, float))],
                     columns=rr.Scalars.columns(scalars=np.asarray(values, float)))


def record(ev: Evidence, judgment: Judgment, rec: Any) -> None:
    """Log the evidence and the judgment into the recording stream ``rec``."""
    rr = require_rerun()
    esc = rr.escape_entity_path_part
    rec.set_log_time_enabled(False)  # only the bundle's clock: no wall-clock timeline
    rec.send_recording_start_time_nanos(int(ev.start_ns))
    s = ev.signals
    _scalars(rr, rec, "gripper/width_mm", s.gripper_t, 1e3 * s.gripper_width)
    _scalars(rr, rec, "gripper/effort", s.gripper_t, s.gripper_force)
    for k, name in enumerate(s.joint_names):
        _scalars(rr, rec, f"joints/effort/{esc(name)}", s.t, s.effort[:, k])
    order = {int(i): n + 1 for n, i in enumerate(ev.shown)}
    for i, target in enumerate(ev.targets):
        rec.set_time(TIMELINE, duration=float(target))
        what = f"shown to the models as image {order[i]}" if i in order else "sampled"
        rec.log("sampling/frames", rr.TextLog(f"frame t={float(target):.3f}s {what}",
                                              level=rr.TextLogLevel.DEBUG))
    for c, cam in enumerate(ev.cameras):
        for i in range(len(ev.targets)):
            rec.set_time(TIMELINE, duration=float(ev.timestamps[c, i]))
            rec.log(f"cameras/{esc(cam)}", rr.EncodedImage(contents=_jpeg(ev.images[c, i]),
                                                           media_type="image/jpeg"))
    for a, b in ev.windows:
        rec.set_time(TIMELINE, duration=a)
        rec.log("sampling/dense_windows", rr.TextLog(f"dense window {a:.3f}s to {b:.3f}s",
                                                     level=rr.TextLogLevel.DEBUG))
    for c in ev.contacts:
        rec.set_time(TIMELINE, duration=c.t)
        level = rr.TextLogLevel.WARN if c.kind in ALERT_KINDS else rr.TextLogLevel.INFO
        rec.log("contacts", rr.TextLog(contact_text(c), level=level))
    j = judgment
    rec.log("judgment/vote", rr.TextDocument(_vote_doc(ev, j), media_type=rr.MediaType.MARKDOWN),
            rr.AnyValues(judge_version=j.judge_version, attempt=j.attempt,
                         attempt_confidence=j.attempt_confidence, success=j.success,
                         success_confidence=j.success_confidence,
                         failure_class=j.failure_class or ""), static=True)
    for a in j.answers:
        rec.log(f"judgment/models/{esc(a.model)}",
                rr.TextDocument(_model_doc(a), media_type=rr.MediaType.MARKDOWN),
                rr.AnyValues(p_attempt=a.p_attempt, p_attempt_raw=a.p_attempt_raw,
                             p_success=a.p_success, p_success_raw=a.p_success_raw,
                             failure_class=a.failure_class or "",
                             p_failure_class=np.nan if a.p_failure_class is None
                             else a.p_failure_class), static=True)


def write_rrd(ev: Evidence, judgment: Judgment, path: str | Path) -> None:
    """Write the recording to a temporary file beside ``path``, renamed into place."""
    rr = require_rerun()
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".part", dir=path.parent)
    os.close(fd)
    try:
        rec = rr.RecordingStream("rcjudge-explain",
                                 recording_id=f"{ev.run_id}:{judgment.judge_version}")
        rec.save(tmp)
        record(ev, judgment, rec)
        rec.flush()
        rec.disconnect()
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(tmp, 0o666 & ~umask)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
