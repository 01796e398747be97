"""Any codec in: `bundle create` copies conforming H.264 and re-encodes everything else.

Every input is written here by PyAV (libx264 at its defaults, i.e. with B-frames; libx265;
libsvtav1; libvpx-vp9; mjpeg; …). Each frame draws its index (``bench.synth.frame_code``),
so the checks read back which frame the bundle decodes at each timestamp.
"""

from __future__ import annotations

import json
from fractions import Fraction
from functools import cache
from pathlib import Path

import av
import numpy as np
import pytest
from av.video.reformatter import ColorRange

from bench.synth import frame_code, read_frame_index
from judge.bundle.create import create_bundle
from judge.bundle.decode import decode_frames, load_streams, read_mp4
from judge.bundle.intake import intake
from judge.bundle.streams import nal_types
from judge.bundle.transcode import EncodeOptions, ingest_video
from judge.errors import VideoError
from rcjudge.cli import main

W, H, FPS, N = 320, 240, 10, 24
COLOUR = (200, 60, 30)
CAMS = ("front", "side", "wrist")


def frame(i: int, w: int = W, h: int = H) -> np.ndarray:
    img = np.empty((h, w, 3), np.uint8)
    img[:] = COLOUR
    img[h // 2:, w // 2:] = (20, 220, 40)  # a green bottom-right quadrant: shows rotation
    block, bits = frame_code(i, w)
    for b, bit in enumerate(bits):
        img[:block, b * block:(b + 1) * block] = 255 if bit else 0
    return img


def write_video(path: Path, codec: str, pts: list[int] | None = None, pix: str = "yuv420p",
                options: dict | None = None, rotation: int | None = None,
                tb: Fraction = Fraction(1, FPS)) -> Path:
    """Frames 0..N-1 (or at ``pts`` in ``tb``) with PyAV; the codec's own defaults otherwise."""
    pts = list(range(N)) if pts is None else pts
    with av.open(str(path), "w") as c:
        s = c.add_stream(codec, rate=FPS)
        s.width, s.height, s.pix_fmt = W, H, pix
        if options:
            s.codec_context.options = options
        if rotation is not None:
            s.set_display_rotation(rotation)
        s.codec_context.time_base = tb  # the encoder keeps every pts as given
        for i, p in enumerate(pts):
            vf = av.VideoFrame.from_ndarray(frame(i), format="rgb24")
            vf.pts, vf.time_base = p, tb
            for pk in s.encode(vf):
                c.mux(pk)
        for pk in s.encode(None):
            c.mux(pk)
    return path


KINDS = {
    "h264_bframes.mp4": ("libx264", {}, "yuv420p"),  # libx264 defaults: B-frames
    "h264_plain.mp4": ("libx264", {"bf": "0", "g": "5"}, "yuv420p"),  # conforms: copied
    "hevc.mkv": ("libx265", {"x265-params": "log-level=none"}, "yuv420p"),
    "av1.mp4": ("libsvtav1", {}, "yuv420p"),
    "vp9.webm": ("libvpx-vp9", {}, "yuv420p"),
    "mjpeg.avi": ("mjpeg", {}, "yuvj420p"),
}


@cache
def media(root: str, kind: str) -> dict[str, str]:
    """Three camera files of one kind, written once per session."""
    codec, options, pix = KINDS[kind]
    d = Path(root) / kind.replace(".", "_")
    d.mkdir(parents=True, exist_ok=True)
    return {cam: str(write_video(d / f"{cam}.{kind.split('.')[-1]}", codec, pix=pix,
                                 options=options)) for cam in CAMS}


@cache
def sidecar_inputs(root: str) -> dict[str, str]:
    d = Path(root)
    t = np.arange(301) / 100.0
    rows = ["time,shoulder.position,shoulder.velocity,shoulder.effort,gripper.width,"
            "gripper.force"]
    rows += [f"{x:.2f},0.1,0.0,1.0,0.08,0.0" for x in t]
    (d / "signals.csv").write_text("\n".join(rows) + "\n")
    attr = {"policy": {"vendor": "lab", "name": "p", "version": "1", "checkpoint": "sha256:ab"},
            "body": {"arm": "ur5e", "hand": "robotiq-2f85", "dof": 7, "mount_h_mm": 850,
                     "calibrated_at": "2026-10-01"},
            "task": {"id": "tabletop.pick_place.cube_001", "tier": "B"},
            "env": {"lighting_k": 5000}, "seed": 7}
    (d / "attribution.json").write_text(json.dumps(attr))
    return {"signals": str(d / "signals.csv"), "attribution": str(d / "attribution.json")}


@pytest.fixture
def root(tmp_path_factory) -> str:
    d = tmp_path_factory.getbasetemp() / "transcode"
    d.mkdir(exist_ok=True)
    return str(d)


def check_bundle(out: Path, times: np.ndarray) -> None:
    """The bundle's own checks, then every frame decoded back at its own timestamp."""
    streams = load_streams(intake(str(out)))  # intake + the reader's checks (IDR first, …)
    assert sorted(streams.videos) == list(CAMS)
    for v in streams.videos.values():
        assert v.t.tolist() == pytest.approx(times.tolist(), abs=1e-9)
        for d, key in zip(v.data, v.keyframe, strict=True):
            types = nal_types(d)
            assert types and (not key or {5, 7, 8} <= set(types))
        assert v.keyframe[0]
        gaps = np.diff(v.t[v.keyframe])
        assert gaps.size == 0 or gaps.max() <= 0.5 + 1e-9
    frames = decode_frames(streams.videos, times)  # one picture per access unit, or it raises
    for c in range(len(CAMS)):
        assert [read_frame_index(img) for img in frames.images[c]] == list(range(len(times)))
        assert frames.timestamps[c].tolist() == pytest.approx(times.tolist(), abs=1e-9)
        patch = frames.images[c, :, H // 4, W // 4].astype(int)  # (T, 3) the base colour
        assert np.abs(patch - COLOUR).max() <= 8


@pytest.mark.parametrize("kind", ["h264_bframes.mp4", "hevc.mkv", "av1.mp4", "vp9.webm",
                                  "mjpeg.avi"])
def test_any_codec_becomes_a_bundle(root, tmp_path, kind):
    videos = media(root, kind)
    inputs = sidecar_inputs(root)
    out = tmp_path / "bundle"
    created = create_bundle(videos, inputs["signals"], inputs["attribution"], str(out))
    assert {c.mode for c in created.cameras.values()} == {"reencode"}
    check_bundle(out, np.arange(N) / FPS)


def test_reasons_and_codecs_reported(root):
    expect = {"h264_bframes.mp4": ("h264", "frames are reordered (B-frames)"),
              "hevc.mkv": ("hevc", "codec hevc"), "av1.mp4": ("libdav1d", "codec libdav1d"),
              "vp9.webm": ("vp9", "codec vp9"), "mjpeg.avi": ("mjpeg", "codec mjpeg")}
    for kind, (codec, reason) in expect.items():
        got = ingest_video(media(root, kind)["front"], "front")
        assert (got.codec, got.mode, got.reason) == (codec, "reencode", reason)
        assert got.packets.keyframe.sum() == 5  # every 5 frames (0.5 s at 10 fps) over 24


def test_conforming_h264_is_copied_packet_for_packet(root, tmp_path):
    videos = media(root, "h264_plain.mp4")
    got = ingest_video(videos["front"], "front")
    assert (got.mode, got.reason) == ("copy", "")
    assert got.packets.data == read_mp4(None, videos["front"], "front").data
    inputs = sidecar_inputs(root)
    created = create_bundle(videos, inputs["signals"], inputs["attribution"],
                            str(tmp_path / "b"))
    assert {c.mode for c in created.cameras.values()} == {"copy"}
    check_bundle(tmp_path / "b", np.arange(N) / FPS)
    forced = ingest_video(videos["front"], "front", EncodeOptions(force=True, keyframe_s=1.0))
    assert (forced.mode, forced.reason) == ("reencode", "re-encode forced")
    assert np.flatnonzero(forced.packets.keyframe).tolist() == [0, 10, 20]


def test_variable_frame_rate_timestamps_kept_exactly(tmp_path):
    # irregular gaps in a 1/1000 time base, B-frames on: pts must survive the re-encode
    pts = [0, 100, 250, 300, 420, 500, 700, 733, 800, 1000, 1100, 1234]
    path = write_video(tmp_path / "vfr.mkv", "libx264", pts=pts, tb=Fraction(1, 1000))
    got = ingest_video(str(path), "front")
    assert got.mode == "reencode"
    assert got.packets.t.tolist() == [p / 1000 for p in pts]
    frames = decode_frames({"front": got.packets}, np.array(pts) / 1000)
    assert [read_frame_index(img) for img in frames.images[0]] == list(range(len(pts)))


def write_full_range(path: Path, codec: str) -> Path:
    """yuv420p flagged full range, pixels converted to full range before encoding."""
    with av.open(str(path), "w") as c:
        s = c.add_stream(codec, rate=FPS)
        s.width, s.height, s.pix_fmt = W, H, "yuv420p"
        s.codec_context.color_range = ColorRange.JPEG
        s.codec_context.options = {"bf": "0"} if codec == "libx264" else {}
        for i in range(N):
            vf = av.VideoFrame.from_ndarray(frame(i), format="rgb24").reformat(
                format="yuv420p", dst_color_range=ColorRange.JPEG)
            vf.pts, vf.time_base = i, Fraction(1, FPS)
            for pk in s.encode(vf):
                c.mux(pk)
        for pk in s.encode(None):
            c.mux(pk)
    return path


@pytest.mark.parametrize(("how", "reason"), [("yuvj420p", "pixel format yuvj420p"),
                                             ("libx264", "pixel format yuvj420p"),
                                             ("libsvtav1", "codec libdav1d")])
def test_full_range_converted_not_copied(tmp_path, how, reason):
    """yuvj420p, or yuv420p flagged full range: colours decode as recorded."""
    path = (write_video(tmp_path / "full.mp4", "libx264", pix="yuvj420p", options={"bf": "0"})
            if how == "yuvj420p" else write_full_range(tmp_path / "full.mp4", how))
    got = ingest_video(str(path), "front")
    assert (got.mode, got.reason) == ("reencode", reason)
    frames = decode_frames({"front": got.packets}, np.array([0.0, 1.0]))
    assert np.abs(frames.images[0, :, H // 4, W // 4].astype(int) - COLOUR).max() <= 8


def test_display_rotation_applied(tmp_path):
    path = write_video(tmp_path / "rot.mp4", "libx264", options={"bf": "0"}, rotation=90)
    got = ingest_video(str(path), "front")
    assert (got.mode, got.reason) == ("reencode", "display rotation 90°")
    img = decode_frames({"front": got.packets}, np.array([0.0])).images[0, 0]
    assert img.shape == (W, H, 3)  # portrait now
    # 90° counter-clockwise: the green bottom-right quadrant is now top-right
    assert tuple(img[W // 4, 3 * H // 4]) == pytest.approx((20, 220, 40), abs=8)
    assert tuple(img[3 * W // 4, 3 * H // 4]) == pytest.approx(COLOUR, abs=8)


def test_not_a_video_one_line_and_nothing_written(root, tmp_path, capsys):
    bad = tmp_path / "notes.mp4"
    bad.write_text("not a video\n")
    videos = {**media(root, "h264_plain.mp4"), "wrist": str(bad)}
    inputs = sidecar_inputs(root)
    with pytest.raises(VideoError, match=r"notes.mp4: not a readable video file"):
        create_bundle(videos, inputs["signals"], inputs["attribution"], str(tmp_path / "o"))
    with pytest.raises(VideoError, match=r"missing.webm: file not found"):
        ingest_video(str(tmp_path / "missing.webm"), "x")
    with pytest.raises(VideoError, match=r"--crf 60: expected an integer 0..51"):
        EncodeOptions(crf=60)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["notes.mp4"]
    args = ["bundle", "create", "--signals", inputs["signals"], "--attribution",
            inputs["attribution"], "--out", str(tmp_path / "o"), "--preset", "warp"]
    for name, path in videos.items():
        args += ["--video", f"{name}={path}"]
    assert main(args) == 2
    assert capsys.readouterr().err.strip().splitlines() == [
        "rcjudge: error: --preset 'warp': expected one of ultrafast, superfast, veryfast, "
        "faster, fast, medium, slow"]


def test_cli_json_reports_each_camera(root, tmp_path, capsys):
    inputs = sidecar_inputs(root)
    args = ["bundle", "create", "--signals", inputs["signals"], "--attribution",
            inputs["attribution"], "--out", str(tmp_path / "b"), "--json"]
    videos = {"front": media(root, "av1.mp4")["front"],
              "side": media(root, "h264_plain.mp4")["side"],
              "wrist": media(root, "vp9.webm")["wrist"]}
    for name, path in videos.items():
        args += ["--video", f"{name}={path}"]
    assert main(args) == 0
    cams = json.loads(capsys.readouterr().out)["cameras"]
    assert {n: (c["mode"], c["codec"], c["frames"], c["keyframes"]) for n, c in cams.items()} == {
        "front": ("reencode", "libdav1d", N, 5), "side": ("copy", "h264", N, 5),
        "wrist": ("reencode", "vp9", N, 5)}
