"""Any codec in: how fast ``bundle create`` copies and re-encodes camera files.

    python -m bench.transcode --seconds 60 --cameras 3 --width 640 --height 480 --fps 30

Writes (untimed) ``cameras`` files of ``seconds`` each with PyAV — conforming H.264 (the
copy path) and AV1 from libsvtav1 (the re-encode path, as LeRobot stores video) — then
times :func:`judge.bundle.transcode.ingest_video` on each set. The baseline in the same
run is decoding the AV1 set alone (no encode): what any re-encode must pay at least.
Figures: seconds per set, input MB/s, frames/s.
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
import time
from fractions import Fraction
from pathlib import Path

import av
import numpy as np

from judge.bundle.transcode import EncodeOptions, ingest_video


def _frames(n: int, width: int, height: int, seed: int):
    """A textured table, a box moving across it, sensor noise (a camera's bitrate)."""
    rng = np.random.default_rng(seed)
    bg = (rng.integers(60, 190, size=(height // 8, width // 8, 3))
          .repeat(8, 0).repeat(8, 1)).astype(np.int16)  # (H, W, 3)
    noise = [rng.normal(0, 3, size=(height, width, 1)).astype(np.int16) for _ in range(8)]
    for i in range(n):
        img = bg + noise[i % len(noise)]
        x = int((i * 4) % (width - 60))
        img[height // 2 - 30:height // 2 + 30, x:x + 60] = (230, 140, 20)
        yield np.clip(img, 0, 255).astype(np.uint8)


def encode_frames(path: Path, frames, codec: str, width: int, height: int, fps: int,
                  options: dict[str, str]) -> None:
    """RGB frames (each (H, W, 3) uint8) encoded with PyAV's ``codec`` at ``fps`` into
    ``path`` (its container from the suffix), the codec's ``options`` set."""
    with av.open(str(path), "w") as c:
        s = c.add_stream(codec, rate=fps)
        s.width, s.height, s.pix_fmt = width, height, "yuv420p"
        s.codec_context.options = options
        for i, img in enumerate(frames):
            vf = av.VideoFrame.from_ndarray(img, format="rgb24")
            vf.pts, vf.time_base = i, Fraction(1, fps)
            for p in s.encode(vf):
                c.mux(p)
        for p in s.encode(None):
            c.mux(p)


def write(path: Path, codec: str, n: int, width: int, height: int, fps: int, seed: int) -> Path:
    opts = {"bf": "0", "g": str(fps // 2)} if codec == "libx264" else {"preset": "10"}
    encode_frames(path, _frames(n, width, height, seed), codec, width, height, fps, opts)
    return path


def decode_only(path: Path) -> int:
    with av.open(str(path)) as c:
        c.streams.video[0].thread_type = "AUTO"
        return sum(1 for _ in c.decode(video=0))


def _timed(paths: list[Path], fn) -> dict:
    t0 = time.perf_counter()
    frames = sum(fn(p) for p in paths)
    dt = time.perf_counter() - t0
    mb = sum(os.path.getsize(p) for p in paths) / 1e6
    return {"seconds": round(dt, 2), "input_mb": round(mb, 2), "mb_per_s": round(mb / dt, 2),
            "frames": frames, "frames_per_s": round(frames / dt, 1)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=60.0)
    parser.add_argument("--cameras", type=int, default=3)
    parser.add_argument("--width", type=int, default=640)
    parser.add_argument("--height", type=int, default=480)
    parser.add_argument("--fps", type=int, default=30)
    parser.add_argument("--preset", default="veryfast", help="libx264 preset of the re-encode")
    args = parser.parse_args()
    n = round(args.seconds * args.fps)
    opts = EncodeOptions(preset=args.preset)
    with tempfile.TemporaryDirectory() as tmp:
        dims = (n, args.width, args.height, args.fps)
        h264 = [write(Path(tmp) / f"cam{i}.mp4", "libx264", *dims, i) for i in range(args.cameras)]
        av1 = [write(Path(tmp) / f"cam{i}_av1.mp4", "libsvtav1", *dims, i)
               for i in range(args.cameras)]

        def ingest(mode: str):
            def run(p: Path) -> int:
                got = ingest_video(str(p), p.stem, opts)
                assert got.mode == mode, (p, got.mode, got.reason)
                return len(got.packets.t)
            return run

        result = {
            "set": f"{args.cameras} x {args.seconds:g} s of {args.width}x{args.height} "
                   f"at {args.fps} fps",
            "cpu_count": os.cpu_count(), "preset": args.preset,
            "copy_h264": _timed(h264, ingest("copy")),
            "baseline_decode_av1": _timed(av1, decode_only),
            "reencode_av1": _timed(av1, ingest("reencode")),
        }
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
