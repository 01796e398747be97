"""Real MCAP + H.264 through PyAV: exact frames at requested timestamps, and corrupt input."""

from __future__ import annotations

import json
from dataclasses import replace

import numpy as np
import pytest

from bench.synth import read_frame_index
from judge.bundle.decode import decode_frames, load_streams
from judge.bundle.intake import intake
from judge.bundle.manifest import write_manifest
from judge.bundle.write import write_mcap
from judge.errors import (
    ChannelError,
    FrameTimestampError,
    JudgeError,
    McapError,
    VideoError,
)

FPS = 10


@pytest.fixture(scope="module")
def streams(make_bundles):
    folder = make_bundles(1, seed=3, outcome="grasp.slip", width=96, height=64, fps=FPS)[0]
    return load_streams(intake(str(folder)))


def test_streams_summary(streams):
    assert sorted(streams.videos) == ["front", "side", "top"]
    assert [c.topic for c in streams.channels] == [
        "/camera/front", "/camera/side", "/camera/top", "/joint_states", "/gripper"]
    front = streams.videos["front"]
    assert len(front.t) == 61 and front.fps == pytest.approx(10.0)
    assert front.keyframe.sum() == 13  # keyint round(0.5 s × 10 fps) = 5 frames: 0, 5, … 60
    assert streams.signals.effort.shape == (601, 7)
    assert streams.duration_s == pytest.approx(6.0)


def test_frames_are_exactly_the_requested_ones(streams):
    # unsorted, duplicated, between frames (nearest wins), across several GOPs
    targets = np.array([5.9, 0.0, 2.31, 2.31, 0.44, 6.0, 3.04, 1.0])
    frames = decode_frames(streams.videos, targets)
    expected = [59, 0, 23, 23, 4, 60, 30, 10]
    assert frames.images.shape == (3, 8, 64, 96, 3)
    assert frames.images.dtype == np.uint8
    for c in range(3):
        assert [read_frame_index(img) for img in frames.images[c]] == expected
        assert frames.timestamps[c].tolist() == pytest.approx([i / FPS for i in expected])
    assert frames.requested.tolist() == targets.tolist()


def test_every_frame_of_a_camera_decodes_to_its_index(streams):
    one = {"side": streams.videos["side"]}
    frames = decode_frames(one, one["side"].t)
    assert [read_frame_index(img) for img in frames.images[0]] == list(range(61))


def test_timestamp_out_of_range(streams):
    with pytest.raises(FrameTimestampError, match=r"camera front: requested t=6.2000s, nearest "
                                                  r"frame at t=6.0000s, tolerance 0.1000s"):
        decode_frames(streams.videos, np.array([1.0, 6.2]))


# --- corrupt input: each case is a precise error, never a crash or an empty result ---

def rewrite(folder, cameras=None, signals=None, drop_topics=()):
    """Rewrite the bundle's MCAP from (edited) streams and re-hash the manifest."""
    s = load_streams(intake(str(folder)))
    cams = cameras if cameras is not None else [s.videos[n] for n in sorted(s.videos)]
    write_mcap(folder / "rollout.mcap", cams, signals or s.signals, 0)
    if drop_topics:
        _drop(folder / "rollout.mcap", drop_topics)
    write_manifest(folder, ["attribution.json", "rollout.mcap"])
    return intake(str(folder))


def _drop(path, topics):
    from mcap.reader import make_reader
    from mcap.writer import Writer

    with open(path, "rb") as f:
        reader = make_reader(f)
        summary = reader.get_summary()
        records = [(ch, m) for _, ch, m in reader.iter_messages() if ch.topic not in topics]
    with open(path, "wb") as f:
        w = Writer(f)
        w.start()
        ids = {}
        for ch, m in records:
            if ch.topic not in ids:
                schema = summary.schemas[ch.schema_id]
                sid = w.register_schema(schema.name, schema.encoding, schema.data)
                ids[ch.topic] = w.register_channel(ch.topic, ch.message_encoding, sid)
            w.add_message(ids[ch.topic], m.log_time, m.data, m.publish_time)
        w.finish()


