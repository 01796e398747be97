"""Intake benchmark: verify a ~50 MB bundle (every file's sha256, sizes, bundle hash, attribution).

    python -m bench.intake [--repeats 15] [--json]

The baseline, timed in the same run, is the floor of the work: ``hashlib.file_digest``
over the same files with no checks. Files are in the page cache (warm), as on a
worker that just received the bundle.
"""

from __future__ import annotations

import argparse
import hashlib
import json
from pathlib import Path

from bench.frames import cached_bundle, timed
from bench.synth import SynthConfig
from judge.bundle.intake import intake

CONFIG = SynthConfig(seed=12, duration_s=110.0, width=640, height=480, fps=30, gop_s=0.5,
                     sensor_noise=4.0, outcome="success")


def digest_all(folder: Path, names: list[str]) -> list[str]:
    out = []
    for name in names:
        with open(folder / name, "rb") as f:
            out.append(hashlib.file_digest(f, "sha256").hexdigest())
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=15)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    folder = cached_bundle("intake", CONFIG)
    bundle = intake(str(folder))
    names = [f.path for f in bundle.manifest.files]
    size = sum(f.size for f in bundle.manifest.files)
    t_intake, _ = timed(lambda: intake(str(folder)), args.repeats)
    t_floor, _ = timed(lambda: digest_all(folder, names), args.repeats)
    result = {"bundle": str(folder), "bundle_mb": round(size / 1e6, 1),
              "intake_ms": round(t_intake * 1e3, 1), "hash_only_ms": round(t_floor * 1e3, 1),
              "intake_over_hash_only": round(t_intake / t_floor, 2),
              "throughput_mb_s": round(size / 1e6 / t_intake)}
    if args.json:
        print(json.dumps(result, indent=2))
    else:
        for k, v in result.items():
            print(f"{k:>22}: {v}")


if __name__ == "__main__":
    main()
