"""Contact detection against synthetic ground truth: recall, timing error, spurious events.

    python -m bench.contacts_eval --n 50 --seed 7

Generates ``n`` synthetic bundles (small frames: only the signals matter here),
reads them through the real intake and MCAP path, runs the detector and matches
each ground-truth contact to a detected event of the same kind within ±0.1 s.
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

TOLERANCE_S = 0.1


def evaluate(bundles: list[Path], tolerance: float = TOLERANCE_S) -> dict:
    """Match detections to truth per bundle; returns counts and per-kind figures."""
    found = missed = spurious = 0
    errors: list[float] = []
    misses: list[dict] = []
    kinds: dict[str, int] = {}
    spurious_events: list[dict] = []
    for folder in bundles:
        truth = json.loads((Path(folder) / "truth.json").read_text())["contacts"]
        events = detect_contacts(load_streams(intake(str(folder))).signals)
        used: set[int] = set()
        for tc in truth:
            kinds[tc["kind"]] = kinds.get(tc["kind"], 0) + 1
            cands = [(abs(e.t - tc["t"]), i) for i, e in enumerate(events)
                     if i not in used and e.kind == tc["kind"] and abs(e.t - tc["t"]) <= tolerance]
            if cands:
                err, i = min(cands)
                used.add(i)
                found += 1
                errors.append(err)
            else:
                missed += 1
                misses.append({"bundle": Path(folder).name, **tc})
        spurious += len(events) - len(used)
        spurious_events += [{"bundle": Path(folder).name, **e.as_dict()}
                            for i, e in enumerate(events) if i not in used]
    n = len(bundles)
    return {"bundles": n, "truth_contacts": found + missed, "found": found, "missed": missed,
            "spurious": spurious, "spurious_per_bundle": spurious / n if n else 0.0,
            "max_abs_error_s": max(errors, default=0.0),
            "median_abs_error_s": float(np.median(errors)) if errors else 0.0,
            "truth_by_kind": dict(sorted(kinds.items())), "misses": misses,
            "spurious_events": spurious_events}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=50)
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        cfg = SynthConfig(seed=args.seed, width=96, height=64, fps=5)
        result = evaluate(write_synthetic_set(tmp, args.n, cfg))
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