def test_truncated_mcap(bundle_copy):
    mcap = bundle_copy / "rollout.mcap"
    mcap.write_bytes(mcap.read_bytes()[: mcap.stat().st_size // 2])
    write_manifest(bundle_copy, ["attribution.json", "rollout.mcap"])
    with pytest.raises(McapError, match=r"rollout.mcap: truncated or corrupt MCAP"):
        load_streams(intake(str(bundle_copy)))


def test_missing_camera_channel(bundle_copy):
    bundle = rewrite(bundle_copy, drop_topics=("/camera/side",))
    with pytest.raises(ChannelError, match=r"expected 3 camera streams, found 2 \(front, top\)"):
        load_streams(bundle)


@pytest.mark.parametrize("topic", ["/gripper", "/joint_states"])
def test_missing_signal_channel(bundle_copy, topic):
    bundle = rewrite(bundle_copy, drop_topics=(topic,))
    with pytest.raises(ChannelError, match=rf"required signal channel {topic} is missing"):
        load_streams(bundle)


def test_non_h264_stream(bundle_copy, monkeypatch):
    from judge.bundle import write

    real = write.compressed_video

    def h265(ns, frame_id, data, fmt):
        return real(ns, frame_id, data, b"h265" if frame_id == b"top" else fmt)

    monkeypatch.setattr(write, "compressed_video", h265)
    bundle = rewrite(bundle_copy)
    with pytest.raises(VideoError, match=r"camera /camera/top has format 'h265', expected 'h264'"):
        load_streams(bundle)


def test_stream_starting_mid_gop(bundle_copy):
    s = load_streams(intake(str(bundle_copy)))
    front = s.videos["front"]
    cut = replace(front, t=front.t[2:], keyframe=front.keyframe[2:], data=front.data[2:])
    bundle = rewrite(bundle_copy, cameras=[cut, s.videos["side"], s.videos["top"]])
    with pytest.raises(VideoError, match=r"camera front starts mid-GOP: .*\(first keyframe at "
                                         r"t=0.5\)"):
        load_streams(bundle)


def test_not_annex_b(bundle_copy):
    s = load_streams(intake(str(bundle_copy)))
    top = s.videos["top"]
    avcc = [len(d).to_bytes(4, "big") + d.lstrip(b"\x00")[1:] for d in top.data]
    bad = replace(top, data=[b.replace(b"\x00\x00\x01", b"\x00\x00\x02") for b in avcc])
    bundle = rewrite(bundle_copy, cameras=[s.videos["front"], s.videos["side"], bad])
    with pytest.raises(VideoError, match=r"camera top is not H.264 Annex B"):
        load_streams(bundle)


def test_inconsistent_joint_names(bundle_copy, monkeypatch):
    from judge.bundle import write

    real = write.joint_blocks

    def renaming(names, pos, vel, eff):
        blocks = real(names, pos, vel, eff)
        if len(names) == 7:  # the joint-state message with index 5
            blocks[5] = real(("elbow", *names[1:]), pos[5:6], vel[5:6], eff[5:6])[0]
        return blocks

    monkeypatch.setattr(write, "joint_blocks", renaming)
    bundle = rewrite(bundle_copy)
    with pytest.raises(ChannelError, match=r"/joint_states message 5 has joints \[elbow,joint2,"):
        load_streams(bundle)


def test_errors_are_value_errors_of_the_project():
    for cls in (McapError, ChannelError, VideoError, FrameTimestampError):
        assert issubclass(cls, ValueError) and issubclass(cls, JudgeError)


def test_garbage_bytes_as_mcap(bundle_copy):
    (bundle_copy / "rollout.mcap").write_bytes(b"\x89MCAP0\r\n" + bytes(5000))
    write_manifest(bundle_copy, ["attribution.json", "rollout.mcap"])
    with pytest.raises(McapError, match="rollout.mcap"):
        load_streams(intake(str(bundle_copy)))


def test_truth_json_is_not_part_of_the_bundle(bundle_copy):
    manifest = json.loads((bundle_copy / "manifest.json").read_text())
    assert "truth.json" not in [f["path"] for f in manifest["files"]]
    assert (bundle_copy / "truth.json").exists()
