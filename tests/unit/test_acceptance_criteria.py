"""The acceptance criteria as pure functions: exact statuses, reasons and facts."""

from __future__ import annotations

import numpy as np
import pytest

from judge.errors import ConfigError
from judge.outcomes.acceptance import (
    Campaign,
    completeness_check,
    frame_rate_check,
    framing_check,
    global_shift,
    shake_check,
    verdict,
)

C = Campaign()


def test_steady_frame_rate_passes():
    t = np.arange(0, 10, 0.1)  # 10 fps for 10 s
    assert frame_rate_check(t, C) == {"status": "pass", "reasons": [], "median_fps": 10.0,
                                      "min_fps": 10.0}


def test_a_sustained_collapse_fails_and_a_blip_does_not():
    t = np.concatenate([np.arange(0, 4, 0.1), np.arange(4, 6, 0.5), np.arange(6, 10, 0.1)])
    out = frame_rate_check(t, C)  # 2 fps from 4 s to 6 s: windows at 4.0, 4.5, 5.0 collapse
    assert (out["status"], out["reasons"], out["drop_at_s"], out["min_fps"]) == (
        "fail", ["acceptance_frame_rate_drop"], 4.0, 2.0)  # [3.5, 4.5) still has 6 frames
    blip = np.delete(np.arange(0, 10, 0.1), [40, 41, 42])  # 0.4 s missing: one window thin
    assert frame_rate_check(blip, C)["status"] == "pass"


def test_too_few_frames_is_insufficient_evidence():
    assert frame_rate_check(np.array([0.0, 0.1]), C) == {
        "status": "insufficient_evidence", "reasons": ["acceptance_too_few_frames"],
        "frames": 2}


def test_global_shift_by_phase_correlation():
    rng = np.random.default_rng(0)
    img = rng.random((64, 96))
    assert global_shift(img, img) == 0.0
    assert global_shift(np.roll(img, (3, 4), axis=(0, 1)), img) == 5.0
    assert global_shift(img, np.roll(img, (-6, 8), axis=(0, 1))) == 10.0


def test_shake_share():
    assert shake_check([0.0, 1.0, 5.0, 0.0], C) == {
        "status": "pass", "reasons": [], "pairs": 4, "shaky_share": 0.25, "max_shift_px": 5.0}
    assert shake_check([0.0, 4.0, 5.0, 0.0], C)["reasons"] == ["acceptance_camera_shake"]
    assert shake_check([], C)["status"] == "insufficient_evidence"


@pytest.mark.parametrize(("duration", "status", "reasons"), [
    (10.0, "pass", []), (7.5, "pass", []), (7.4, "fail", ["acceptance_too_short"]),
    (12.6, "fail", ["acceptance_too_long"])])
def test_completeness(duration, status, reasons):
    out = completeness_check(duration, Campaign(requested_length_s=10.0))
    assert (out["status"], out["reasons"]) == (status, reasons)


def test_completeness_without_a_requested_length_is_skipped():
    assert completeness_check(3.0, C)["status"] == "skipped"


def test_framing_never_makes_up_a_pass():
    assert framing_check(C) == {"status": "insufficient_evidence",
                                "reasons": ["acceptance_no_visibility_detector"]}
    with pytest.raises(ConfigError, match=r"^visibility_detector 'yolo-hands': no hand/gripper "
                                          r"visibility detector ships yet"):
        framing_check(Campaign(visibility_detector="yolo-hands"))


def test_verdict_order():
    ok = {"status": "pass", "reasons": []}
    bad = {"status": "fail", "reasons": ["x"]}
    unknown = {"status": "insufficient_evidence", "reasons": ["y"]}
    base = {"capture_health": ok, "frame_rate": ok, "completeness": ok, "framing": unknown,
            "shake": ok}
    assert verdict(base) == "accept"
    assert verdict({**base, "shake": bad}) == "quarantine"
    assert verdict({**base, "capture_health": bad, "shake": bad}) == "reject"
