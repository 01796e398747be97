"""Technical validity of one capture (spec/outcomes.md, "acceptance"): after decode.

Five criteria, each ``pass`` / ``fail`` / ``insufficient_evidence`` / ``skipped`` with
reason codes, and a machine verdict:

* ``capture_health``: the MCAP validates (summary, channels, decodable records) and the
  channels the campaign requires exist (``acceptance_mcap_invalid``,
  ``acceptance_missing_channel``);
* ``frame_rate``: per camera, frames counted in sliding windows against the camera's
  median rate; ``sustained_windows`` consecutive windows under ``min_ratio`` of it is a
  collapse (``acceptance_frame_rate_drop``);
* ``completeness``: duration against the campaign's requested length ± tolerance
  (``acceptance_too_short`` / ``acceptance_too_long``; ``skipped`` without one);
* ``framing``: ``insufficient_evidence`` (``acceptance_no_visibility_detector``) unless
  a hand/gripper visibility detector is configured — never a made-up pass. No detector
  ships yet, so a configured one is refused by name;
* ``shake``: global motion between consecutive frames by phase correlation (pixels); more
  than ``max_shaky_share`` of the sampled pairs moving over ``max_shift_px`` is
  ``acceptance_camera_shake``.

Verdict: ``reject`` when ``capture_health`` fails (nothing else can be trusted),
``quarantine`` when any other criterion fails, else ``accept``.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from judge.errors import BundleError, ConfigError

CRITERIA = ("capture_health", "frame_rate", "completeness", "framing", "shake")
STATUSES = ("pass", "fail", "insufficient_evidence", "skipped")
VERDICTS = ("accept", "quarantine", "reject")


class Campaign(BaseModel):
    """What a capture campaign asks of every capture (``--campaign FILE.yaml``)."""

    model_config = ConfigDict(extra="forbid")

    cameras: int = Field(3, ge=1, description="Camera streams every capture must have.")
    required_channels: list[str] = Field(
        default_factory=lambda: ["/joint_states", "/gripper"],
        description="MCAP topics that must exist (cameras are counted separately).")
    requested_length_s: float | None = Field(None, gt=0, description="Length asked for (s); "
                                             "None skips completeness.")
    length_tolerance: float = Field(0.25, ge=0, le=1, description="Allowed share off it.")
    window_s: float = Field(1.0, gt=0, description="Frame-rate window (s), stepped by half.")
    min_ratio: float = Field(0.5, gt=0, le=1, description="A window under this share of the "
                             "median rate has collapsed.")
    sustained_windows: int = Field(2, ge=1, description="Consecutive collapsed windows that "
                                   "make a drop.")
    shake_pairs: int = Field(8, ge=1, le=64, description="Frame pairs sampled per camera.")
    max_shift_px: float = Field(3.0, gt=0, description="Global motion over this is shaky.")
    max_shaky_share: float = Field(0.25, ge=0, le=1, description="Shaky pairs allowed.")
    visibility_detector: str | None = Field(None, description="Hand/gripper visibility "
                                            "detector; none ships yet.")
    targets: dict[str, float] = Field(default_factory=dict, description="Quality targets: "
                                      "min_acceptance_rate, max_reject_rate, max_issue_rate.")


def criterion(status: str, reasons: list[str] | None = None, **facts: Any) -> dict[str, Any]:
    return {"status": status, "reasons": list(reasons or []), **facts}


def frame_rate_check(t: np.ndarray, c: Campaign) -> dict[str, Any]:
    """One camera's frame timestamps (s) → the criterion (with the drop's start if any)."""
    t = np.asarray(t, dtype=np.float64)  # (F,)
    if len(t) < 3 or t[-1] - t[0] < c.window_s:
        return criterion("insufficient_evidence", ["acceptance_too_few_frames"],
                         frames=len(t))
    rate = 1.0 / float(np.median(np.diff(t)))
    starts = np.arange(t[0], t[-1] - c.window_s + 1e-9, c.window_s / 2)
    counts = np.searchsorted(t, starts + c.window_s) - np.searchsorted(t, starts)
    low = counts < c.min_ratio * rate * c.window_s  # (W,) bool
    run = best = 0
    first = None
    for i, bad in enumerate(low):
        run = run + 1 if bad else 0
        if run > best:
            best = run
            if run >= c.sustained_windows and first is None:
                first = float(starts[i - run + 1])
    if best >= c.sustained_windows:
        return criterion("fail", ["acceptance_frame_rate_drop"], median_fps=round(rate, 3),
                         drop_at_s=round(first, 3), min_fps=round(float(counts.min()) /
                                                                  c.window_s, 3))
    return criterion("pass", median_fps=round(rate, 3),
                     min_fps=round(float(counts.min()) / c.window_s, 3))


def global_shift(a: np.ndarray, b: np.ndarray) -> float:
    """Global translation (pixels) between two grey images, by phase correlation."""
    a = np.asarray(a, dtype=np.float64) - np.mean(a)  # (H, W)
    b = np.asarray(b, dtype=np.float64) - np.mean(b)
    cross = np.fft.fft2(a) * np.conj(np.fft.fft2(b))
    corr = np.fft.ifft2(cross / np.maximum(np.abs(cross), 1e-12)).real
    dy, dx = np.unravel_index(int(np.argmax(corr)), corr.shape)
    h, w = corr.shape
    dy = dy - h if dy > h // 2 else dy
    dx = dx - w if dx > w // 2 else dx
    return float(np.hypot(dy, dx))


def shake_check(shifts: list[float], c: Campaign) -> dict[str, Any]:
    """Per-pair global shifts (px) → the criterion."""
    if not shifts:
        return criterion("insufficient_evidence", ["acceptance_too_few_frames"])
    shaky = sum(1 for s in shifts if s > c.max_shift_px) / len(shifts)
    facts = {"pairs": len(shifts), "shaky_share": round(shaky, 3),
             "max_shift_px": round(max(shifts), 2)}
    if shaky > c.max_shaky_share:
        return criterion("fail", ["acceptance_camera_shake"], **facts)
    return criterion("pass", **facts)


def completeness_check(duration_s: float, c: Campaign) -> dict[str, Any]:
    if c.requested_length_s is None:
        return criterion("skipped", ["acceptance_no_requested_length"],
                         duration_s=round(duration_s, 3))
    off = (duration_s - c.requested_length_s) / c.requested_length_s
    facts = {"duration_s": round(duration_s, 3), "requested_s": c.requested_length_s}
    if off < -c.length_tolerance:
        return criterion("fail", ["acceptance_too_short"], **facts)
    if off > c.length_tolerance:
        return criterion("fail", ["acceptance_too_long"], **facts)
    return criterion("pass", **facts)


def framing_check(c: Campaign) -> dict[str, Any]:
    if c.visibility_detector is None:
        return criterion("insufficient_evidence", ["acceptance_no_visibility_detector"])
    raise ConfigError(f"visibility_detector {c.visibility_detector!r}: no hand/gripper "
                      "visibility detector ships yet; leave it unset")


def verdict(criteria: dict[str, dict[str, Any]]) -> str:
    """``reject`` if capture_health failed, ``quarantine`` if another failed, else accept."""
    if criteria["capture_health"]["status"] == "fail":
        return "reject"
    if any(v["status"] == "fail" for v in criteria.values()):
        return "quarantine"
    return "accept"


def _shifts(streams: Any, c: Campaign) -> list[float]:
    from judge.bundle.decode import decode_frames

    shifts: list[float] = []
    for name, video in sorted(streams.videos.items()):
        n = len(video.t)
        if n < 2:
            continue
        idx = np.unique(np.linspace(0, n - 2, min(c.shake_pairs, n - 1)).astype(int))
        targets = np.sort(np.concatenate([video.t[idx], video.t[idx + 1]]))
        frames = decode_frames({name: video}, targets)
        grey = frames.images[0].mean(axis=-1)  # (T, H, W)
        shifts += [global_shift(grey[2 * k], grey[2 * k + 1]) for k in range(len(idx))]
    return shifts


def check_capture(uri: str, campaign: Campaign | None = None) -> dict[str, Any]:
    """Every criterion and the verdict of the bundle at ``uri`` (verified by intake first)."""
    from judge.bundle.decode import load_streams
    from judge.bundle.intake import intake

    c = campaign or Campaign()
    bundle = intake(uri)
    try:
        streams = load_streams(bundle, required_cameras=c.cameras)
    except BundleError as exc:
        code = ("acceptance_missing_channel" if type(exc).__name__ == "ChannelError"
                else "acceptance_mcap_invalid")
        criteria = {"capture_health": criterion("fail", [code], message=str(exc))}
        criteria |= {k: criterion("skipped", ["acceptance_capture_unhealthy"])
                     for k in CRITERIA[1:]}
        return {"bundle_hash": bundle.bundle_hash, "criteria": criteria, "verdict": "reject"}
    topics = {ch.topic for ch in streams.channels}
    missing = [t for t in c.required_channels if t not in topics]
    health = (criterion("fail", ["acceptance_missing_channel"], missing=missing) if missing
              else criterion("pass", channels=len(topics)))
    rates = {name: frame_rate_check(v.t, c) for name, v in sorted(streams.videos.items())}
    worst = next((r for r in rates.values() if r["status"] == "fail"), None) or next(
        (r for r in rates.values() if r["status"] == "insufficient_evidence"), None)
    frame_rate = criterion(worst["status"] if worst else "pass",
                           sorted({x for r in rates.values() for x in r["reasons"]}),
                           cameras=rates)
    criteria = {"capture_health": health, "frame_rate": frame_rate,
                "completeness": completeness_check(streams.duration_s, c),
                "framing": framing_check(c), "shake": shake_check(_shifts(streams, c), c)}
    return {"bundle_hash": bundle.bundle_hash, "criteria": criteria,
            "verdict": verdict(criteria)}
