"""``rcjudge import rosbag``: bags written by rosbags' own writers (ROS 2 MCAP, ROS 2
SQLite, ROS 1) and by the mcap library's ROS 2 writer, imported and read back.

Each camera frame draws its message index (``bench.bagsynth``), so every bundle frame is
checked to come from the right message, at that message's stamp; the F/T sensor's contact
(1.2-2.2 s) must be found by ``inspect`` within 0.1 s.
"""

from __future__ import annotations

import json
import shutil
import sqlite3
from fractions import Fraction
from pathlib import Path

import av
import numpy as np
import pytest
import yaml

from bench.bagsynth import (
    ARM,
    CAMERA_OFFSET_S,
    FINGERS,
    LATENCY_S,
    BagSpec,
    _h264,
    draw,
    write_bag,
)
from bench.synth import read_frame_index
from judge.bundle.decode import decode_frames, load_streams
from judge.bundle.inspect import inspect_bundle
from judge.bundle.intake import intake
from judge.bundle.rosbag import RosbagError, import_bag, list_bag
from judge.bundle.rosbag.mapping import load_mapping
from judge.bundle.transcode import h264_conforms
from rcjudge.cli import main

ATTRIBUTION = {
    "policy": {"vendor": "lab", "name": "pi0", "version": "1", "checkpoint": "ck1"},
    "body": {"arm": "panda", "hand": "franka-hand", "dof": 7, "mount_h_mm": 800,
             "calibrated_at": "2026-01-01"},
    "task": {"id": "tabletop.pick_place.cube_001", "tier": "A"},
}
MAPPING = {
    "cameras": {"front": "/cam/front", "side": "/cam/side/compressed", "wrist": "/cam/wrist"},
    "joints": {"topic": "/joint_states", "names": list(ARM)},
    "gripper": {"profile": "franka-hand", "width": {"joints": list(FINGERS)}},
    "force": {"topic": "/ft/wrench"},
    "attribution": ATTRIBUTION,
}
SUFFIX = {"mcap": "", "sqlite3": "", "ros1": ".bag", "mcap_ros2": ".mcap"}


