"""A lab's own bags (issue 38, items 1-4): a video camera cut between keyframes, cameras
over different spans, a split ROS 1 bag, a starter mapping's TODOs, partial JointState.

Every bag is written by ``bench.bagsynth`` (rosbags' own writers); every camera frame
draws its message index, so a bundle frame is checked to come from its own message.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pytest
import yaml

from bench.bagsynth import ARM, CAMERA_OFFSET_S, FINGERS, BagSpec, write_bag, write_split
from bench.synth import read_frame_index
from judge.bundle.decode import decode_frames, load_streams
from judge.bundle.inspect import format_report, inspect_bundle
from judge.bundle.intake import intake
from judge.bundle.rosbag import RosbagError, import_bag, list_bag
from judge.bundle.rosbag.mapping import load_mapping
from judge.ensemble.judge import prepare
from judge.ensemble.version import JudgeVersion
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
MARKERS = {"cut": "markers", "topic": "/episode"}
FAKE = JudgeVersion.model_validate({"name": "fake-lab", "models": [
    {"name": n, "backend": "fake", "options": {"script": {"attempt": 0.9, "success": 0.8}}}
    for n in "abc"]})


def mapping_file(folder: Path, **changes) -> Path:
    m = json.loads(json.dumps(MAPPING))
    m.update(changes)
    path = folder / "mapping.yaml"
    path.write_text(yaml.safe_dump(m), encoding="utf-8")
    return path


def frames_of(bundle: str) -> dict[str, tuple[list[int], np.ndarray]]:
    """Camera -> (drawn index of each frame, frame times), every frame decoded."""
    streams = load_streams(intake(bundle))
    out = {}
    for name, v in sorted(streams.videos.items()):
        images = decode_frames({name: v}, v.t).images[0]  # (F, H, W, 3) uint8
        out[name] = ([read_frame_index(im) for im in images], v.t)
    return out


# --- item 1: a CompressedVideo camera with a keyframe every 2 s, cut by markers ---------------

def test_a_video_camera_cut_between_keyframes_covers_the_episode(tmp_path):
    """Keyframes at frames 0, 20, 40, 60 (10 fps); episodes [0.7, 3.6) and [4.3, 7.5) s start
    13 and 3 frames after one. Every camera starts with the episode: the frames from the cut
    to the next keyframe are decoded from the keyframe before the cut and re-encoded, the rest
    copied; the bundles are judged."""
    spec = BagSpec(seconds=8.0, gop=20, contacts=[(1.5, 2.5), (5.0, 6.2)],
                   markers=[(0.7, "start"), (3.6, "stop"), (4.3, "start"), (7.5, "stop")])
    bag = write_bag(tmp_path / "b", "mcap", spec)
    rows = import_bag(bag, mapping_file(tmp_path, episodes=MARKERS), tmp_path / "out")
    spans = [(7, 36), (43, 75)]  # the frames with stamps in [0.7, 3.6) and [4.3, 7.5)
    for r, (a, z), opening in zip(rows, spans, (13, 17), strict=True):
        assert r["frames"] == {"front": z - a, "side": z - a, "wrist": z - a}
        wrist = r["cameras"]["wrist"]
        assert (wrist["mode"], wrist["reencoded_before_keyframe"]) == ("copy", opening)
        assert "skipped_before_keyframe" not in wrist and r["notes"] == []
        for name, (index, t) in frames_of(r["bundle"]).items():
            assert index == list(range(a, z)), name  # each frame from its own message
            # t = 0 is the episode's first message (front frame a, stamped a / 10 s)
            np.testing.assert_allclose(t, np.arange(z - a) / 10 + CAMERA_OFFSET_S[name],
                                       atol=1e-9)
        streams = load_streams(intake(r["bundle"]))
        v = streams.videos["wrist"]
        # re-encoded opening: keyframes every 0.5 s (5 frames); then the bag's own, every 20
        keys = list(np.flatnonzero(v.keyframe))
        assert keys == [k for k in range(opening) if k % 5 == 0] + \
            [k for k in range(opening, z - a) if (k + a) % 20 == 0]
        p = prepare(r["bundle"], FAKE)  # judged: every sampled time is covered by every camera
        assert p.run_id == Path(r["bundle"]).name


def test_cameras_over_different_spans_are_sampled_where_all_cover(tmp_path):
    """A wrist camera whose first three frames are missing from the bag: its frames 3 and 4
    cannot be decoded (no keyframe before them in the bag), so it starts at its keyframe at
    0.507 s. Judging samples 0.6-2.9 s, the front camera's frames inside the span every
    camera covers (0.507-2.900 s), and both import and inspect say so."""
    bag = write_bag(tmp_path / "b", "mcap", BagSpec(seconds=3.0, drop={"wrist": (0, 1, 2)}))
    r = import_bag(bag, mapping_file(tmp_path), tmp_path / "out")[0]
    assert r["cameras"]["wrist"]["skipped_before_keyframe"] == 2
    assert r["notes"] == ["/cam/wrist: 2 frame(s) before the episode's first keyframe dropped",
                          "/cam/wrist: starts 0.507 s after the episode's first message: "
                          "judging samples only the span every camera covers"]
    p = prepare(r["bundle"], FAKE)
    report = inspect_bundle(r["bundle"])
    targets = report["sampled_timestamps"]
    assert targets[0] == 0.6 and targets[-1] == 2.9 and len(targets) == 16
    assert report["common_span_s"] == [0.507, 2.9]
    warning = ("cameras cover different spans (front 0.000-2.900 s, side 0.003-2.903 s, "
               "wrist 0.507-2.907 s): frames are sampled only from 0.507-2.900 s, the span "
               "every camera covers")
    assert warning in report["warnings"]
    assert f"warning:   {warning}" in format_report(report).splitlines()
    assert p.frames.shape[0] >= 1


# --- item 2: a split ROS 1 bag -----------------------------------------------------------------

SPLIT = BagSpec(seconds=4.0, contacts=[(1.0, 2.5)], markers=[(0.3, "start"), (3.3, "stop")])


def test_a_split_ros1_bag_is_one_recording(tmp_path, capsys):
    """``rosbag record --split`` at 2.0 s: the episode [0.3, 3.3) s spans both files. Given
    together (in any order), they are one recording: one bundle of 30 frames a camera, its
    grasp and its release; --json prints it."""
    parts = write_split(tmp_path, "b", SPLIT, at_s=2.0)
    m = mapping_file(tmp_path, episodes=MARKERS)
    out = tmp_path / "out"
    argv = ["import", "rosbag", str(parts[1]), str(parts[0]), "--mapping", str(m),
            "--out", str(out), "--json"]
    assert main(argv) == 0, capsys.readouterr().err
    rows = json.loads(capsys.readouterr().out)
    assert [(r["episode"], Path(r["bundle"]).name) for r in rows] == [(0, "b-ep000")]
    assert sorted(p.name for p in out.iterdir()) == ["b-ep000"]
    r = rows[0]
    assert r["frames"] == {"front": 30, "side": 30, "wrist": 30}
    assert frames_of(r["bundle"])["front"][0] == list(range(3, 33))
    contacts = [(c["kind"], c["t"]) for c in inspect_bundle(r["bundle"])["contacts"]]
    assert [k for k, _ in contacts] == ["grasp", "release"]
    assert abs(contacts[0][1] - 0.7) <= 0.1 and abs(contacts[1][1] - 2.2) <= 0.1
    source = json.loads((Path(r["bundle"]) / "attribution.json").read_text())["env"]["source"]
    assert source["bag"] == str(parts[0].resolve())
    assert source["parts"] == [str(p.resolve()) for p in parts]


def test_a_split_part_alone_or_parts_that_overlap_are_refused_writing_nothing(tmp_path,
                                                                             capsys):
    parts = write_split(tmp_path, "b", SPLIT, at_s=2.0)
    m = mapping_file(tmp_path, episodes=MARKERS)
    out = tmp_path / "out"
    assert main(["import", "rosbag", str(parts[1]), "--mapping", str(m), "--out",
                 str(out)]) == 1  # a refused bag
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and re.fullmatch(
        rf"rcjudge: error: {re.escape(str(parts[1]))}: topic /episode: marker 'stop' at "
        r"1\.\d{3} s: no episode is open \(b_1\.bag looks like part 1 of a split recording: "
        r"give all its parts together\)", err[0]), err
    (tmp_path / "again").mkdir()
    other = write_split(tmp_path / "again", "b", SPLIT, at_s=1.0)[0]
    (tmp_path / "c").mkdir()
    overlapping = (tmp_path / "c" / "b_1.bag")
    overlapping.write_bytes(other.read_bytes())  # b_0.bag's span again, as part 1
    (tmp_path / "c" / "b_0.bag").write_bytes(parts[0].read_bytes())
    assert main(["import", "rosbag", str(tmp_path / "c" / "b_0.bag"), str(overlapping),
                 "--mapping", str(m), "--out", str(out)]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and re.fullmatch(
        rf"rcjudge: error: {re.escape(str(tmp_path / 'c' / 'b_0.bag'))}, "
        rf"{re.escape(str(overlapping))}: split parts overlap in time \(b_1\.bag starts at "
        r"0\.000 s, before b_0\.bag ends at 1\.99\d s\): not one recording", err[0]), err
    assert not out.exists()


def test_bundles_written_before_a_refused_bag_are_printed(tmp_path, capsys):
    """Two bags that are not parts of one recording: each is all or nothing; the first one's
    bundles are written and --json prints them before the second bag's error."""
    good = write_bag(tmp_path / "good.bag", "ros1", BagSpec(seconds=1.0))
    bad = write_bag(tmp_path / "bad.bag", "ros1", BagSpec(seconds=1.0, swap=("front", 2)))
    out = tmp_path / "out"
    assert main(["import", "rosbag", str(good), str(bad), "--mapping",
                 str(mapping_file(tmp_path)), "--out", str(out), "--json"]) == 1
    captured = capsys.readouterr()
    rows = json.loads(captured.out)
    assert [Path(r["bundle"]).name for r in rows] == ["good-ep000"]
    assert "timestamps out of order" in captured.err


