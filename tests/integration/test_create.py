"""`rcjudge bundle create` from ordinary recordings, and sidecar .mp4 cameras."""

from __future__ import annotations

import json
import shutil
from fractions import Fraction
from functools import cache
from pathlib import Path

import av
import numpy as np
import pytest

from bench.synth import frame_code, read_frame_index
from judge.bundle.create import create_bundle
from judge.bundle.decode import decode_frames, load_streams, read_mp4
from judge.bundle.intake import intake
from judge.bundle.manifest import write_manifest
from judge.bundle.write import write_mcap
from judge.errors import AttributionError, BundleError, SignalTableError, VideoError
from rcjudge.cli import main

W, H, FPS, N = 96, 64, 10, 30


def frame(i: int) -> np.ndarray:
    img = np.full((H, W, 3), 90, np.uint8)
    block, bits = frame_code(i, W)
    for b, bit in enumerate(bits):
        img[:block, b * block:(b + 1) * block] = 255 if bit else 0
    return img


def write_mp4(path: Path, b_frames: int = 0) -> Path:
    with av.open(str(path), "w") as c:
        s = c.add_stream("libx264", rate=FPS)
        s.width, s.height, s.pix_fmt = W, H, "yuv420p"
        s.codec_context.gop_size = 5
        s.codec_context.max_b_frames = b_frames
        s.codec_context.options = {"bf": str(b_frames)}
        for i in range(N):
            vf = av.VideoFrame.from_ndarray(frame(i), format="rgb24")
            vf.pts, vf.time_base = i, Fraction(1, FPS)
            for p in s.encode(vf):
                c.mux(p)
        for p in s.encode(None):
            c.mux(p)
    return path


@cache
def recordings(root: str) -> dict:
    d = Path(root)
    d.mkdir(parents=True, exist_ok=True)
    videos = {name: str(write_mp4(d / f"{name}.mp4")) for name in ("wrist", "left", "right")}
    t = np.arange(301) / 100.0
    force = np.where((t > 1.0) & (t < 2.0), 20.0, 0.0)
    width = np.where(t < 1.0, 0.08, np.where(t < 2.0, 0.05, 0.08))
    rows = ["time,shoulder.position,shoulder.velocity,shoulder.effort,gripper.width,gripper.force"]
    rows += [f"{x:.2f},{0.1 * x:.3f},0.1,1.0,{w},{f}" for x, w, f in zip(t, width, force,
                                                                        strict=True)]
    (d / "signals.csv").write_text("\n".join(rows) + "\n")
    attr = {"policy": {"vendor": "lab", "name": "p", "version": "1", "checkpoint": "sha256:ab"},
            "body": {"arm": "ur5e", "hand": "robotiq-2f85", "dof": 7, "mount_h_mm": 850,
                     "calibrated_at": "2026-10-01"},
            "task": {"id": "tabletop.pick_place.cube_001", "tier": "B"},
            "env": {"lighting_k": 5000}, "seed": 7}
    (d / "attribution.json").write_text(json.dumps(attr))
    return {"videos": videos, "signals": str(d / "signals.csv"),
            "attribution": str(d / "attribution.json")}


@pytest.fixture
def rec(tmp_path_factory):
    return recordings(str(tmp_path_factory.getbasetemp() / "recordings"))


def test_create_then_decode_exact_frames(rec, tmp_path):
    out = tmp_path / "bundle"
    manifest = create_bundle(rec["videos"], rec["signals"], rec["attribution"], str(out)).manifest
    bundle = intake(str(out))
    assert bundle.bundle_hash == manifest.bundle_hash
    streams = load_streams(bundle)
    assert sorted(streams.videos) == ["left", "right", "wrist"]
    assert streams.videos["wrist"].keyframe.sum() == 6  # gop 5 over 30 frames
    assert streams.signals.joint_names == ("shoulder",)
    frames = decode_frames(streams.videos, np.array([0.0, 1.3, 2.9]))
    for c in range(3):
        assert [read_frame_index(img) for img in frames.images[c]] == [0, 13, 29]


