"""The `rcjudge` command line: synth, inspect (text and --json), one-line errors."""

from __future__ import annotations

import json
import subprocess
import sys

from rcjudge.cli import main


def test_synth_is_deterministic(tmp_path, capsys):
    a, b = tmp_path / "a", tmp_path / "b"
    args = ["synth", "--n", "2", "--seed", "5", "--width", "96", "--height", "64", "--fps", "5"]
    assert main([*args, "--out", str(a), "--json"]) == 0
    assert json.loads(capsys.readouterr().out) == [str(a / "synth-0005-0000"),
                                                   str(a / "synth-0005-0001")]
    assert main([*args, "--out", str(b)]) == 0
    for name in ("synth-0005-0000", "synth-0005-0001"):
        ma = json.loads((a / name / "manifest.json").read_text())
        mb = json.loads((b / name / "manifest.json").read_text())
        assert ma["bundle_hash"] == mb["bundle_hash"]
        assert (a / name / "truth.json").read_text() == (b / name / "truth.json").read_text()


def test_inspect_json_and_text(make_bundles, capsys):
    folder = make_bundles(1, seed=3, outcome="grasp.slip", width=96, height=64, fps=10)[0]
    truth = json.loads((folder / "truth.json").read_text())
    assert main(["inspect", str(folder), "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["duration_s"] == 6.0
    assert report["cameras"]["front"]["frames"] == 61
    assert report["cameras"]["front"]["keyframe_interval_s"] == 0.5
    assert [c["topic"] for c in report["channels"]][-2:] == ["/joint_states", "/gripper"]
    assert [c["kind"] for c in report["contacts"]] == [c["kind"] for c in truth["contacts"]]
    ts = report["sampled_timestamps"]
    assert len(ts) == 16 and ts[0] == 0.0 and ts[-1] == 6.0
    assert main(["inspect", str(folder)]) == 0
    text = capsys.readouterr().out
    assert "/camera/front      61 msgs    10.00 Hz  foxglove.CompressedVideo [protobuf]" in text
    assert "sampled:   16 per camera: 0.00," in text


def test_errors_are_one_line_without_traceback(tmp_path):
    proc = subprocess.run([sys.executable, "-m", "rcjudge.cli", "inspect", str(tmp_path)],
                          capture_output=True, text=True)
    assert proc.returncode == 1  # an input refused (rcjudge --help's exit codes)
    assert proc.stderr == f"rcjudge: error: {tmp_path}/manifest.json: manifest.json not found " \
                          "(is this a bundle folder?)\n"


def test_inspect_gives_impacts_in_nm_and_takes_a_versions_contact_settings(make_bundles,
                                                                           capsys):
    folder = make_bundles(1, seed=3, outcome="motion.collision", width=96, height=64,
                          fps=10)[0]
    assert main(["inspect", str(folder), "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["contact_settings"]["from"] == "configs/sampling.yaml"
    impacts = [c for c in report["contacts"] if c["kind"] == "impact"]
    assert impacts and all(c["unit"] == "Nm" and 0 < c["peak_value"] < 300 for c in impacts)
    assert main(["inspect", str(folder)]) == 0
    c = impacts[0]
    assert (f"impact   peak {c['peak_value']:.2f} Nm ({c['peak']:.1f} robust sigmas)"
            in capsys.readouterr().out)
    # tiny-vision-streams counts only residuals of 300 Nm and more (impact_min_nm: 300)
    assert main(["inspect", str(folder), "--judge", "tiny-vision-streams", "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["contact_settings"]["from"] == "judge version tiny-vision-streams"
    assert report["contact_settings"]["impact_min_nm"] == 300
    assert report["impact_floor"] == {"nm": 300, "from": "judge version tiny-vision-streams"}
    assert [c for c in report["contacts"] if c["kind"] == "impact"] == []
    assert main(["inspect", str(folder), "--judge", "tiny-vision-streams"]) == 0
    assert ("impacts:   from 12 robust sigmas and 300 Nm (judge version tiny-vision-streams)"
            in capsys.readouterr().out)
