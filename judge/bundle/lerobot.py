"""LeRobot datasets in: each episode of a v3.0 or v2.1 dataset becomes a bundle.

``rcjudge import lerobot DATASET_DIR --out DIR --mapping FILE`` (``docs/lerobot.md``).
Reads ``meta/info.json`` (version, fps, features, path templates), the episodes table and
the tasks, the episode's rows of the data Parquet and its camera videos, and writes one
bundle per episode through :func:`judge.bundle.create.assemble_bundle`:

* cameras: the ``observation.images.*`` video features, through
  :func:`judge.bundle.transcode.ingest_video` (v3.0 keeps several episodes per mp4: the
  episode is cut at its ``from_timestamp``/``to_timestamp`` and re-encoded, times
  shifted to start at 0; v2.1 has a file per episode);
* joints: ``observation.state`` with the names ``meta/info.json`` gives, minus the
  gripper dimensions; velocity from ``observation.velocity`` when the dataset has it, else
  derived (``numpy.gradient`` of the position over the ``timestamp`` column); effort from
  ``observation.effort`` when present, else 0 (recorded as ``env.effort = "absent"``);
* gripper: width (and effort) from the state dimensions the mapping names, the mapping's
  gripper profile recorded in the MCAP (no effort dimension: profile effort ``none``);
* attribution: the mapping's fields, ``task.id`` from the episode's task text through the
  mapping's ``tasks``, and ``env.dataset`` / ``env.episode_index`` (the join key back to the
  dataset).

An episode with fewer than three cameras is refused (naming them), unless
``pad_cameras``: then the first camera is repeated (``<name>_copy``, ``<name>_copy2``).

Every chosen episode is checked and imported on its own: a bad one (a cut that disagrees
with its ``length``, a task the mapping lacks, an unreadable file) is an
:class:`EpisodeFailure` naming the file and the cause, with nothing of it written, and the
rest are imported. What concerns the whole dataset (``meta/info.json``, the episodes
table) stops the import as a :class:`LeRobotError`; the mapping file and ``--episodes`` as
a :class:`LeRobotSetupError` (a usage error: exit 2).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow.parquet as pq

from judge.bundle.boundary import reading
from judge.bundle.create import assemble_bundle
from judge.bundle.decode import REQUIRED_CAMERAS
from judge.bundle.streams import Signals, VideoPackets
from judge.bundle.transcode import EncodeOptions, ingest_video
from judge.config import load_yaml, resolve_gripper
from judge.errors import BundleError, JudgeError
from judge.tasks import check_task
from rcjudge import strict_json

IMAGE_PREFIX = "observation.images."


class LeRobotError(BundleError):
    """A LeRobot dataset, or one of its episodes, cannot be imported as it is."""


class LeRobotSetupError(JudgeError, ValueError):
    """The mapping file or ``--episodes`` is unusable: a usage error, not a bad input."""


@dataclass(frozen=True)
class EpisodeFailure:
    """One episode not imported: ``message`` names the file and the cause."""

    episode_index: int
    message: str


@dataclass(frozen=True)
class Imported:
    """What an import did: a summary per bundle written, a failure per episode refused."""

    bundles: list[dict]
    failed: list[EpisodeFailure]


@dataclass(frozen=True)
class Episode:
    index: int
    task: str
    length: int
    data: str  # parquet path (relative to the dataset)
    videos: dict[str, tuple[str, float | None, float | None]]  # key -> (mp4, from_s, to_s)


def _read_json(path: Path) -> Any:
    try:
        return strict_json.load_file(path)
    except FileNotFoundError:
        raise LeRobotError(f"{path}: file not found (not a LeRobot dataset?)") from None
    except strict_json.StrictJsonError as exc:
        raise LeRobotError(f"{path}: {exc.described()}") from None


def _names(feature: dict, key: str, width: int) -> list[str]:
    names = feature.get("names")
    if isinstance(names, dict):  # {"motors": [...]}
        names = next(iter(names.values()), None)
    if not isinstance(names, list) or len(names) != width:
        return [f"{key}_{i}" for i in range(width)]
    return [str(n) for n in names]


def parse_episodes(spec: str | None, known: list[int]) -> list[int]:
    """``"0,3-9"`` -> [0, 3, 4, …, 9] (each must exist); None -> every episode."""
    if not spec:
        return known
    out: list[int] = []
    for part in spec.split(","):
        m = re.fullmatch(r"\s*(\d+)\s*(?:-\s*(\d+)\s*)?", part)
        if not m:
            raise LeRobotSetupError(f"--episodes {spec!r}: expected e.g. 0,3-9")
        a, b = int(m[1]), int(m[2] or m[1])
        out += list(range(a, b + 1))
    missing = sorted(set(out) - set(known))
    if missing:
        raise LeRobotSetupError(f"--episodes {spec!r}: episode(s) {missing} not in the "
                                f"dataset "
                           f"({len(known)} episodes, {min(known)}-{max(known)})")
    return sorted(set(out))


def _episodes(root: Path, info: dict, video_keys: list[str]) -> dict[int, Episode]:
    version = str(info.get("codebase_version", ""))
    if version.startswith("v3"):
        files = sorted((root / "meta" / "episodes").glob("*/*.parquet"))
        if not files:
            raise LeRobotError(f"{root}/meta/episodes: no episode tables (v3.0 layout)")
        tasks = pq.read_table(root / "meta" / "tasks.parquet").to_pylist()
        by_index = {int(r["task_index"]): str(r.get("task") or r.get("__index_level_0__"))
                    for r in tasks}
        out = {}
        for f in files:
            for r in pq.read_table(f).to_pylist():
                ep = int(r["episode_index"])
                task = r["tasks"][0] if r.get("tasks") else by_index.get(0, "")
                data = info["data_path"].format(chunk_index=r["data/chunk_index"],
                                                file_index=r["data/file_index"])
                videos = {k: (info["video_path"].format(
                    video_key=k, chunk_index=r[f"videos/{k}/chunk_index"],
                    file_index=r[f"videos/{k}/file_index"]),
                    float(r[f"videos/{k}/from_timestamp"]), float(r[f"videos/{k}/to_timestamp"]))
                    for k in video_keys}
                out[ep] = Episode(ep, str(task), int(r["length"]), data, videos)
        return out
    if version.startswith("v2"):
        size = int(info.get("chunks_size", 1000))
        out = {}
        lines = (root / "meta" / "episodes.jsonl").read_text(encoding="utf-8").splitlines()
        for line in filter(None, lines):
            try:
                r = strict_json.loads(line)
            except strict_json.StrictJsonError as exc:
                raise LeRobotError(f"{root / 'meta' / 'episodes.jsonl'}: "
                                   f"{exc.described()}") from None
            ep = int(r["episode_index"])
            chunk = ep // size
            data = info["data_path"].format(episode_chunk=chunk, episode_index=ep)
            videos = {k: (info["video_path"].format(episode_chunk=chunk, video_key=k,
                                                    episode_index=ep), None, None)
                      for k in video_keys}
            out[ep] = Episode(ep, str((r.get("tasks") or [""])[0]), int(r["length"]), data,
                              videos)
        return out
    raise LeRobotError(f"{root}/meta/info.json: codebase_version {version!r}; "
                       "expected v3.0 or v2.1")


def _mapping(path: str) -> dict:
    m = load_yaml(path)
    if not isinstance(m, dict):
        raise LeRobotSetupError(f"{path}: expected a mapping (attribution, tasks, gripper)")
    for key in ("attribution", "tasks", "gripper"):
        if not isinstance(m.get(key), dict):
            raise LeRobotSetupError(f"{path}: '{key}' is missing or not a mapping")
    if not isinstance(m["gripper"].get("width"), int):
        raise LeRobotSetupError(f"{path}: gripper.width must be the index of the width in "
                                "observation.state")
    return m


def _signals(root: Path, ep: Episode, info: dict, mapping: dict, source: str,
             ) -> tuple[Signals, list[str]]:
    """Joint and gripper streams of one episode; notes on what was derived."""
    table = pq.read_table(root / ep.data)
    if "episode_index" in table.column_names:
        rows = np.asarray(table.column("episode_index").to_numpy()) == ep.index
        table = table.filter(rows)
    if table.num_rows < 2:
        raise LeRobotError(f"{root / ep.data}: the episode has {table.num_rows} rows")
    t = table.column("timestamp").to_numpy().astype(np.float64)
    t = t - t[0]
    state = np.stack(table.column("observation.state").to_numpy(zero_copy_only=False))
    names = _names(info["features"]["observation.state"], "joint", state.shape[1])
    g = mapping["gripper"]
    wi, fi = g["width"], g.get("force")
    for what, i in (("width", wi), ("force", fi)):
        if i is not None and not 0 <= i < state.shape[1]:
            raise LeRobotSetupError(f"{source}: gripper.{what} = {i}, but observation.state "
                                    f"has {state.shape[1]} dimensions ({', '.join(names)})")
    keep = [j for j in range(state.shape[1]) if j not in (wi, fi)]
    notes = []
    position = state[:, keep]
    feats = info["features"]
    if "observation.velocity" in feats:
        velocity = np.stack(table.column("observation.velocity").to_numpy(
            zero_copy_only=False))[:, keep]
    else:
        velocity = np.gradient(position, t, axis=0)
        notes.append("velocity derived: numpy.gradient of observation.state over timestamp")
    if "observation.effort" in feats:
        effort = np.stack(table.column("observation.effort").to_numpy(
            zero_copy_only=False))[:, keep]
    else:
        effort = np.zeros_like(position)
        notes.append("effort absent: written as 0")
    width = state[:, wi] * float(g.get("width_scale", 1.0))
    force = state[:, fi] * float(g.get("force_scale", 1.0)) if fi is not None \
        else np.zeros(len(t))
    return Signals(t=t, joint_names=tuple(names[j] for j in keep), position=position,
                   velocity=velocity, effort=effort, gripper_t=t, gripper_width=width,
                   gripper_force=force), notes


def _check_frames(video: Path, ep: Episode, cam: VideoPackets,
                  span: tuple[float, float] | None) -> None:
    """Refuse a camera whose frames (in the episode's cut) are not the episode's ``length``.

    The rule: frames, ``length`` and the data rows must agree; a cut is never trimmed or
    padded to make them (a wrong ``to_timestamp`` would silently move frames between
    episodes).
    """
    if len(cam.t) == ep.length:
        return
    where = f" in {span[0]:.3f}-{span[1]:.3f} s" if span else ""
    raise LeRobotError(f"{video}: camera {cam.name} has {len(cam.t)} frame(s){where}, but "
                       f"the episode's length is {ep.length} (and its data has {ep.length} "
                       "rows); fix from_timestamp/to_timestamp or length")


def import_lerobot(dataset: str, out: str, mapping_path: str, episodes: str | None = None,
                   pad_cameras: bool = False, encode: EncodeOptions | None = None,
                   progress: bool = False) -> Imported:
    """Write one bundle per good episode under ``out``; every chosen episode is checked.

    An episode is checked (task, signals, cameras) before its bundle is written; a bad one
    is an :class:`EpisodeFailure` and leaves nothing behind; an existing bundle folder is
    never overwritten (that episode fails). Any error reading the dataset (a corrupt
    Parquet, an unreadable file) is one line naming the file.

    Raises:
        LeRobotError: the dataset as a whole cannot be read (``meta/info.json``, the
            episodes table, too few cameras).
        LeRobotSetupError: the mapping file or ``episodes`` is unusable.
    """
    with reading(dataset, LeRobotError):
        return _import(dataset, out, mapping_path, episodes, pad_cameras, encode, progress)


def _import(dataset: str, out: str, mapping_path: str, episodes: str | None,
            pad_cameras: bool, encode: EncodeOptions | None, progress: bool) -> Imported:
    root = Path(dataset)
    info = _read_json(root / "meta" / "info.json")
    mapping = _mapping(mapping_path)
    feats = info.get("features", {})
    if "observation.state" not in feats:
        raise LeRobotError(f"{root}/meta/info.json: no observation.state feature")
    keys = sorted(k for k, f in feats.items()
                  if k.startswith(IMAGE_PREFIX) and f.get("dtype") == "video")
    eps = _episodes(root, info, keys)
    chosen = parse_episodes(episodes, sorted(eps))
    repo = str(mapping.get("repo_id") or info.get("repo_id") or root.name)
    g = mapping["gripper"]
    if not g.get("profile"):
        raise LeRobotSetupError(f"{mapping_path}: gripper.profile is required "
                                "(configs/grippers.yaml), e.g. franka-hand")
    record = {"profile": str(g["profile"])}
    if g.get("force") is None:
        record["effort"] = "none"  # no effort dimension: the width alone
    resolve_gripper(record, f"{mapping_path}: gripper")
    names = {k: mapping.get("cameras", {}).get(k, k[len(IMAGE_PREFIX):]) for k in keys}
    if len(keys) < REQUIRED_CAMERAS and not pad_cameras:
        raise LeRobotError(f"{root}: {len(keys)} camera(s) ({', '.join(names.values())}); a "
                           f"bundle needs {REQUIRED_CAMERAS} (--pad-cameras repeats the first)")
    context = _Context(root, info, mapping, mapping_path, repo, keys, names, record, encode,
                       progress)
    done, failed = [], []
    for index in chosen:
        try:
            done.append(_import_episode(context, eps[index], Path(out)))
        except BundleError as exc:  # this episode's own error: named, the others go on
            failed.append(EpisodeFailure(index, str(exc)))
    return Imported(done, failed)


@dataclass(frozen=True)
class _Context:
    """What every episode of one import shares."""

    root: Path
    info: dict
    mapping: dict
    mapping_path: str
    repo: str
    keys: list[str]
    names: dict[str, str]
    record: dict[str, str]
    encode: EncodeOptions | None
    progress: bool


def _import_episode(c: _Context, ep: Episode, out: Path) -> dict:
    """One episode checked, then written as a bundle; its summary."""
    task_id = c.mapping["tasks"].get(ep.task)
    if not task_id:
        raise LeRobotError(f"{c.mapping_path}: tasks has no task.id for the episode's task "
                           f"{ep.task!r}")
    check_task(str(task_id), f"{c.mapping_path}: tasks")  # before the videos are read
    folder = out / f"{re.sub(r'[^A-Za-z0-9_.-]+', '_', c.repo)}-ep{ep.index:06d}"
    if folder.exists():
        raise LeRobotError(f"{folder}: already exists; bundles are never overwritten")
    with reading(str(c.root / ep.data), LeRobotError):
        signals, notes = _signals(c.root, ep, c.info, c.mapping, c.mapping_path)
    if len(signals.t) != ep.length:
        raise LeRobotError(f"{c.root / ep.data}: the episode has {len(signals.t)} rows, but "
                           f"its length is {ep.length}")
    cams: list[VideoPackets] = []
    for k in c.keys:
        path, a, b = ep.videos[k]
        span = (a, b) if a is not None and b is not None else None
        with reading(str(c.root / path), LeRobotError):
            cams.append(ingest_video(str(c.root / path), c.names[k], c.encode, c.progress,
                                     span).packets)
        _check_frames(c.root / path, ep, cams[-1], span)
    for k in range(len(cams), REQUIRED_CAMERAS):  # --pad-cameras
        suffix = "_copy" if k == len(c.keys) else f"_copy{k - len(c.keys) + 1}"
        cams.append(VideoPackets(name=cams[0].name + suffix, t=cams[0].t,
                                 keyframe=cams[0].keyframe, data=cams[0].data))
    attr = json.loads(json.dumps(c.mapping["attribution"]))
    attr.setdefault("task", {})["id"] = task_id
    env = attr.setdefault("env", {}) or {}
    env.update({"dataset": c.repo, "episode_index": ep.index,
                "lerobot_version": str(c.info.get("codebase_version")), "derived": notes})
    attr["env"] = env
    manifest = assemble_bundle(folder, cams, signals, attr, source=c.mapping_path,
                               gripper=c.record or None)
    return {"episode_index": ep.index, "bundle": str(folder), "task_id": task_id,
            "frames": {cam.name: len(cam.t) for cam in cams}, "derived": notes,
            "bundle_hash": manifest.bundle_hash}
