"""`rcjudge import lerobot`: LeRobot v3.0 and v2.1 layouts written here with pyarrow + PyAV.

v3.0: two episodes sharing one AV1 mp4 per camera (cut by from/to timestamps) and one data
Parquet; v2.1: a file per episode, two cameras (refused, or padded). Every frame draws its
dataset-wide index, so the checks read back which frame each bundle decodes. And two
datasets written by the lerobot package itself (``tests/fixtures/lerobot/``, made by its
``make_dataset.py``): all episodes in one file per camera, and a new file per episode.
"""

from __future__ import annotations

import json
import re
from fractions import Fraction
from pathlib import Path

import av
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import yaml

from bench.synth import frame_code, read_frame_index
from judge.bundle.decode import decode_frames, load_streams
from judge.bundle.intake import intake
from judge.bundle.lerobot import LeRobotError, LeRobotSetupError, import_lerobot
from rcjudge.cli import main

W, H, FPS = 160, 120, 10
LENGTHS = (20, 15)  # frames of episode 0 and 1
JOINTS = [f"j{i}" for i in range(7)]
TASK = "Pick up the cube and place it in the box."


def frame(i: int) -> np.ndarray:
    img = np.full((H, W, 3), 100, np.uint8)
    block, bits = frame_code(i, W)
    for b, bit in enumerate(bits):
        img[:block, b * block:(b + 1) * block] = 255 if bit else 0
    return img


def write_mp4(path: Path, frames: range, codec: str = "libsvtav1") -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with av.open(str(path), "w") as c:
        s = c.add_stream(codec, rate=FPS)
        s.width, s.height, s.pix_fmt = W, H, "yuv420p"
        for k, i in enumerate(frames):
            vf = av.VideoFrame.from_ndarray(frame(i), format="rgb24")
            vf.pts, vf.time_base = k, Fraction(1, FPS)
            for p in s.encode(vf):
                c.mux(p)
        for p in s.encode(None):
            c.mux(p)


def rows(ep: int, n: int, first: int) -> dict:
    t = np.arange(n) / FPS
    state = np.zeros((n, 8), np.float32)
    state[:, :7] = 0.1 * ep + 0.01 * np.arange(7)
    state[:, 0] += t  # joint j0 moves at 1 rad/s
    state[:, 7] = 0.08 - 0.002 * np.arange(n)  # gripper width (m), closing
    return {"observation.state": list(state), "timestamp": t.astype(np.float32),
            "frame_index": np.arange(n), "episode_index": np.full(n, ep),
            "index": first + np.arange(n), "task_index": np.zeros(n, np.int64)}


def info(version: str, cams: list[str], **paths) -> dict:
    feats = {f"observation.images.{c}": {"dtype": "video", "shape": [H, W, 3],
                                         "names": ["height", "width", "channels"]}
             for c in cams}
    feats["observation.state"] = {"dtype": "float32", "shape": [8],
                                  "names": {"motors": [*JOINTS, "gripper"]}}
    return {"codebase_version": version, "fps": FPS, "features": feats, "chunks_size": 1000,
            **paths}


def write_v3(root: Path) -> Path:
    cams = ["front", "side", "wrist"]
    (root / "meta" / "episodes" / "chunk-000").mkdir(parents=True)
    (root / "meta" / "info.json").write_text(json.dumps(info(
        "v3.0", cams, data_path="data/chunk-{chunk_index:03d}/file-{file_index:03d}.parquet",
        video_path="videos/{video_key}/chunk-{chunk_index:03d}/file-{file_index:03d}.mp4")))
    pq.write_table(pa.table({"task_index": [0], "task": [TASK]}),
                   root / "meta" / "tasks.parquet")
    eps = []
    for ep, (n, first) in enumerate(zip(LENGTHS, (0, LENGTHS[0]), strict=True)):
        row = {"episode_index": ep, "tasks": [TASK], "length": n, "data/chunk_index": 0,
               "data/file_index": 0, "dataset_from_index": first,
               "dataset_to_index": first + n}
        for c in cams:
            row |= {f"videos/observation.images.{c}/chunk_index": 0,
                    f"videos/observation.images.{c}/file_index": 0,
                    f"videos/observation.images.{c}/from_timestamp": first / FPS,
                    f"videos/observation.images.{c}/to_timestamp": (first + n) / FPS}
        eps.append(row)
    pq.write_table(pa.Table.from_pylist(eps),
                   root / "meta" / "episodes" / "chunk-000" / "file-000.parquet")
    tables = [pa.table(rows(ep, n, first)) for ep, (n, first) in
              enumerate(zip(LENGTHS, (0, LENGTHS[0]), strict=True))]
    (root / "data" / "chunk-000").mkdir(parents=True)
    pq.write_table(pa.concat_tables(tables), root / "data" / "chunk-000" / "file-000.parquet")
    for c in cams:
        write_mp4(root / "videos" / f"observation.images.{c}" / "chunk-000" / "file-000.mp4",
                  range(sum(LENGTHS)))
    return root