def test_create_cli_json(rec, tmp_path, capsys):
    out = tmp_path / "b"
    args = ["bundle", "create", "--signals", rec["signals"], "--attribution",
            rec["attribution"], "--out", str(out), "--json"]
    for name, path in rec["videos"].items():
        args += ["--video", f"{name}={path}"]
    assert main(args) == 0
    printed = json.loads(capsys.readouterr().out)
    assert [f["path"] for f in printed["files"]] == ["attribution.json", "rollout.mcap"]
    assert main(args) == 2  # never overwrites
    assert "already exists; bundles are never overwritten" in capsys.readouterr().err


def test_b_frames_reencoded_by_create_but_refused_as_sidecar(rec, tmp_path):
    bframes = write_mp4(tmp_path / "bframes.mp4", b_frames=2)
    videos = {**rec["videos"], "wrist": str(bframes)}
    created = create_bundle(videos, rec["signals"], rec["attribution"], str(tmp_path / "out"))
    assert created.cameras["wrist"].reason == "frames are reordered (B-frames)"
    assert created.cameras["left"].mode == "copy"
    streams = load_streams(intake(str(tmp_path / "out")))
    frames = decode_frames(streams.videos, np.array([0.0, 1.3, 2.9]))
    assert [read_frame_index(img) for img in frames.images[2]] == [0, 13, 29]
    # a sidecar camera inside a bundle is read as it is: B-frames stay refused there
    with pytest.raises(VideoError, match=r"bframes.mp4: frames are reordered \(B-frames\)"):
        read_mp4(None, str(bframes), "wrist")


def test_signal_table_errors(rec, tmp_path):
    bad = tmp_path / "bad.csv"
    bad.write_text("time,arm.position,gripper.width\n0,1,0.08\n0.01,1,0.08\n")
    with pytest.raises(SignalTableError, match=r"missing column\(s\): gripper.force, "
                                               r"arm.velocity, arm.effort"):
        create_bundle(rec["videos"], str(bad), rec["attribution"], str(tmp_path / "o"))
    bad.write_text("time,a.position,a.velocity,a.effort,gripper.width,gripper.force\n"
                   "0,1,0,0,0.08,0\n0,1,0,0,0.08,0\n")
    with pytest.raises(SignalTableError,
                       match=r"'time' must strictly increase; row 2 has 0.0 after 0.0"):
        create_bundle(rec["videos"], str(bad), rec["attribution"], str(tmp_path / "o"))
    bad.write_text("time,a.position,a.velocity,a.effort,gripper.width,gripper.force\n"
                   "0,1,0,0,0.08,0\n0.01,1,0,,0.08,0\n")
    with pytest.raises(SignalTableError, match=r"column 'a.effort' is empty or NaN at row 2"):
        create_bundle(rec["videos"], str(bad), rec["attribution"], str(tmp_path / "o"))
    assert not (tmp_path / "o").exists()


def test_a_binary_signal_table_is_named_in_one_printable_line(rec, tmp_path, capsys):
    """`--signals signals.npz` (numpy's binary archive) printed the CSV parser's message with
    the file's bytes in it; the line names the file and what was expected, in ASCII."""
    npz = tmp_path / "signals.npz"
    np.savez(npz, time=np.arange(100.0), effort=np.ones((10, 10)))
    args = ["bundle", "create", "--signals", str(npz), "--attribution", rec["attribution"],
            "--out", str(tmp_path / "o")]
    for name, path in rec["videos"].items():
        args += ["--video", f"{name}={path}"]
    assert main(args) == 1
    err = capsys.readouterr().err
    assert err == (f"rcjudge: error: {npz}: not a CSV text file (binary content at byte 2); "
                   f"expected a CSV or Parquet (.parquet) signal table\n")
    assert not (tmp_path / "o").exists()
    # a CSV that fails to parse: the parser's words, made printable and cut short
    odd = tmp_path / "odd.csv"
    odd.write_text("time,a\u00e9\n0,1,\u00e9\u00e9\n", encoding="utf-8")
    with pytest.raises(SignalTableError) as raised:
        create_bundle(rec["videos"], str(odd), rec["attribution"], str(tmp_path / "o"))
    assert str(raised.value) == (f"{odd}: not a readable Parquet/CSV table: CSV parse error: "
                                 f"Expected 2 columns, got 3: 0,1,??")


