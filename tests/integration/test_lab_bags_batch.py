"""A lab's five recordings through ``rcjudge import rosbag`` → ``rcjudge batch --judge tiny``
on a real local Ray (issue 38's "Must show"): every episode is imported whole and judged.

``bench.lab_bags`` writes the recordings (ROS 1 bgr8 naming the lab's own task, ROS 2
SQLite with zstd, a lone MCAP whose H.264 wrist camera has 2-s keyframes cut by markers,
partial JointState, a split ROS 1 recording) and runs every command as a subprocess, as a
lab would. On the code before issue 38 the same run judged 1 of 7 bundles (``bench.lab_bags``
prints that table from any checkout).
"""

from __future__ import annotations

import pytest

from bench.lab_bags import run

pytestmark = [pytest.mark.ray, pytest.mark.slow]

EXPECTED = [  # recording, files, episode, bundle, frames a camera
    ("ros1_bgr8", 1, 0, "ros1_bgr8-ep000", 30),
    ("ros2_zstd", 1, 0, "ros2_zstd-ep000", 22),  # [0.2, 2.4) s: frames 2-23
    ("ros2_zstd", 1, 1, "ros2_zstd-ep001", 23),  # [2.6, 4.9) s: frames 26-48
    ("mcap_h264", 1, 0, "mcap_h264-ep000", 29),  # [0.7, 3.6) s: 13 frames before a keyframe
    ("mcap_h264", 1, 1, "mcap_h264-ep001", 32),  # [4.3, 7.5) s: 17 frames before a keyframe
    ("partial_joints", 1, 0, "partial_joints-ep000", 30),
    ("split", 2, 0, "split-ep000", 30),  # [0.3, 3.3) s across split_0.bag and split_1.bag
]


def test_five_lab_recordings_are_imported_whole_and_judged(tmp_path, tiny_models):
    rows = run(tmp_path, "tiny", env={"RCJUDGE_MODELS": str(tiny_models.parent)})
    *episodes, last = rows
    assert last == {"batch_exit": 0, "tasks_add_exit": 0,
                    "summary": {"total": 7, "judged": 7, "failed": 0}}
    assert [(r["recording"], r["files"], r["episode"], r["bundle"]) for r in episodes] == \
        [e[:4] for e in EXPECTED]
    for r, (*_, n) in zip(episodes, EXPECTED, strict=True):
        assert r["import_exit"] == 0 and r["frames"] == {"front": n, "side": n, "wrist": n}
        assert (r["result"], r["why"], r["notes"]) == ("judged", "", []), r
