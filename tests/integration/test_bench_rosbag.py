"""`python -m bench.rosbag` at a tiny size: every variant imported, the figures consistent."""

from __future__ import annotations

import json

from bench.rosbag import VARIANTS, main, run


def test_the_bench_imports_each_variant_and_reports_its_ratio():
    r = run(seconds=1, width=64, height=48, fps=10)
    assert r["set"] == ("3 camera(s) x 1 s of 64x48 at 10 fps, JointState and WrenchStamped "
                        "at 100 Hz, ROS 2 MCAP")
    for v in VARIANTS:
        got = r[v]
        assert got["messages"] == 100 + 100 + 3 * 10  # joints, wrench, three cameras
        assert got["ratio"] == r["ratios"][v] > 0
        assert got["read"]["mb_per_s"] > 0 and got["import"]["mb_per_s"] > 0
    cams = ("front", "side", "wrist")  # 1 s at 10 fps: every frame, the H.264 copied
    assert {v: r[v]["cameras"] for v in VARIANTS} == {
        "image": {c: {"mode": "encode", "frames": 10} for c in cams},
        "compressed_image": {c: {"mode": "encode", "frames": 10} for c in cams},
        "compressed_video": {c: {"mode": "copy", "frames": 10} for c in cams}}


def test_the_command_prints_json_for_the_chosen_variant(capsys):
    main(["--seconds", "1", "--width", "64", "--height", "48", "--fps", "10",
          "--variant", "compressed_video"])
    out = json.loads(capsys.readouterr().out)
    assert list(out["ratios"]) == ["compressed_video"] and "image" not in out