def mapping_file(folder: Path, **changes) -> Path:
    m = json.loads(json.dumps(MAPPING))
    m.update(changes)
    path = folder / "mapping.yaml"
    path.write_text(yaml.safe_dump(m), encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def bags(tmp_path_factory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("bags")
    return {s: write_bag(root / f"run_{s}{SUFFIX[s]}", s) for s in SUFFIX}


def frames_of(bundle: str) -> dict[str, tuple[list[int], np.ndarray, np.ndarray]]:
    """Camera -> (drawn index of each frame, frame times, first frame (H, W, 3))."""
    streams = load_streams(intake(bundle))
    out = {}
    for name, v in sorted(streams.videos.items()):
        images = decode_frames({name: v}, v.t).images[0]  # (F, H, W, 3) uint8
        out[name] = ([read_frame_index(im) for im in images], v.t, images[0])
    return out


@pytest.mark.parametrize("storage", list(SUFFIX))
def test_every_storage_imports_frames_stamps_and_contacts(bags, storage, tmp_path):
    rows = import_bag(bags[storage], mapping_file(tmp_path), tmp_path / "out")
    assert len(rows) == 1 and rows[0]["episode"] == 0
    r = rows[0]
    assert {n: c["mode"] for n, c in r["cameras"].items()} == \
        {"front": "encode", "side": "encode", "wrist": "copy"}
    assert r["frames"] == {"front": 30, "side": 30, "wrist": 30}
    for name, (index, t, _) in frames_of(r["bundle"]).items():
        assert index == list(range(30)), name  # each frame from its own message, in order
        # t = 0 is the first message (front frame 0's stamp): each frame at its header.stamp
        np.testing.assert_allclose(t, np.arange(30) / 10 + CAMERA_OFFSET_S[name], atol=1e-9)
    report = inspect_bundle(r["bundle"])
    kinds = [(c["kind"], c["t"]) for c in report["contacts"]]
    assert [k for k, _ in kinds] == ["grasp", "release"]
    assert abs(kinds[0][1] - 1.2) <= 0.1 and abs(kinds[1][1] - 2.2) <= 0.1
    attr = json.loads((Path(r["bundle"]) / "attribution.json").read_text())
    src = attr["env"]["source"]
    assert src["kind"] == "rosbag" and src["bag"] == str(bags[storage].resolve())
    assert src["storage"] == {"mcap_ros2": "mcap"}.get(storage, storage)
    assert src["topics"]["camera.side"] == "/cam/side/compressed"
    assert src["topics"]["force"] == "/ft/wrench" and src["cut"]["mode"] == "bag"
    assert r["notes"] == []


def test_partial_joint_states_merge_and_signal_rates(bags, tmp_path):
    r = import_bag(bags["mcap"], mapping_file(tmp_path), tmp_path / "out")[0]
    s = load_streams(intake(r["bundle"])).signals
    assert s.joint_names == ARM
    assert len(s.t) == 150 and s.rate_hz == pytest.approx(50.0)  # arm messages, 50 Hz
    assert len(s.gripper_t) == 300  # the F/T sensor's 100 Hz: the densest gripper input
    # fingers come in their own messages at 25 Hz, each 0.04 (half of 0.08 open)
    assert s.gripper_width[0] == pytest.approx(0.08)
    held = s.gripper_width[(s.gripper_t > 1.3) & (s.gripper_t < 2.1)]
    assert np.allclose(held, 0.04)
    force = s.gripper_force
    assert force[s.gripper_t < 1.1].max() == pytest.approx(0.0)  # tared
    assert force[(s.gripper_t >= 1.21) & (s.gripper_t < 2.19)].min() == pytest.approx(12.0)
    assert np.allclose(s.position[:, 0], 0.2 * np.sin(s.t))  # joint1 = 0.2 sin(t)
    assert np.allclose(s.effort[:, 6], 1.6)
    assert r["channels"]["/ft/wrench"]["rate_hz"] == 100.0
    assert r["channels"]["/cam/front"]["rate_hz"] == 10.0


@pytest.mark.parametrize("encoding", ["bgr8", "rgba8", "bgra8", "mono8", "mono16", "yuv422",
                                      "uyvy", "bayer_rggb8"])
def test_image_encodings(encoding, tmp_path):
    bag = write_bag(tmp_path / "b", "mcap", BagSpec(seconds=0.5, encoding=encoding))
    r = import_bag(bag, mapping_file(tmp_path), tmp_path / "out")[0]
    index, _, first = frames_of(r["bundle"])["front"]
    assert index == list(range(5))
    low = first[70, 64].astype(int)  # the lower half: (200, 60, 60), grey (106) in mono
    want = (106, 106, 106) if encoding.startswith("mono") else (200, 60, 60)
    assert np.abs(low - want).max() <= 4, low


@pytest.mark.parametrize("storage", list(SUFFIX))
def test_png_h265_and_nonconforming_h264_are_reencoded(storage, tmp_path):
    bag = write_bag(tmp_path / f"b{SUFFIX[storage]}", storage, BagSpec(seconds=1.0, kinds={
        "front": "h264-noheaders", "side": "png", "wrist": "h265"}))
    r = import_bag(bag, mapping_file(tmp_path), tmp_path / "out")[0]
    how = r["cameras"]
    assert (how["front"]["mode"], how["front"]["reason"]) == \
        ("reencode", "keyframe 5 lacks SPS/PPS")
    assert (how["wrist"]["mode"], how["wrist"]["reason"]) == ("reencode", "codec h265")
    assert (how["side"]["mode"], how["side"]["codec"]) == ("encode", "png")
    for name, (index, t, _) in frames_of(r["bundle"]).items():
        assert index == list(range(10)), name
        np.testing.assert_allclose(t, np.arange(10) / 10 + CAMERA_OFFSET_S[name], atol=1e-9)


def test_foxglove_compressed_image_and_a_width_field_without_force(tmp_path):
    """The gripper's width from a std_msgs/msg/Float64 topic's ``data``, no F/T sensor and no
    gripper effort: the profile's width detector (``effort: none``) finds the grasp."""
    spec = BagSpec(seconds=3.0, kinds={"front": "image", "side": "foxglove-jpeg",
                                       "wrist": "h264"}, width_topic=True)
    bag = write_bag(tmp_path / "b", "mcap", spec)
    m = mapping_file(tmp_path, gripper={"profile": "franka-hand", "width": {
        "topic": "/gripper/width", "field": "data"}}, force=None)
    r = import_bag(bag, m, tmp_path / "out")[0]
    assert r["cameras"]["side"]["type"] == "foxglove_msgs/msg/CompressedImage"
    frames = frames_of(r["bundle"])
    assert frames["side"][0] == list(range(30))
    np.testing.assert_allclose(frames["side"][1], np.arange(30) / 10 + 0.003, atol=1e-9)
    report = inspect_bundle(r["bundle"])
    assert report["gripper"]["effort"] == "none"
    s = load_streams(intake(r["bundle"])).signals
    assert len(s.gripper_t) == 60 and np.allclose(s.gripper_force, 0.0)  # 20 Hz, no effort
    kinds = [(c["kind"], c["t"]) for c in report["contacts"]]
    assert [k for k, _ in kinds] == ["grasp", "release"]
    assert abs(kinds[0][1] - 1.2) <= 0.1 and abs(kinds[1][1] - 2.2) <= 0.1


@pytest.mark.parametrize("storage", ["sqlite3", "ros1"])
def test_markers_cut_two_episodes_with_their_own_frames_and_contacts(storage, tmp_path):
    spec = BagSpec(seconds=4.0, contacts=[(0.8, 1.4), (2.8, 3.4)],
                   markers=[(0.2, "start"), (1.75, "stop"), (2.2, "start"), (3.75, "stop")])
    bag = write_bag(tmp_path / f"b{SUFFIX[storage]}", storage, spec)
    m = mapping_file(tmp_path, episodes={"cut": "markers", "topic": "/episode"})
    rows = import_bag(bag, m, tmp_path / "out")
    assert [r["episode"] for r in rows] == [0, 1]
    assert [Path(r["bundle"]).name for r in rows] == ["b-ep000", "b-ep001"]
    firsts = [(2, 18), (22, 38)]  # frames with stamps in [0.2, 1.75) and [2.2, 3.75)
    for r, (a, z) in zip(rows, firsts, strict=True):
        frames = frames_of(r["bundle"])
        assert frames["front"][0] == list(range(a, z))
        assert frames["side"][0] == list(range(a, z))
        # CompressedVideo cut mid-GOP (keyframe every 5): decoded from the keyframe before
        # the cut, its opening re-encoded: the camera starts with the episode
        assert frames["wrist"][0] == list(range(a, z))
        contacts = [(c["kind"], c["t"]) for c in inspect_bundle(r["bundle"])["contacts"]]
        t0 = a / 10  # t = 0 is the episode's first message: front frame a
        grasp = spec.contacts[r["episode"]][0] - t0
        assert contacts[0][0] == "grasp" and abs(contacts[0][1] - grasp) <= 0.1
        cut = json.loads((Path(r["bundle"]) / "attribution.json").read_text())[
            "env"]["source"]["cut"]
        assert cut["mode"] == "markers"
    # frames 2, 3, 4 re-encoded from keyframe 0; 22, 23, 24 from 20
    assert [r["cameras"]["wrist"]["reencoded_before_keyframe"] for r in rows] == [3, 3]
    assert [r["cameras"]["wrist"]["mode"] for r in rows] == ["copy", "copy"]
    assert rows[0]["notes"] == rows[1]["notes"] == []


def test_ranges_and_episode_selection(bags, tmp_path):
    m = mapping_file(tmp_path, episodes={"cut": "ranges", "ranges": [[0.0, 1.0], [1.5, 2.9]]})
    rows = import_bag(bags["ros1"], m, tmp_path / "out", episodes="1")
    assert [r["episode"] for r in rows] == [1]
    # the bag starts at its first log time (0.5 ms, the F/T message): [1.5005, 2.9005) s
    assert frames_of(rows[0]["bundle"])["front"][0] == list(range(16, 30))
    with pytest.raises(RosbagError, match=r"episode\(s\) \[2\] not in the bag \(2 episode"):
        import_bag(bags["ros1"], m, tmp_path / "out2", episodes="0-2")


def test_stamp_zero_uses_log_time_and_drops_jumps_stops_are_reported(tmp_path):
    spec = BagSpec(seconds=3.0, stamp_zero=("side",), drop={"front": (10, 11)},
                   jump=("wrist", 20, 1.0), ft_until=1.5)
    bag = write_bag(tmp_path / "b", "mcap", spec)
    r = import_bag(bag, mapping_file(tmp_path), tmp_path / "out")[0]
    frames = frames_of(r["bundle"])
    side_t = frames["side"][1]
    np.testing.assert_allclose(side_t, np.arange(30) / 10 + CAMERA_OFFSET_S["side"]
                               + LATENCY_S, atol=1e-9)
    assert frames["front"][0] == [k for k in range(30) if k not in (10, 11)]
    ch = r["channels"]
    assert ch["/cam/side/compressed"]["from_log_time"] == 30
    assert ch["/cam/front"]["dropped"] == 2 and ch["/cam/front"]["gaps"] == [[0.9, 0.3]]
    assert ch["/cam/wrist"]["clock_jumps"] == [[3.007, 1.0]]  # frame 20: 2.007 s + 1 s
    assert ch["/cam/wrist"]["dropped"] == 0  # the jump's gap is no drop
    assert ch["/ft/wrench"]["stopped_at"] == 1.49
    notes = r["notes"]
    assert "/cam/front: 2 message(s) missing in 1 gap(s) at 10.0 Hz (first at 0.900 s " \
           "(+0.300 s))" in notes
    assert "/cam/wrist: clock jump at 3.007 s: header.stamp moved +1.000 s against the log " \
           "time" in notes
    assert "/ft/wrench: stops at 1.490 s, before the episode ends" in notes
    assert "/cam/side/compressed: 30 message(s) without header.stamp: placed at their log " \
           "time" in notes


def test_attribution_from_custom_data_and_a_topic(tmp_path):
    bag = write_bag(tmp_path / "b", "mcap", BagSpec(seconds=0.5, custom_data={"ckpt": "c-77"},
                                                    task="tabletop.pick_place.mug_022"))
    attr = json.loads(json.dumps(ATTRIBUTION))
    del attr["policy"]["checkpoint"], attr["task"]["id"]
    m = mapping_file(tmp_path, attribution=attr, attribution_from={
        "policy.checkpoint": {"custom_data": "ckpt"}, "task.id": {"topic": "/task"}})
    r = import_bag(bag, m, tmp_path / "out")[0]
    got = json.loads((Path(r["bundle"]) / "attribution.json").read_text())
    assert got["policy"]["checkpoint"] == "c-77"
    assert got["task"]["id"] == "tabletop.pick_place.mug_022"


def test_list_prints_topics_and_a_starter_mapping(bags, tmp_path, capsys):
    r = list_bag(bags["mcap"])
    assert r["storage"] == "mcap"
    rows = {t["topic"]: (t["type"], t["count"], t["rate_hz"]) for t in r["topics"]}
    assert rows == {
        "/cam/front": ("sensor_msgs/msg/Image", 30, 10.0),
        "/cam/side/compressed": ("sensor_msgs/msg/CompressedImage", 30, 10.0),
        "/cam/wrist": ("foxglove_msgs/msg/CompressedVideo", 30, 10.0),
        "/ft/wrench": ("geometry_msgs/msg/WrenchStamped", 300, 100.0),
        # 150 arm + 75 finger messages, logged 0.001 s to 2.981 s: 224 / 2.98 s
        "/joint_states": ("sensor_msgs/msg/JointState", 225, 75.17),
    }
    assert r["joint_names"] == list(ARM) + list(FINGERS)
    starter = yaml.safe_load(r["mapping_yaml"])
    assert starter["cameras"] == MAPPING["cameras"]
    assert starter["joints"] == MAPPING["joints"]
    assert starter["gripper"] == MAPPING["gripper"]
    assert starter["force"] == {"topic": "/ft/wrench", "component": "norm"}
    assert starter["episodes"] == {"cut": "bag"}
    assert main(["import", "rosbag", str(bags["mcap"]), "--list"]) == 0
    out = capsys.readouterr().out
    assert "  /cam/wrist            foxglove_msgs/msg/CompressedVideo       30      10.0\n" in out
    assert "# starter mapping:" in out
    # with the attribution filled in, the starter imports
    starter["attribution"] = ATTRIBUTION
    path = tmp_path / "starter.yaml"
    path.write_text(yaml.safe_dump(starter), encoding="utf-8")
    assert load_mapping(path).cameras == MAPPING["cameras"]
    assert len(import_bag(bags["mcap"], path, tmp_path / "out")) == 1


# --- bad input: one line naming bag, topic and problem; exit 1 (a bad mapping: 2); nothing
# in --out --------------------------------------------------------------------------------

def _refused(capsys, out: Path, argv: list[str], message: str, code: int = 1) -> None:
    assert main(argv) == code
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and message in err[0], err
    assert not out.exists() or not any(out.iterdir())


def test_missing_topic(bags, tmp_path, capsys):
    m = mapping_file(tmp_path, force={"topic": "/ft/none"})
    out = tmp_path / "out"
    _refused(capsys, out, ["import", "rosbag", str(bags["mcap"]), "--mapping", str(m),
                           "--out", str(out)],
             f"{bags['mcap']}: topic /ft/none (force) is not in the bag; it has /cam/front")


def test_unknown_message_type(tmp_path, capsys):
    bag = write_bag(tmp_path / "b", "sqlite3", BagSpec(seconds=0.5))
    with sqlite3.connect(bag / "b.db3") as db:  # a Humble bag: no definitions stored
        db.execute("DELETE FROM message_definitions")
    out = tmp_path / "out"
    _refused(capsys, out, ["import", "rosbag", str(bag), "--mapping", str(mapping_file(
        tmp_path)), "--out", str(out)], f"{bag}: topic /cam/wrist: unknown message type "
        "foxglove_msgs/msg/CompressedVideo")


def test_truncated_mcap(bags, tmp_path, capsys):
    bag = tmp_path / "cut.mcap"
    data = bags["mcap_ros2"].read_bytes()
    bag.write_bytes(data[: len(data) // 2])
    out = tmp_path / "out"
    _refused(capsys, out, ["import", "rosbag", str(bag), "--mapping", str(mapping_file(
        tmp_path)), "--out", str(out)], f"{bag}: not a readable mcap bag (")


def test_db3_without_metadata(bags, tmp_path, capsys):
    bag = tmp_path / "noyaml"
    shutil.copytree(bags["sqlite3"], bag)
    (bag / "metadata.yaml").unlink()
    out = tmp_path / "out"
    argv = ["import", "rosbag", str(bag), "--mapping", str(mapping_file(tmp_path)),
            "--out", str(out)]
    _refused(capsys, out, argv, f"{bag}: a ROS 2 bag folder needs its metadata.yaml (found "
             "run_sqlite3.db3)")
    argv[2] = str(bag / "run_sqlite3.db3")
    _refused(capsys, out, argv, "a SQLite bag is read from its folder")


def test_camera_without_frames_in_an_episode_writes_nothing(bags, tmp_path, capsys):
    m = mapping_file(tmp_path, episodes={"cut": "ranges", "ranges": [[0.0, 1.0],
                                                                      [2.992, 3.5]]})
    out = tmp_path / "out"
    _refused(capsys, out, ["import", "rosbag", str(bags["mcap"]), "--mapping", str(m),
                           "--out", str(out)],
             f"{bags['mcap']}: topic /cam/front: camera front has no frames in episode 1 "
             "(2.992-3.500 s of the bag)")


def test_timestamps_out_of_order(tmp_path, capsys):
    bag = write_bag(tmp_path / "b.bag", "ros1", BagSpec(seconds=0.5, swap=("front", 2)))
    out = tmp_path / "out"
    _refused(capsys, out, ["import", "rosbag", str(bag), "--mapping", str(mapping_file(
        tmp_path)), "--out", str(out)], f"{bag}: topic /cam/front: timestamps out of order: "
        "message 3 at 1790000000.200000000 s is not after message 2 at 1790000000.300000000 s")


@pytest.mark.parametrize(("change", "message"), [
    ({"cameras": {"front": "/a", "side": "/b"}}, "cameras: Value error, expected three cameras"),
    ({"gripper": {"profile": "franka-hand", "width": {"joints": ["a"], "field": "x"}}},
     "gripper.width: Value error, give exactly one of joints"),
    ({"gripper": {"profile": "no-such", "width": {"joints": ["a"]}}},
     "gripper: unknown gripper profile 'no-such'"),
    ({"episodes": {"cut": "markers"}}, "episodes: Value error, cut: markers needs topic"),
    ({"force": {"topic": "/ft", "component": "w"}}, "force.component: Input should be"),
])
def test_mapping_errors_name_the_field(bags, tmp_path, capsys, change, message):
    m = mapping_file(tmp_path, **change)
    out = tmp_path / "out"
    _refused(capsys, out, ["import", "rosbag", str(bags["mcap"]), "--mapping", str(m),
                           "--out", str(out)], f"{m}: ", code=2)
    with pytest.raises(RosbagError, match=message.replace("(", r"\(")):
        load_mapping(m)


def test_h264_conformance_of_message_access_units():
    """B slices are found from the slice headers alone (no decode of the whole stream)."""
    frames = [draw(k, 128, 96, 0) for k in range(12)]
    assert h264_conforms(_h264(frames, 10)) == ""
    ctx = av.CodecContext.create("libx264", "w")
    ctx.width, ctx.height, ctx.pix_fmt = 128, 96, "yuv420p"
    ctx.time_base, ctx.framerate = Fraction(1, 10), Fraction(10, 1)
    ctx.options = {"preset": "veryfast", "threads": "1",
                   "x264-params": "repeat-headers=1:keyint=6:bframes=2:b-adapt=0"}
    units = []
    for i, img in enumerate(frames):
        vf = av.VideoFrame.from_ndarray(img, format="rgb24")
        vf.pts = i
        units += [bytes(p) for p in ctx.encode(vf)]
    units += [bytes(p) for p in ctx.encode(None)]
    # decode order I P B B P B B ...: the first B-frame is the third access unit
    assert h264_conforms(units) == "frame 2 has B slices"
    assert h264_conforms(_h264(frames, 10, headers=False)) == "keyframe 5 lacks SPS/PPS"
