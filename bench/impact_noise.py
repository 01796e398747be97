"""Spurious impacts on noise alone: joint efforts with Gaussian noise and no impact.

    python -m bench.impact_noise --n 50 --noise 0,0.01,0.05,0.1,0.2 --hz 50,100 --out DIR
    python -m bench.impact_noise --bundles DIR            # score bundles written before

Writes ``n`` bench.synth bundles of the scripted success (no collision: no impact in the
truth) per noise level (``effort_noise_nm``, Nm) and joint-state rate, reads them back
through the real intake and MCAP path, and counts the impacts ``detect_contacts`` reports
with ``configs/sampling.yaml``: as the bundles are (no gripper profile), and with the
``--profile`` named (default ``synth-jaw``: its ``impact_min_nm``, where the code has one).
Every impact here is spurious. Prints one row per (rate, noise, profile): impacts per bundle
(mean, max) and the range of their peaks in Nm and in robust sigmas. The bundles of a set
are ``DIR/hz<R>-noise<S>/``; ``--bundles`` scores such a folder again (e.g. with other code).
"""

from __future__ import annotations

import argparse
import json
import tempfile
from pathlib import Path

import numpy as np

from bench.synth import SynthConfig, write_synthetic_set
from judge.bundle.contacts import detect_contacts
from judge.bundle.decode import load_streams
from judge.bundle.intake import intake
from judge.config import resolve_gripper, sampling_config


def write_sets(out: Path, n: int, noises: list[float], rates: list[int],
               seed: int) -> list[Path]:
    """One folder of ``n`` success bundles per (rate, noise): ``out/hz<R>-noise<S>``."""
    folders = []
    for hz in rates:
        for noise in noises:
            folder = out / f"hz{hz}-noise{noise:g}"
            write_synthetic_set(folder, n, SynthConfig(
                seed=seed, width=96, height=64, fps=5, signal_hz=hz, outcome="success",
                effort_noise_nm=noise))
            folders.append(folder)
    return folders


def score(folder: Path, profile: str | None) -> dict:
    """Impacts per bundle of the bundles in ``folder`` (all spurious: none in the truth)."""
    cfg = sampling_config()
    gripper = None if profile is None else resolve_gripper({"profile": profile})
    counts, nm, sigmas = [], [], []
    bundles = sorted(p.parent for p in folder.glob("*/truth.json"))
    for b in bundles:
        if [c for c in json.loads((b / "truth.json").read_text())["contacts"]
                if c["kind"] == "impact"]:
            raise SystemExit(f"{b}: has an impact in its truth; expected noise only")
        impacts = [e for e in detect_contacts(load_streams(intake(str(b))).signals,
                                              cfg.contacts, gripper, cfg.fingers)
                   if e.kind == "impact"]
        counts.append(len(impacts))
        nm += [e.peak_value for e in impacts]
        sigmas += [e.peak for e in impacts]
    return {"set": folder.name, "profile": profile, "bundles": len(bundles),
            "per_bundle_mean": float(np.mean(counts)) if counts else 0.0,
            "per_bundle_max": max(counts, default=0),
            "peak_nm": [round(min(nm), 3), round(max(nm), 3)] if nm else None,
            "peak_sigmas": [round(min(sigmas), 1), round(max(sigmas), 1)] if sigmas else None}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=50, help="bundles per set")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--noise", default="0,0.01,0.05,0.1,0.2",
                        help="effort noise sigmas (Nm), comma-separated")
    parser.add_argument("--hz", default="50,100", help="joint-state rates, comma-separated")
    parser.add_argument("--profile", default="synth-jaw",
                        help="also score with this gripper profile's impact floor")
    parser.add_argument("--out", help="write the sets here (kept); default a temporary folder")
    parser.add_argument("--bundles", help="score the sets already in this folder")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        if args.bundles:
            folders = sorted(p for p in Path(args.bundles).iterdir() if p.is_dir())
        else:
            folders = write_sets(Path(args.out or tmp), args.n,
                                 [float(x) for x in args.noise.split(",")],
                                 [int(x) for x in args.hz.split(",")], args.seed)
        rows = [score(f, p) for f in folders for p in (None, args.profile)]
    for r in rows:
        print(json.dumps(r))


if __name__ == "__main__":
    main()