# --- item 3: a starter mapping's TODOs ------------------------------------------------------

def test_a_todo_left_in_the_starter_mapping_is_refused_naming_the_fields(tmp_path, capsys):
    bag = write_bag(tmp_path / "b", "mcap", BagSpec(seconds=0.5))
    starter = yaml.safe_load(list_bag(bag)["mapping_yaml"])
    attr = json.loads(json.dumps(ATTRIBUTION))
    attr["policy"]["vendor"] = attr["body"]["calibrated_at"] = "TODO"
    starter["attribution"] = attr
    path = tmp_path / "starter.yaml"
    path.write_text(yaml.safe_dump(starter), encoding="utf-8")
    message = (f"{path}: TODO left in at attribution.body.calibrated_at, "
               "attribution.policy.vendor: fill in what the bag cannot say (docs/rosbag.md)")
    with pytest.raises(RosbagError) as err:
        load_mapping(path)
    assert str(err.value) == message
    out = tmp_path / "out"
    assert main(["import", "rosbag", str(bag), "--mapping", str(path), "--out", str(out)]) == 2
    assert capsys.readouterr().err.strip() == f"rcjudge: error: {message}"
    assert not out.exists()
    starter["attribution"] = {**ATTRIBUTION, "body": {**ATTRIBUTION["body"], "dof": "TODO"}}
    # a numeric TODO and a list's: the same line
    starter["gripper"]["width"]["joints"] = ["TODO"]
    path.write_text(yaml.safe_dump(starter), encoding="utf-8")
    with pytest.raises(RosbagError, match=r": TODO left in at attribution\.body\.dof, "
                                          r"gripper\.width\.joints\[0\]: fill in"):
        load_mapping(path)


