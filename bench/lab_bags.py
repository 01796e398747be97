"""A lab's own bags end to end: ``rcjudge import rosbag`` → ``rcjudge batch --judge``.

    RAY_AUTH_MODE=disabled python -m bench.lab_bags --out DIR [--judge tiny]

Writes (``bench.bagsynth``, rosbags' and mcap's own writers) the five recordings of issue 38
— ROS 1 with ``bgr8`` cameras, ROS 2 SQLite with zstd, a lone MCAP whose H.264
``CompressedVideo`` wrist camera has a keyframe every 2 s (cut by episode markers), partial
``JointState`` (arm at 100 Hz, fingers at 50 Hz from their own driver) and a ROS 1 recording
split in two files — each with its mapping; the ROS 1 ``bgr8`` recording names the lab's own
task, ``lab.pick_place.red_cube``, added first with ``rcjudge tasks add`` into
``DIR/home`` (``$RCJUDGE_HOME``). Then, as a lab would, one ``rcjudge import rosbag`` per
recording into ``DIR/bundles`` and one ``rcjudge batch DIR/bundles --judge …`` over them all
(a real local Ray). Prints per episode: frames per camera, the import's notes, and
``judged`` or ``refused`` with the batch's reason; ``not imported`` with the import's error.
Every command is run as a subprocess of ``python -m rcjudge.cli``, so the same module shows
the table of any checkout (``PYTHONPATH``).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import yaml

from bench.bagsynth import ARM, FINGERS, BagSpec, write_bag, write_split

LAB_TASK = "lab.pick_place.red_cube"
LAB_INSTRUCTION = "pick up the red cube and put it in the bin"
ATTRIBUTION = {
    "policy": {"vendor": "lab", "name": "pi0", "version": "1", "checkpoint": "sha256:ab"},
    "body": {"arm": "panda", "hand": "franka-hand", "dof": 7, "mount_h_mm": 800,
             "calibrated_at": "2026-10-01"},
    "task": {"id": "tabletop.pick_place.cube_001", "tier": "A"},
}
MAPPING = {
    "cameras": {"front": "/cam/front", "side": "/cam/side/compressed", "wrist": "/cam/wrist"},
    "joints": {"topic": "/joint_states", "names": list(ARM)},
    "gripper": {"profile": "franka-hand", "width": {"joints": list(FINGERS)}},
    "force": {"topic": "/ft/wrench"},
}
MARKERS = {"cut": "markers", "topic": "/episode"}


@dataclass(frozen=True)
class Recording:
    """One recording: its files (several parts when split), its mapping, its episodes."""

    name: str
    parts: list[Path]
    mapping: Path
    episodes: int  # how many its markers or ranges cut


def _mapping(root: Path, name: str, task: str | None = None, **changes) -> Path:
    attr = json.loads(json.dumps(ATTRIBUTION))
    if task:
        attr["task"]["id"] = task
    path = root / f"{name}.mapping.yaml"
    path.write_text(yaml.safe_dump({**MAPPING, **changes, "attribution": attr}),
                    encoding="utf-8")
    return path


def write_recordings(root: Path) -> list[Recording]:
    """The five recordings under ``root/bags`` and their mappings under ``root``."""
    bags = root / "bags"
    bags.mkdir(parents=True, exist_ok=True)
    image = {"front": "image", "side": "image", "wrist": "image"}
    out = [Recording("ros1_bgr8", [write_bag(bags / "ros1_bgr8.bag", "ros1", BagSpec(
        seconds=3.0, encoding="bgr8", kinds=image))], _mapping(root, "ros1_bgr8", LAB_TASK),
        1)]
    zstd = BagSpec(seconds=5.0, compression="zstd", contacts=[(0.8, 1.6), (3.2, 4.0)])
    out.append(Recording("ros2_zstd", [write_bag(bags / "ros2_zstd", "sqlite3", zstd)],
                         _mapping(root, "ros2_zstd", episodes={
                             "cut": "ranges", "ranges": [[0.2, 2.4], [2.6, 4.9]]}), 2))
    video = BagSpec(seconds=8.0, gop=20, contacts=[(1.5, 2.5), (5.0, 6.2)],
                    markers=[(0.7, "start"), (3.6, "stop"), (4.3, "start"), (7.5, "stop")])
    out.append(Recording("mcap_h264", [write_bag(bags / "mcap_h264.mcap", "mcap_ros2", video)],
                         _mapping(root, "mcap_h264", episodes=MARKERS), 2))
    partial = BagSpec(seconds=3.0, joint_hz=100, fingers_hz=50)
    out.append(Recording("partial_joints", [write_bag(bags / "partial_joints", "mcap",
                                                      partial)],
                         _mapping(root, "partial_joints"), 1))
    split = BagSpec(seconds=4.0, contacts=[(1.0, 2.5)], markers=[(0.3, "start"),
                                                                 (3.3, "stop")])
    out.append(Recording("split", write_split(bags, "split", split, at_s=2.0),
                         _mapping(root, "split", episodes=MARKERS), 1))
    return out


def _rcjudge(args: list[str], env: dict[str, str]) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "rcjudge.cli", *args], capture_output=True,
                          text=True, env=env, timeout=600)


def run(root: Path, judge: str = "tiny", env: dict[str, str] | None = None) -> list[dict]:
    """Write the recordings, import each, batch them all; one row per episode."""
    env = {**os.environ, "RAY_AUTH_MODE": "disabled", "RCJUDGE_HOME": str(root / "home"),
           **(env or {})}
    recs = write_recordings(root)
    added = _rcjudge(["tasks", "add", LAB_TASK, LAB_INSTRUCTION], env)
    bundles = root / "bundles"
    rows, imports = [], {}
    for rec in recs:
        p = _rcjudge(["import", "rosbag", *map(str, rec.parts), "--mapping", str(rec.mapping),
                      "--out", str(bundles), "--json"], env)
        done = json.loads(p.stdout) if p.stdout.strip() else []
        error = next((ln for ln in p.stderr.splitlines() if ln.startswith("rcjudge: error:")),
                     "")
        imports[rec.name] = (p.returncode, done, error)
    batch = _rcjudge(["batch", str(bundles), "--judge", judge, "--db",
                      f"sqlite:///{root / 'ledger.db'}", "--json"], env)
    summary = json.loads(batch.stdout) if batch.stdout.strip() else {}
    failed = {Path(f["uri"]).name: f"{f['error']}: {f['message'].splitlines()[0]}"
              for f in summary.get("failures", [])}
    for rec in recs:
        rc, done, error = imports[rec.name]
        by_episode = {r["episode"]: r for r in done}
        for i in range(rec.episodes):
            r = by_episode.get(i)
            row = {"recording": rec.name, "files": len(rec.parts), "episode": i,
                   "import_exit": rc}
            if r is None:
                rows.append({**row, "bundle": None, "frames": None, "notes": [],
                             "result": "not imported", "why": error})
                continue
            name = Path(r["bundle"]).name
            rows.append({**row, "bundle": name, "frames": r["frames"], "notes": r["notes"],
                         "result": "refused" if name in failed else "judged",
                         "why": failed.get(name, "")})
    reported = {x["bundle"] for x in rows}
    for folder in sorted(bundles.iterdir()) if bundles.is_dir() else []:
        if folder.name.startswith(".") or folder.name in reported:
            continue  # below: a bundle written although its import printed nothing
        rec = next(r for r in recs if folder.name.startswith(r.name))
        rows.append({"recording": rec.name, "files": len(rec.parts), "episode": None,
                     "import_exit": imports[rec.name][0], "bundle": folder.name,
                     "frames": None, "notes": [], "result": "refused" if folder.name in
                     failed else "judged", "why": failed.get(folder.name, "")})
    rows.append({"batch_exit": batch.returncode, "tasks_add_exit": added.returncode,
                 "summary": {k: summary.get(k) for k in ("total", "judged", "failed")}})
    return rows


def table(rows: list[dict]) -> str:
    """The rows as the report's Markdown table."""
    lines = ["| recording | episode | bundle | frames front/side/wrist | import notes | batch |",
             "| --- | ---: | --- | --- | ---: | --- |"]
    for r in rows[:-1]:
        f = r["frames"]
        frames = "/".join(str(f[c]) for c in ("front", "side", "wrist")) if f else "-"
        result = r["result"] + (f" ({r['why']})" if r["why"] else "")
        lines.append(f"| {r['recording']} ({r['files']} file{'s' if r['files'] > 1 else ''}) "
                     f"| {r['episode']} | {r['bundle'] or '-'} | {frames} | {len(r['notes'])} "
                     f"| {result} |")
    last = rows[-1]
    lines.append(f"\nbatch exit {last['batch_exit']}: {last['summary']}; tasks add exit "
                 f"{last['tasks_add_exit']}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", required=True, help="an empty folder for bags and bundles")
    parser.add_argument("--judge", default="tiny")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    rows = run(Path(args.out), args.judge)
    print(json.dumps(rows, indent=2) if args.json else table(rows))


if __name__ == "__main__":
    main()