def test_attribution_and_camera_count_checked_first(rec, tmp_path):
    attr = tmp_path / "a.json"
    attr.write_text(json.dumps({"policy": {"vendor": "x"}}))
    with pytest.raises(AttributionError, match=r"missing 10 required attribution field\(s\): "
                                               r"policy.name, policy.version"):
        create_bundle(rec["videos"], rec["signals"], str(attr), str(tmp_path / "o"))
    two = dict(list(rec["videos"].items())[:2])
    with pytest.raises(BundleError, match=r"expected 3 cameras, got 2"):
        create_bundle(two, rec["signals"], rec["attribution"], str(tmp_path / "o"))


def test_sidecar_mp4_cameras(rec, tmp_path):
    out = tmp_path / "bundle"
    create_bundle(rec["videos"], rec["signals"], rec["attribution"], str(out))
    streams = load_streams(intake(str(out)))
    # same bundle, cameras as sidecar files next to a signals-only MCAP
    side = tmp_path / "sidecar"
    (side / "cameras").mkdir(parents=True)
    shutil.copy(out / "attribution.json", side)
    for name, path in rec["videos"].items():
        shutil.copy(path, side / "cameras" / f"{name}.mp4")
    write_mcap(side / "rollout.mcap", [], streams.signals, 0)
    write_manifest(side, ["attribution.json", "rollout.mcap",
                          *(f"cameras/{n}.mp4" for n in rec["videos"])])
    bundle = intake(str(side))
    assert sorted(bundle.sidecars) == ["left", "right", "wrist"]
    sc = load_streams(bundle)
    frames = decode_frames(sc.videos, np.array([0.5, 2.0]))
    assert [read_frame_index(img) for img in frames.images[1]] == [5, 20]
    assert sc.videos["left"].t.tolist() == pytest.approx(streams.videos["left"].t.tolist())


@pytest.mark.parametrize("umask", [0o022, 0o027])
def test_bundles_are_written_with_the_umask(rec, tmp_path, umask):
    """``bundle create`` and ``import rosbag`` write folders 0777 and files 0666 less the
    umask (issue 38 item 7: they were drwx------ whatever the umask)."""
    import os

    from bench.bagsynth import ARM, FINGERS, BagSpec, write_bag
    from judge.bundle.rosbag import import_bag

    bag = write_bag(tmp_path / "b", "mcap", BagSpec(seconds=0.5))
    mapping = tmp_path / "mapping.yaml"
    mapping.write_text(json.dumps({
        "cameras": {"front": "/cam/front", "side": "/cam/side/compressed",
                    "wrist": "/cam/wrist"},
        "joints": {"topic": "/joint_states", "names": list(ARM)},
        "gripper": {"profile": "franka-hand", "width": {"joints": list(FINGERS)}},
        "attribution": json.loads(Path(rec["attribution"]).read_text())}))
    old = os.umask(umask)
    try:
        create_bundle(rec["videos"], rec["signals"], rec["attribution"], str(tmp_path / "c"))
        imported = Path(import_bag(bag, mapping, tmp_path / "out")[0]["bundle"])
    finally:
        os.umask(old)
    for folder in (tmp_path / "c", imported):
        assert folder.stat().st_mode & 0o777 == 0o777 & ~umask, folder
        for f in folder.iterdir():
            assert f.stat().st_mode & 0o777 == 0o666 & ~umask, f
    assert (tmp_path / "out").stat().st_mode & 0o777 == 0o777 & ~umask
