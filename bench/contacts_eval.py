"""Contact detection against ground truth: recall, timing error, spurious events.

    python -m bench.contacts_eval --n 50 --seed 7                      # synth, contact force
    python -m bench.contacts_eval --n 50 --seed 7 --signal actuator    # synth, real gripper
    python -m bench.contacts_eval --source sim --n 40 --signal actuator --workers 2
    python -m bench.contacts_eval --source sim --n 20 --signal actuator --perturbation release
    python -m bench.contacts_eval --bundles bench-out/sim --judge tiny-vision-streams
    python -m bench.contacts_eval --n 50 --seed 7 --signal actuator --cut  # starts mid-grasp

Generates ``n`` bundles — ``synth`` (bench.synth, small frames: only the signals matter)
or ``sim`` (physics rollouts, judge.sim) — whose ``/gripper`` effort is either the
finger–object contact force (``--signal contact``) or what a real gripper reports
(``--signal actuator``: its motor effort, high whenever driven; such bundles name a
gripper profile and go through ``judge.bundle.fingers``). Reads them through the real
intake and MCAP path, runs the detector as the judge does, and matches each ground-truth
contact to a detected event of the same kind within ±0.1 s. With ``--signal actuator``
the same bundles are also scored with their profiles ignored (``baseline_force_detector``:
the force detector reading the motor effort as a contact force, as before). ``--cut``
scores each bundle's streams cut halfway through its first hold (an episode that starts
mid-grasp; bundles without a hold are left out); ``--out DIR`` keeps the generated bundles
(score them again with ``--bundles DIR``, the actuator baseline with ``--signal actuator``).

``miss`` events (fingers closed fully on nothing: only the width detector reports them)
have no timed ground truth: a miss in a bundle whose outcome is ``grasp.miss`` counts as
found (``miss_bundles_found``), anywhere else as spurious. ``gripper_spurious_per_bundle``
leaves out ``impact`` (the joint-effort detector, the same for both signal kinds).
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
from judge.bundle.streams import GRIPPER_META, Signals
from judge.config import SamplingConfig, resolve_gripper, sampling_config

TOLERANCE_S = 0.1
ENDS = ("release", "slip")


def mid_hold(contacts: list[dict]) -> float | None:
    """Halfway between the first ``grasp`` and the ``release``/``slip`` that ends it (s);
    None without such a hold."""
    grasp = next((c["t"] for c in contacts if c["kind"] == "grasp"), None)
    end = next((c["t"] for c in contacts if c["kind"] in ENDS and grasp is not None
                and c["t"] > grasp), None)
    return None if end is None else (grasp + end) / 2


def cut_episode(s: Signals, contacts: list[dict], t0: float) -> tuple[Signals, list[dict]]:
    """The streams and true contacts of an episode cut at ``t0``.

    The streams keep every sample at or after ``t0``, re-timed so that the first is 0; the
    contacts are those after ``t0``, re-timed alike, and a hold in progress at ``t0`` is a
    ``grasp`` at 0.0: the detectors report a hold already on at the first sample so (its
    onset is before the recording).
    """
    i, j = int(np.searchsorted(s.t, t0)), int(np.searchsorted(s.gripper_t, t0))
    zero = float(min(s.t[i], s.gripper_t[j]))
    cut = Signals(t=s.t[i:] - zero, joint_names=s.joint_names, position=s.position[i:],
                  velocity=s.velocity[i:], effort=s.effort[i:],
                  gripper_t=s.gripper_t[j:] - zero, gripper_width=s.gripper_width[j:],
                  gripper_force=s.gripper_force[j:])
    out, holding = [], False
    for c in contacts:
        if c["t"] < t0:
            holding = c["kind"] == "grasp" or (holding and c["kind"] not in ENDS)
        else:
            out.append({**c, "t": round(c["t"] - zero, 6)})
    return cut, ([{"t": 0.0, "kind": "grasp"}] if holding else []) + out


def _outcome(truth: dict) -> str:
    return truth.get("outcome") or ("success" if truth.get("success")
                                    else truth.get("failure_class") or "")


def evaluate(bundles: list[Path], tolerance: float = TOLERANCE_S,
             use_profile: bool = True, cfg: SamplingConfig | None = None,
             cut: bool = False) -> dict:
    """Match detections to truth per bundle; returns counts and per-kind figures.

    ``use_profile=False`` ignores the bundles' gripper profiles: the force detector reads
    whatever the effort is (the baseline an actuator effort defeats). ``cfg``: the detection
    settings (default ``configs/sampling.yaml``). ``cut``: each bundle's streams are cut
    halfway through its first hold (:func:`mid_hold`, :func:`cut_episode`),
    an episode that starts mid-grasp; bundles without a hold are left out (``bundles``
    counts those scored).
    """
    cfg = cfg or sampling_config()
    scored = 0
    found = missed = spurious = 0
    errors: list[float] = []
    misses: list[dict] = []
    kinds: dict[str, int] = {}
    found_by_kind: dict[str, int] = {}
    spurious_by_kind: dict[str, int] = {}
    spurious_events: list[dict] = []
    miss_bundles = miss_found = 0
    for folder in bundles:
        doc = json.loads((Path(folder) / "truth.json").read_text())
        truth = [c for c in doc["contacts"] if c["kind"] in ("grasp", "release", "slip",
                                                              "impact")]
        streams = load_streams(intake(str(folder)))
        signals = streams.signals
        if cut:
            t0 = mid_hold(truth)
            if t0 is None:
                continue
            signals, truth = cut_episode(signals, truth, t0)
        scored += 1
        gripper = resolve_gripper(streams.metadata.get(GRIPPER_META)) if use_profile else None
        events = detect_contacts(signals, cfg.contacts, gripper, cfg.fingers)
        used: set[int] = set()
        if _outcome(doc) == "grasp.miss":
            miss_bundles += 1
            mi = [i for i, e in enumerate(events) if e.kind == "miss"]
            if mi:
                miss_found += 1
                used.add(mi[0])
        for tc in truth:
            kinds[tc["kind"]] = kinds.get(tc["kind"], 0) + 1
            cands = [(abs(e.t - tc["t"]), i) for i, e in enumerate(events)
                     if i not in used and e.kind == tc["kind"] and abs(e.t - tc["t"]) <= tolerance]
            if cands:
                err, i = min(cands)
                used.add(i)
                found += 1
                found_by_kind[tc["kind"]] = found_by_kind.get(tc["kind"], 0) + 1
                errors.append(err)
            else:
                missed += 1
                misses.append({"bundle": Path(folder).name, **tc})
        extra = [e for i, e in enumerate(events) if i not in used]
        spurious += len(extra)
        for e in extra:
            spurious_by_kind[e.kind] = spurious_by_kind.get(e.kind, 0) + 1
        spurious_events += [{"bundle": Path(folder).name, **e.as_dict()} for e in extra]
    n = scored
    return {"bundles": n, "truth_contacts": found + missed, "found": found, "missed": missed,
            "spurious": spurious, "spurious_per_bundle": spurious / n if n else 0.0,
            "max_abs_error_s": max(errors, default=0.0),
            "median_abs_error_s": float(np.median(errors)) if errors else 0.0,
            "truth_by_kind": dict(sorted(kinds.items())),
            "found_by_kind": dict(sorted(found_by_kind.items())),
            "spurious_by_kind": dict(sorted(spurious_by_kind.items())),
            "gripper_spurious_per_bundle": sum(v for k, v in spurious_by_kind.items()
                                               if k != "impact") / n if n else 0.0,
            "miss_bundles": miss_bundles, "miss_bundles_found": miss_found,
            "misses": misses, "spurious_events": spurious_events}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=50)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--source", choices=("synth", "sim"), default="synth")
    parser.add_argument("--signal", choices=("contact", "actuator"), default="contact",
                        help="what /gripper's effort is (default: contact force)")
    parser.add_argument("--workers", type=int, default=1, help="sim: rollout processes")
    parser.add_argument("--tasks", default="pick-place,pick-place-wall",
                        help="sim: tasks (grasping ones)")
    parser.add_argument("--perturbation", default=None,
                        help="sim: force one perturbation kind (e.g. release) for every run")
    parser.add_argument("--duration", type=float, default=3.0, help="sim: seconds a rollout")
    parser.add_argument("--judge", help="detect with this judge version's sampling settings "
                        "(default configs/sampling.yaml)")
    parser.add_argument("--bundles", help="score the bundles (with truth.json) in this folder "
                        "instead of generating --n")
    parser.add_argument("--out", help="write the generated bundles here (kept) instead of a "
                        "temporary folder")
    parser.add_argument("--cut", action="store_true", help="cut each bundle's streams halfway "
                        "through its first hold: episodes that start mid-grasp")
    args = parser.parse_args(argv)
    detection = None
    if args.judge:
        from judge.ensemble.version import load_judge_version

        detection = load_judge_version(args.judge).sampling_settings()
    with tempfile.TemporaryDirectory() as tmp:
        if args.bundles:
            bundles = sorted(p.parent for p in Path(args.bundles).glob("*/truth.json"))
            if not bundles:
                raise SystemExit(f"{args.bundles}: no bundle with a truth.json in it")
        elif args.source == "synth":
            cfg = SynthConfig(seed=args.seed, width=96, height=64, fps=5,
                              gripper_signal=args.signal)
            bundles = write_synthetic_set(args.out or tmp, args.n, cfg)
        else:
            from judge.sim.generate import make_config, write_sim_set

            sim = make_config(seed=args.seed, tasks=args.tasks, width=64, height=48, fps=8,
                              gripper_signal=args.signal, perturbation=args.perturbation,
                              duration_s=args.duration)
            bundles, _ = write_sim_set(args.out or tmp, args.n, sim, workers=args.workers)
        result = evaluate(bundles, cfg=detection, cut=args.cut)
        if args.signal == "actuator":
            base = evaluate(bundles, use_profile=False, cfg=detection, cut=args.cut)
            result["baseline_force_detector"] = {
                k: v for k, v in base.items() if k not in ("misses", "spurious_events")}
    source = {"folder": args.bundles} if args.bundles else {
        "source": args.source, "signal": args.signal, "seed": args.seed}
    print(json.dumps({**source, "judge": args.judge, "cut": args.cut, **result}, indent=2))


if __name__ == "__main__":
    main()
