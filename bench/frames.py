"""Frame extraction benchmark: our seek-and-decode path against decode-everything baselines.

    python -m bench.frames [--repeats 7] [--json]

One synthetic bundle, 3 cameras × 30 s × 640×480 @ 30 fps (H.264, keyframe every
0.5 s, pixel noise so the decoder does real work), 16 sampled frames per camera
(48 in all) chosen by the real contact detector and sampler. Reported, median of
``repeats`` runs, all in this process:

* ``ours``: ``decode_frames`` (seek to the keyframe before each cluster, decode
  forward, convert only kept frames; cameras on a thread pool);
* ``naive``: decode every frame of every camera and convert each to RGB, then pick;
* ``decode_all``: decode every frame, convert only the picked ones (a stronger baseline).

``read`` (MCAP → access units and signals, once per call) is timed separately.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from pathlib import Path

import av
import numpy as np

from bench.synth import SynthConfig, write_bundle
from judge.bundle.decode import decode_frames, load_streams, nearest_frames
from judge.bundle.intake import intake
from judge.bundle.sample import plan_targets
from judge.config import sampling_config

CACHE = Path("bench-out")
CONFIG = SynthConfig(seed=11, duration_s=30.0, width=640, height=480, fps=30, gop_s=0.5,
                     sensor_noise=4.0, outcome="grasp.slip")


def cached_bundle(kind: str, cfg: SynthConfig) -> Path:
    """A benchmark bundle, generated once and cached under ``bench-out/``."""
    folder = CACHE / f"{kind}-{cfg.width}x{cfg.height}-{cfg.fps}fps-{cfg.duration_s:g}s"
    if not (folder / "manifest.json").exists():
        made = write_bundle(folder.parent / (folder.name + ".tmp"), cfg, 0)
        made.rename(folder)
        made.parent.rmdir()
    return folder


def naive(videos, targets: np.ndarray, convert_all: bool) -> np.ndarray:
    out = []
    for name in sorted(videos):
        v = videos[name]
        keep = set(nearest_frames(v, targets).tolist())
        ctx = av.CodecContext.create("h264", "r")
        frames = {}
        for i, data in enumerate(v.data):
            for fr in ctx.decode(av.Packet(data)):
                if convert_all or i in keep:
                    frames[i] = fr.to_ndarray(format="rgb24")
        out.append(np.stack([frames[int(i)] for i in nearest_frames(v, targets)]))
    return np.stack(out)


def timed(fn, repeats: int) -> tuple[float, object]:
    times, result = [], None
    for _ in range(repeats):
        t0 = time.perf_counter()
        result = fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times), result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    folder = cached_bundle("frames", CONFIG)
    bundle = intake(str(folder))
    t_read, streams = timed(lambda: load_streams(bundle), args.repeats)
    _, targets = plan_targets(streams, sampling_config())
    videos = streams.videos
    t_ours, frames = timed(lambda: decode_frames(videos, targets), args.repeats)
    t_naive, ref = timed(lambda: naive(videos, targets, True), max(3, args.repeats // 2))
    t_all, _ = timed(lambda: naive(videos, targets, False), max(3, args.repeats // 2))
    if not np.array_equal(frames.images, ref):
        raise SystemExit("ours and naive decoded different pixels")
    result = {
        "bundle": str(folder), "mcap_mb": round(bundle.manifest.files[-1].size / 1e6, 1),
        "cameras": len(videos), "frames_per_camera": len(targets),
        "frames_total": int(frames.images.shape[0] * frames.images.shape[1]),
        "read_s": round(t_read, 4), "ours_s": round(t_ours, 4),
        "ours_with_read_s": round(t_read + t_ours, 4),
        "naive_s": round(t_naive, 4), "decode_all_s": round(t_all, 4),
        "speedup_vs_naive": round(t_naive / t_ours, 1),
        "speedup_vs_decode_all": round(t_all / t_ours, 1),
    }
    if args.json:
        print(json.dumps(result, indent=2))
    else:
        for k, v in result.items():
            print(f"{k:>24}: {v}")


if __name__ == "__main__":
    main()