def write_v21(root: Path) -> Path:
    cams = ["front", "wrist"]
    (root / "meta").mkdir(parents=True)
    (root / "meta" / "info.json").write_text(json.dumps(info(
        "v2.1", cams,
        data_path="data/chunk-{episode_chunk:03d}/episode_{episode_index:06d}.parquet",
        video_path="videos/chunk-{episode_chunk:03d}/{video_key}/"
                   "episode_{episode_index:06d}.mp4")))
    (root / "meta" / "episodes.jsonl").write_text(
        json.dumps({"episode_index": 0, "tasks": [TASK], "length": 12}) + "\n")
    (root / "meta" / "tasks.jsonl").write_text(json.dumps({"task_index": 0, "task": TASK}))
    (root / "data" / "chunk-000").mkdir(parents=True)
    pq.write_table(pa.table(rows(0, 12, 0)), root / "data" / "chunk-000" /
                   "episode_000000.parquet")
    for c in cams:
        write_mp4(root / "videos" / "chunk-000" / f"observation.images.{c}" /
                  "episode_000000.mp4", range(12), codec="libx264")
    return root


MAPPING = {"repo_id": "lab/pick_cube",
           "attribution": {"policy": {"vendor": "lab", "name": "act", "version": "1",
                                      "checkpoint": "sha256:ab"},
                           "body": {"arm": "so100", "hand": "parallel-jaw", "dof": 6,
                                    "mount_h_mm": 0, "calibrated_at": "2026-10-01"},
                           "task": {"tier": "B"}, "env": {"site": "lab-1"}, "seed": 0},
           "tasks": {TASK: "tabletop.pick_place.cube_001"},
           "gripper": {"profile": "franka-hand", "width": 7}}


@pytest.fixture
def mapping(tmp_path) -> str:
    path = tmp_path / "mapping.yaml"
    path.write_text(yaml.safe_dump(MAPPING))
    return str(path)