# --- item 4: partial JointState -------------------------------------------------------------

def test_partial_joint_states_report_no_drops_that_are_not_there(tmp_path):
    """The arm at 100 Hz and the fingers at 50 Hz from their own driver (own clock): no drop
    is reported; arm messages missing over 0.995-1.195 s are 20 missing in one gap, said once."""
    spec = BagSpec(seconds=3.0, joint_hz=100, fingers_hz=50)
    bag = write_bag(tmp_path / "b", "mcap", spec)
    r = import_bag(bag, mapping_file(tmp_path), tmp_path / "out")[0]
    assert r["notes"] == []
    ch = r["channels"]["/joint_states"]
    assert (ch["messages"], ch["dropped"], ch["rate_hz"]) == (300 + 150, 0, 100.0)
    assert [(g["joints"], g["messages"], g["rate_hz"]) for g in ch["groups"]] == [
        (list(ARM), 300, 100.0), (list(FINGERS), 150, 50.0)]
    s = load_streams(intake(r["bundle"])).signals
    assert len(s.t) == 300
    gap = write_bag(tmp_path / "gap", "mcap", BagSpec(seconds=3.0, joint_hz=100,
                                                      fingers_hz=50, joint_gap=(0.995, 1.195)))
    r = import_bag(gap, mapping_file(tmp_path), tmp_path / "out2")[0]
    assert r["notes"] == ["/joint_states (panda_joint1, …, panda_joint7): 20 message(s) "
                          "missing in 1 gap(s) at 100.0 Hz (first at 0.990 s (+0.210 s))"]
    assert r["channels"]["/joint_states"]["dropped"] == 20
