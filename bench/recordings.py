"""Example recordings: what a lab has before it has bundles (README, "Your own data").

``python -m bench.recordings --n 8 --out my-recordings`` writes one folder per run, each
holding what ``rcjudge bundle create`` takes: three camera files (``front.mp4``,
``side.mp4``, ``top.mp4``: ordinary H.264 mp4s, B-frames and all, as a camera or a phone
writes them), the signal table ``signals.csv`` (columns in ``judge.bundle.create``'s
docstring) and ``attribution.json`` (the 11 attribution fields). The runs are the
synthetic generator's (:mod:`bench.synth`, the same seed gives the same rollouts as
``rcjudge synth``), so each folder also holds the generator's ``truth.json``, which
``rcjudge truth-labels`` reads to stand in for a labeller; nothing else reads it.
"""

from __future__ import annotations

import argparse
import csv
import json
import sys
from pathlib import Path

import numpy as np

from bench.synth import (
    CAMERAS,
    Renderer,
    SynthConfig,
    attribution_for,
    draw_run,
)
from bench.transcode import encode_frames
from judge.bundle.streams import Signals


def write_mp4(path: Path, frames, width: int, height: int, fps: int) -> None:
    """RGB frames (each (H, W, 3) uint8) as an H.264 mp4 (libx264, preset veryfast, one thread)."""
    encode_frames(path, frames, "libx264", width, height, fps,
                  {"preset": "veryfast", "threads": "1"})


def write_signals(path: Path, s: Signals) -> None:
    """The signal table as CSV: ``time``, each joint's position/velocity/effort, the
    gripper's width and force, one row a sample (floats written round-trip exact)."""
    header = ["time", *(f"{j}.{f}" for j in s.joint_names
                        for f in ("position", "velocity", "effort")),
              "gripper.width", "gripper.force"]
    columns = [s.t]
    for k in range(len(s.joint_names)):
        columns += [s.position[:, k], s.velocity[:, k], s.effort[:, k]]
    columns += [s.gripper_width, s.gripper_force]
    table = np.stack(columns, axis=1)  # (N, 1 + 3 J + 2) float64
    with open(path, "w", newline="") as f:
        out = csv.writer(f)
        out.writerow(header)
        out.writerows([repr(float(v)) for v in row] for row in table)


def write_recording(out: str | Path, cfg: SynthConfig, index: int) -> Path:
    """Run ``index`` of the set as a folder of recordings; returns the folder. The random
    draws are :func:`bench.synth.write_bundle`'s, in its order."""
    rng, _, task_id, ro, signals = draw_run(cfg, index)
    renderer = Renderer(ro, cfg.width, cfg.height, rng, cfg.sensor_noise)
    n_frames = int(np.floor(cfg.duration_s * cfg.fps + 1e-9)) + 1
    sample_at = np.minimum(np.round(np.arange(n_frames) / cfg.fps * cfg.signal_hz).astype(int),
                           len(ro.t) - 1)
    run_id = f"run-{index:04d}"
    folder = Path(out) / run_id
    folder.mkdir(parents=True, exist_ok=True)
    for cam in CAMERAS:
        write_mp4(folder / f"{cam}.mp4",
                  (renderer.render(cam, int(s), f) for f, s in enumerate(sample_at)),
                  cfg.width, cfg.height, cfg.fps)
    write_signals(folder / "signals.csv", signals)
    (folder / "attribution.json").write_text(
        json.dumps(attribution_for(rng, task_id, cfg.seed * 100_003 + index), indent=2) + "\n")
    truth = {"run_id": run_id, "task_id": task_id, **ro.truth,
             "duration_s": cfg.duration_s, "fps": cfg.fps, "cameras": list(CAMERAS)}
    (folder / "truth.json").write_text(json.dumps(truth, indent=2) + "\n")
    return folder


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m bench.recordings", description=__doc__
                                .split("\n\n")[0])
    p.add_argument("--n", type=int, default=8, help="how many runs (default 8)")
    p.add_argument("--out", required=True, help="folder to write (one sub-folder a run)")
    p.add_argument("--seed", type=int, default=0, help="seed of the set (default 0)")
    args = p.parse_args(argv)
    if args.n < 1:
        p.error("--n: expected 1 or more")
    if Path(args.out).exists():
        print(f"bench.recordings: {args.out}: already exists; pick a new folder",
              file=sys.stderr)
        return 2
    cfg = SynthConfig(seed=args.seed)
    for i in range(args.n):
        print(write_recording(args.out, cfg, i))
    return 0


if __name__ == "__main__":
    sys.exit(main())
