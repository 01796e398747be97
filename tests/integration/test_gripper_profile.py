"""A gripper profile recorded in the bundle changes how /gripper is read (real MCAP)."""

from __future__ import annotations

import json

import numpy as np
import pytest

from bench.contacts_eval import evaluate
from judge.bundle.create import create_bundle
from judge.bundle.decode import load_streams
from judge.bundle.inspect import format_report, inspect_bundle
from judge.bundle.intake import intake
from judge.errors import ConfigError
from rcjudge.cli import main
from tests.integration.test_transcode import media, sidecar_inputs


@pytest.fixture
def root(tmp_path_factory) -> str:
    d = tmp_path_factory.getbasetemp() / "transcode"
    d.mkdir(exist_ok=True)
    return str(d)


def franka_signals(path) -> str:
    """100 Hz, 3 s, no noise: close at 0.5 s at 0.1 m/s from 80 mm onto a 50 mm object
    (51 mm at 0.79 s: the first sample within 1 mm of the hold level; touch at 0.80 s);
    open at 2.0 s (51 mm at 2.01, 52 mm at 2.02: the first sample more than 1 mm off);
    effort 30 N while driven (0.5-2.3 s), else 0."""
    t = np.arange(301) / 100.0
    w = np.where(t < 0.5, 0.08, np.maximum(0.08 - 0.1 * (t - 0.5), 0.05))
    w = np.where(t >= 2.0, np.minimum(0.05 + 0.1 * (t - 2.0), 0.08), w)
    effort = np.where((t >= 0.5) & (t < 2.3), 30.0, 0.0)
    rows = ["time,shoulder.position,shoulder.velocity,shoulder.effort,gripper.width,"
            "gripper.force"]
    rows += [f"{x:.2f},0.1,0.0,1.0,{a:.5f},{f}" for x, a, f in zip(t, w, effort, strict=True)]
    path.write_text("\n".join(rows) + "\n")
    return str(path)


def test_profile_recorded_and_used(root, tmp_path):
    videos = media(root, "h264_plain.mp4")
    inputs = sidecar_inputs(root)
    signals = franka_signals(tmp_path / "franka.csv")
    create_bundle(videos, signals, inputs["attribution"], str(tmp_path / "with"),
                  gripper="franka-hand")
    create_bundle(videos, signals, inputs["attribution"], str(tmp_path / "without"))
    assert load_streams(intake(str(tmp_path / "with"))).metadata == {
        "rcjudge.gripper": {"profile": "franka-hand"}}
    assert load_streams(intake(str(tmp_path / "without"))).metadata == {}
    got = inspect_bundle(str(tmp_path / "with"))
    assert got["gripper"] == {"profile": "franka-hand"}
    text = format_report(got)
    assert "gripper:   profile=franka-hand (docs/contacts.md)" in text
    assert "contacts:  2 from the width detector (finger width + actuator effort)" in text
    assert "impacts:   from 12 robust sigmas and 5 Nm (gripper profile franka-hand)" in text
    assert (got["contact_detector"], got["impact_floor"]) == (
        "width + effort", {"nm": 5.0, "from": "gripper profile franka-hand"})
    text = format_report(inspect_bundle(str(tmp_path / "without")))
    assert "gripper:" not in text
    assert "from the force detector (/gripper effort as a finger-object force)" in text
    assert "impacts:   from 12 robust sigmas and no physical floor" in text
    assert [(c["kind"], c["t"]) for c in got["contacts"]] == [("grasp", 0.79), ("release", 2.02)]
    # without the profile the effort reads as a contact force: a "grasp" when the drive starts
    old = inspect_bundle(str(tmp_path / "without"))
    assert next((c["kind"], c["t"]) for c in old["contacts"]) == ("grasp", 0.5)


def test_unknown_profile_refused_before_anything_is_written(root, tmp_path, capsys):
    videos = media(root, "h264_plain.mp4")
    inputs = sidecar_inputs(root)
    with pytest.raises(ConfigError, match=r"--gripper robotiq-3f: unknown gripper profile "
                                          r"'robotiq-3f'; known: franka-hand, robotiq-2f85"):
        create_bundle(videos, inputs["signals"], inputs["attribution"], str(tmp_path / "o"),
                      gripper="robotiq-3f")
    args = ["bundle", "create", "--signals", inputs["signals"], "--attribution",
            inputs["attribution"], "--out", str(tmp_path / "o"), "--gripper", "robotiq-3f"]
    for name, path in videos.items():
        args += ["--video", f"{name}={path}"]
    assert main(args) == 2
    assert len(capsys.readouterr().err.strip().splitlines()) == 1
    assert not (tmp_path / "o").exists()


def test_synthetic_real_gripper_signals_all_contacts_found(make_bundles):
    bundles = make_bundles(12, seed=7, width=96, height=64, fps=5, gripper_signal="actuator")
    truth = [json.loads((b / "truth.json").read_text()) for b in bundles]
    result = evaluate(bundles)
    assert result["missed"] == 0, result["misses"]
    assert result["found"] == sum(len(t["contacts"]) for t in truth)
    assert result["max_abs_error_s"] <= 0.1
    assert result["miss_bundles_found"] == result["miss_bundles"]
    assert result["spurious"] == 0, result["spurious_events"]
    base = evaluate(bundles, use_profile=False)  # the force detector reading motor effort
    assert base["found_by_kind"].get("grasp", 0) < result["found_by_kind"]["grasp"]


def test_gripper_fields_from_a_yaml_file(root, tmp_path):
    videos = media(root, "h264_plain.mp4")
    inputs = sidecar_inputs(root)
    signals = franka_signals(tmp_path / "franka.csv")
    spec = tmp_path / "my-hand.yaml"
    spec.write_text("profile: franka-hand\nwidth_noise_m: 0.0005\n")
    create_bundle(videos, signals, inputs["attribution"], str(tmp_path / "b"),
                  gripper=str(spec))
    got = inspect_bundle(str(tmp_path / "b"))
    assert got["gripper"] == {"profile": "franka-hand", "width_noise_m": "0.0005"}
    # 0.5 mm noise: the stop tolerance is 1.5 mm (3 sigmas): still 0.79 s (51 mm; 52 mm at
    # 0.78 s is 2 mm off); the release still 2.02 s (52 mm, the first sample 1.5 mm off)
    assert [(c["kind"], c["t"]) for c in got["contacts"]] == [("grasp", 0.79), ("release", 2.02)]
    spec.write_text("open_width_m: 0.05\nclosed_width_m: 0.06\neffort: none\n")
    with pytest.raises(ConfigError, match=r"my-hand.yaml: .*closed_width_m must be below"):
        create_bundle(videos, signals, inputs["attribution"], str(tmp_path / "c"),
                      gripper=str(spec))
    assert not (tmp_path / "c").exists()
