"""Frame sampling: dense around contacts, sparse on keyframes, budget, first and last frame."""

from __future__ import annotations

import numpy as np
import pytest

from judge.bundle.sample import sample_timestamps
from judge.config import SampleConfig

FRAMES = np.arange(101) / 10.0  # 0.0 … 10.0 s at 10 fps
KEYS = np.arange(0, 11, 2.0)  # a keyframe every 2 s


def test_no_contacts_farthest_point_on_frames():
    cfg = SampleConfig(frames_per_camera=4, snap_sparse_to_keyframes=False)
    # chosen {0, 10}; then 5.0 (farthest); then 2.5 (first of the equally far 2.5 and 7.5)
    assert sample_timestamps(0.0, 10.0, [], cfg, frame_times=FRAMES).tolist() == [
        0.0, 2.5, 5.0, 10.0]


def test_dense_window_then_sparse_keyframes():
    cfg = SampleConfig(frames_per_camera=8, dense_half_window_s=0.2, dense_step_s=0.1)
    out = sample_timestamps(0.0, 10.0, [5.0], cfg, frame_times=FRAMES, keyframe_times=KEYS)
    # reserve 8 // 4 = 2 for background: dense fills to 6 = first, last, 5.0, 4.9, 5.1, 4.8;
    # background on keyframes: 2.0 (2.0 away, first of 2.0 and 8.0), then 8.0
    assert out.tolist() == pytest.approx([0.0, 2.0, 4.8, 4.9, 5.0, 5.1, 8.0, 10.0])


def test_round_robin_over_contacts_nearest_first():
    cfg = SampleConfig(frames_per_camera=8, dense_half_window_s=0.3, dense_step_s=0.1)
    out = sample_timestamps(0.0, 10.0, [7.0, 3.0], cfg, frame_times=FRAMES, keyframe_times=KEYS)
    # dense budget 6: 3.0, 7.0, then 2.9, 6.9 (offset -0.1 for each contact in turn);
    # background on keyframes: 4.0 then 8.0 (1.0 from the nearest chosen; 2.0, 6.0 are 0.9)
    assert out.tolist() == pytest.approx([0.0, 2.9, 3.0, 4.0, 6.9, 7.0, 8.0, 10.0])


def test_budget_first_last_sorted_unique():
    cfg = SampleConfig(frames_per_camera=16)
    contacts = [0.05, 1.0, 1.02, 9.99, 12.0]  # near the ends, near each other, out of range
    out = sample_timestamps(0.0, 10.0, contacts, cfg, frame_times=FRAMES, keyframe_times=KEYS)
    assert len(out) == 16
    assert out[0] == 0.0 and out[-1] == 10.0
    assert np.all(np.diff(out) > 0)
    assert set(out.tolist()) <= set(FRAMES.tolist())


def test_single_frame_and_bad_range():
    assert sample_timestamps(2.0, 2.0, []).tolist() == [2.0]
    with pytest.raises(ValueError, match="end 1.0 is before start 2.0"):
        sample_timestamps(2.0, 1.0, [])