def test_v3_two_episodes_cut_from_one_av1_file(tmp_path, mapping, capsys):
    root = write_v3(tmp_path / "ds")
    out = tmp_path / "bundles"
    assert main(["import", "lerobot", str(root), "--out", str(out), "--mapping", mapping,
                 "--json"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert [(r["episode_index"], Path(r["bundle"]).name, r["frames"]) for r in result] == [
        (0, "lab_pick_cube-ep000000", {"front": 20, "side": 20, "wrist": 20}),
        (1, "lab_pick_cube-ep000001", {"front": 15, "side": 15, "wrist": 15})]
    for ep, (n, first) in enumerate(zip(LENGTHS, (0, LENGTHS[0]), strict=True)):
        bundle = intake(str(out / f"lab_pick_cube-ep{ep:06d}"))
        attr = bundle.attribution
        assert attr.task.id == "tabletop.pick_place.cube_001"
        assert (attr.env["dataset"], attr.env["episode_index"]) == ("lab/pick_cube", ep)
        streams = load_streams(bundle)
        assert streams.metadata == {"rcjudge.gripper": {"profile": "franka-hand",
                                                        "effort": "none"}}
        v = streams.videos["front"]
        assert v.t.tolist() == pytest.approx((np.arange(n) / FPS).tolist(), abs=1e-9)
        frames = decode_frames(streams.videos, v.t)
        for c in range(3):  # episode 1 starts at the dataset's frame 20
            assert [read_frame_index(img) for img in frames.images[c]] == list(
                range(first, first + n))
        s = streams.signals
        assert s.joint_names == tuple(JOINTS)
        assert s.gripper_width[:3].tolist() == pytest.approx([0.08, 0.078, 0.076], abs=1e-7)
        assert s.velocity[5, 0] == pytest.approx(1.0, abs=1e-5)  # derived: d j0/dt
        assert s.effort.max() == 0.0
    assert result[0]["derived"] == ["velocity derived: numpy.gradient of observation.state "
                                    "over timestamp", "effort absent: written as 0"]


def test_v21_two_cameras_refused_or_padded(tmp_path, mapping):
    root = write_v21(tmp_path / "ds21")
    with pytest.raises(LeRobotError, match=r"ds21: 2 camera\(s\) \(front, wrist\); a bundle "
                                           r"needs 3 \(--pad-cameras repeats the first\)"):
        import_lerobot(str(root), str(tmp_path / "o"), mapping)
    assert not (tmp_path / "o").exists()
    got = import_lerobot(str(root), str(tmp_path / "o"), mapping, pad_cameras=True).bundles
    assert got[0]["frames"] == {"front": 12, "wrist": 12, "front_copy": 12}
    streams = load_streams(intake(got[0]["bundle"]))
    assert sorted(streams.videos) == ["front", "front_copy", "wrist"]


def test_mapping_and_episode_errors(tmp_path, mapping):
    root = write_v21(tmp_path / "ds21")
    with pytest.raises(LeRobotSetupError, match=r"--episodes '0,4-5': episode\(s\) \[4, 5\] "
                                                r"not in "
                                           r"the dataset"):
        import_lerobot(str(root), str(tmp_path / "o"), mapping, episodes="0,4-5",
                       pad_cameras=True)
    bad = tmp_path / "bad.yaml"
    bad.write_text(yaml.safe_dump({**MAPPING, "tasks": {"other task": "x"}}))
    got = import_lerobot(str(root), str(tmp_path / "o"), str(bad), pad_cameras=True)
    assert (got.bundles, [(f.episode_index, f.message) for f in got.failed]) == ([], [
        (0, f"{bad}: tasks has no task.id for the episode's task '{TASK}'")])
    bad.write_text(yaml.safe_dump({**MAPPING, "gripper": {"profile": "franka-hand",
                                                          "width": 9}}))
    with pytest.raises(LeRobotSetupError, match=r"gripper.width = 9, but observation.state "
                                                r"has 8 dimensions \(j0, j1, j2, j3, j4, "
                                                r"j5, j6, gripper\)"):
        import_lerobot(str(root), str(tmp_path / "o"), str(bad), pad_cameras=True)
    with pytest.raises(LeRobotError, match=r"nowhere/meta/info.json: file not found"):
        import_lerobot(str(tmp_path / "nowhere"), str(tmp_path / "o"), mapping)
    assert not (tmp_path / "o").exists()


# --- a dataset written by the lerobot package itself (tests/fixtures/lerobot/make_dataset.py)
FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "lerobot"
REAL_LENGTHS = (24, 18, 30)
REAL_TASKS = {"Pick up the red cube and place it in the bin.": "tabletop.pick_place.cube_001",
              "Put the mug on the tray.": "tabletop.pick_place.mug_022"}
REAL_GREY = {"front": 90, "side": 140, "wrist": 190}


def read_index8(img: np.ndarray) -> int:
    """The dataset-wide index make_dataset.py draws: 8 blocks of 8x8 px along the top."""
    gray = img[:8, :64].mean(axis=2)
    return sum(int(gray[2:6, 8 * b + 2:8 * b + 6].mean() > 128) << b for b in range(8))


@pytest.mark.parametrize(("name", "files"), [("pick_cube", [0, 0, 0]),  # one shared mp4
                                             ("pick_cube_split", [0, 1, 2])])  # one each
def test_dataset_written_by_lerobot_itself(name, files, tmp_path, capsys):
    """lerobot 0.6.1's own output: default file sizes, and a new file per episode."""
    fixture = FIXTURES / name
    info = json.loads((fixture / "meta" / "info.json").read_text())
    episodes = pq.read_table(fixture / "meta" / "episodes" / "chunk-000" /
                             "file-000.parquet").to_pylist()
    for c in REAL_GREY:
        assert [e[f"videos/observation.images.{c}/file_index"] for e in episodes] == files
    assert [e["data/file_index"] for e in episodes] == files
    assert (info["codebase_version"], info["fps"], info["total_episodes"]) == ("v3.0", 10, 3)
    assert "repo_id" not in info  # lerobot keeps the repo id out of the files: the mapping names it
    assert info["features"]["observation.images.front"]["info"]["video.codec"] == "av1"
    mapping = tmp_path / "mapping.yaml"
    mapping.write_text(yaml.safe_dump({
        **MAPPING, "repo_id": "rcjudge/pick_cube_tiny", "tasks": REAL_TASKS,
        "gripper": {"profile": "franka-hand", "width": 6, "width_scale": 0.001}}))
    out = tmp_path / "bundles"
    assert main(["import", "lerobot", str(fixture), "--out", str(out), "--mapping",
                 str(mapping), "--json"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert [(r["episode_index"], Path(r["bundle"]).name, r["task_id"], r["frames"])
            for r in result] == [
        (0, "rcjudge_pick_cube_tiny-ep000000", "tabletop.pick_place.cube_001",
         {"front": 24, "side": 24, "wrist": 24}),
        (1, "rcjudge_pick_cube_tiny-ep000001", "tabletop.pick_place.cube_001",
         {"front": 18, "side": 18, "wrist": 18}),
        (2, "rcjudge_pick_cube_tiny-ep000002", "tabletop.pick_place.mug_022",
         {"front": 30, "side": 30, "wrist": 30})]
    assert sorted(p.name for p in out.iterdir()) == [Path(r["bundle"]).name for r in result]
    first = 0
    for ep, n in enumerate(REAL_LENGTHS):
        bundle = intake(str(out / f"rcjudge_pick_cube_tiny-ep{ep:06d}"))
        attr = bundle.attribution
        assert attr.task.id == ("tabletop.pick_place.mug_022" if ep == 2
                                else "tabletop.pick_place.cube_001")
        assert (attr.env["dataset"], attr.env["episode_index"], attr.env["lerobot_version"]) == (
            "rcjudge/pick_cube_tiny", ep, "v3.0")
        assert attr.env["site"] == "lab-1"
        streams = load_streams(bundle)
        assert sorted(streams.videos) == ["front", "side", "wrist"]
        for cam, v in streams.videos.items():  # 10 fps from 0, the episode's own clock
            assert v.t.tolist() == pytest.approx((np.arange(n) / 10).tolist(), abs=1e-9), cam
        frames = decode_frames(streams.videos, streams.videos["front"].t)
        assert frames.cameras == ("front", "side", "wrist")
        for c, cam in enumerate(frames.cameras):  # the episode's frames, cut from one file
            assert [read_index8(img) for img in frames.images[c]] == list(range(first, first + n))
            assert abs(frames.images[c][:, 20:, :].mean() - REAL_GREY[cam]) < 3  # not swapped
        s = streams.signals
        assert s.joint_names == ("shoulder_pan", "shoulder_lift", "elbow_flex", "wrist_flex",
                                 "wrist_roll", "wrist_yaw")  # meta/info.json, less the gripper
        assert s.t.tolist() == pytest.approx((np.arange(n) / 10).tolist(), abs=1e-6)
        assert s.position[:, 0].tolist() == pytest.approx(
            (0.1 * ep + 0.05 * np.arange(n)).tolist(), abs=1e-6)
        assert s.velocity[:, 0].tolist() == pytest.approx([0.5] * n, abs=1e-4)  # derived
        assert s.effort.shape == (n, 6) and s.effort.max() == 0.0  # absent: 0
        assert s.gripper_width.tolist() == pytest.approx(
            [max(30.0, 80.0 - 2 * k) / 1000 for k in range(n)], abs=1e-7)  # mm x 0.001
        assert streams.metadata == {"rcjudge.gripper": {"profile": "franka-hand",
                                                        "effort": "none"}}
        first += n
    # the same import again: every bundle folder exists, nothing is overwritten
    again = import_lerobot(str(fixture), str(out), str(mapping), episodes="0,1")
    assert (again.bundles, [(f.episode_index, f.message) for f in again.failed]) == ([], [
        (i, f"{out}/rcjudge_pick_cube_tiny-ep{i:06d}: already exists; bundles are never "
            "overwritten") for i in (0, 1)])
    # --episodes picks some; the default repo id is the folder's name (info.json has none)
    del_repo = {**yaml.safe_load(mapping.read_text())}
    del del_repo["repo_id"]
    mapping.write_text(yaml.safe_dump(del_repo))
    got = import_lerobot(str(fixture), str(tmp_path / "two"), str(mapping), episodes="2")
    assert got.failed == []
    assert [(r["episode_index"], Path(r["bundle"]).name) for r in got.bundles] == [
        (2, f"{name}-ep000002")]


def edit_episodes(root: Path, ep: int, **changes) -> None:
    """Change columns of one row of a v3.0 episodes table (``to_timestamp`` for every camera)."""
    path = root / "meta" / "episodes" / "chunk-000" / "file-000.parquet"
    rows = pq.read_table(path).to_pylist()
    for key, value in changes.items():
        for col in rows[ep]:
            if col == key or col.endswith("/" + key):
                rows[ep][col] = value(rows[ep][col]) if callable(value) else value
    pq.write_table(pa.Table.from_pylist(rows), path)


def test_v3_cut_within_lerobots_tolerance(tmp_path, mapping):
    # to_timestamp 1 µs late: the next episode's first frame must not come in (issue 28 item 6)
    root = write_v3(tmp_path / "ds")
    edit_episodes(root, 0, to_timestamp=lambda t: t + 1e-6)
    edit_episodes(root, 1, from_timestamp=lambda t: t + 1e-6)
    got = import_lerobot(str(root), str(tmp_path / "o"), mapping).bundles
    assert [r["frames"] for r in got] == [{"front": 20, "side": 20, "wrist": 20},
                                         {"front": 15, "side": 15, "wrist": 15}]
    streams = load_streams(intake(got[1]["bundle"]))
    frames = decode_frames(streams.videos, streams.videos["front"].t[:1])
    assert read_frame_index(frames.images[0][0]) == 20


def test_v3_cut_that_disagrees_with_length_is_refused(tmp_path, mapping):
    root = write_v3(tmp_path / "ds")
    edit_episodes(root, 0, to_timestamp=2.5)  # 25 frames in the window; length and rows: 20
    got = import_lerobot(str(root), str(tmp_path / "o"), mapping, episodes="0")
    video = root / "videos" / "observation.images.front" / "chunk-000" / "file-000.mp4"
    assert (got.bundles, [(f.episode_index, f.message) for f in got.failed]) == ([], [
        (0, f"{video}: camera front has 25 frame(s) in 0.000-2.500 s, but the episode's "
            "length is 20 (and its data has 20 rows); fix from_timestamp/to_timestamp or "
            "length")])
    assert not (tmp_path / "o").exists()
    root2 = write_v3(tmp_path / "ds2")
    edit_episodes(root2, 1, length=16)
    got = import_lerobot(str(root2), str(tmp_path / "o2"), mapping, episodes="1")
    assert [(f.episode_index, f.message) for f in got.failed] == [
        (1, f"{root2}/data/chunk-000/file-000.parquet: the episode has 15 rows, but its "
            "length is 16")]


def test_corrupt_data_parquet_is_one_line(tmp_path, mapping, capsys):
    root = write_v3(tmp_path / "ds")
    data = root / "data" / "chunk-000" / "file-000.parquet"
    data.write_bytes(b"PAR1 not really a parquet file")
    got = import_lerobot(str(root), str(tmp_path / "o"), mapping)
    assert got.bundles == [] and [f.episode_index for f in got.failed] == [0, 1]
    assert all(f.message.startswith(f"{data}: ArrowInvalid: ") for f in got.failed)
    assert main(["import", "lerobot", str(root), "--out", str(tmp_path / "o"),
                 "--mapping", mapping]) == 1
    err = capsys.readouterr().err.splitlines()  # one line an episode (both read that file)
    assert [line[:len(f"rcjudge: error: episode 0: {data}: ArrowInvalid: ")] for line in err] \
        == [f"rcjudge: error: episode {i}: {data}: ArrowInvalid: " for i in (0, 1)]
    # the dataset's own tables unreadable: the import stops there, one line
    (root / "meta" / "episodes" / "chunk-000" / "file-000.parquet").write_bytes(b"PAR1 x")
    assert main(["import", "lerobot", str(root), "--out", str(tmp_path / "o"),
                 "--mapping", mapping]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith(f"rcjudge: error: {root}")
    assert not (tmp_path / "o").exists()


def test_every_bad_episode_is_named_and_the_good_ones_imported(tmp_path, mapping, capsys):
    # issue 28: the import checks every episode; each bad one is one stderr line (episode,
    # file, cause), nothing of it is written, the good ones are imported, exit 1
    root = write_v3(tmp_path / "ds")
    edit_episodes(root, 0, to_timestamp=2.5)  # 25 frames in its cut; length and rows: 20
    out = tmp_path / "o"
    assert main(["import", "lerobot", str(root), "--out", str(out), "--mapping", mapping,
                 "--json"]) == 1
    cap = capsys.readouterr()
    video = root / "videos" / "observation.images.front" / "chunk-000" / "file-000.mp4"
    assert cap.err.splitlines() == [
        f"rcjudge: error: episode 0: {video}: camera front has 25 frame(s) in 0.000-2.500 s, "
        "but the episode's length is 20 (and its data has 20 rows); fix "
        "from_timestamp/to_timestamp or length"]
    assert [(r["episode_index"], Path(r["bundle"]).name) for r in json.loads(cap.out)] == [
        (1, "lab_pick_cube-ep000001")]
    assert sorted(p.name for p in out.iterdir()) == ["lab_pick_cube-ep000001"]
    # both bad, for two causes: two lines, nothing written at all
    root2 = write_v3(tmp_path / "ds2")
    edit_episodes(root2, 0, tasks=["Stack the cubes."])
    edit_episodes(root2, 1, length=16)
    out2 = tmp_path / "o2"
    assert main(["import", "lerobot", str(root2), "--out", str(out2), "--mapping",
                 mapping]) == 1
    cap = capsys.readouterr()
    assert cap.out == ""
    assert cap.err.splitlines() == [
        f"rcjudge: error: episode 0: {mapping}: tasks has no task.id for the episode's task "
        "'Stack the cubes.'",
        f"rcjudge: error: episode 1: {root2}/data/chunk-000/file-000.parquet: the episode "
        "has 15 rows, but its length is 16"]
    assert not out2.exists() or list(out2.iterdir()) == []
    # the library: the bundles written and the failures, in episode order
    got = import_lerobot(str(root2), str(tmp_path / "o3"), mapping)
    assert (got.bundles, [(f.episode_index, f.message) for f in got.failed]) == (
        [], [(0, f"{mapping}: tasks has no task.id for the episode's task 'Stack the cubes.'"),
             (1, f"{root2}/data/chunk-000/file-000.parquet: the episode has 15 rows, but its "
                 "length is 16")])


def test_usage_and_setup_errors_exit_2(tmp_path, mapping, capsys):
    root = write_v3(tmp_path / "ds")
    bad = tmp_path / "bad.yaml"
    bad.write_text(yaml.safe_dump({k: v for k, v in MAPPING.items() if k != "gripper"}))
    for args, line in [
        (["--mapping", mapping, "--episodes", "0,7"],
         r"--episodes '0,7': episode\(s\) \[7\] not in the dataset"),
        (["--mapping", mapping, "--episodes", "x"], r"--episodes 'x': expected e.g. 0,3-9"),
        (["--mapping", str(bad)], r"bad.yaml: 'gripper' is missing or not a mapping")]:
        assert main(["import", "lerobot", str(root), "--out", str(tmp_path / "o"),
                     *args]) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and re.search(line, err), err
    assert not (tmp_path / "o").exists()
