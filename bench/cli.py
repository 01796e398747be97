"""Subcommands of the bench: data generators for tests, demos and benchmarks.

``rcjudge synth`` (procedural rollouts), ``rcjudge sim`` (physics rollouts on MuJoCo with
Meta-World's scripted experts: the ``sim`` extra) and ``rcjudge truth-labels`` (operator
label files from either generator's ``truth.json``); ``rcjudge bench call|batch`` (the
per-call stage table and batch throughput, :mod:`bench.call`).
"""

from __future__ import annotations

import argparse
import json
from dataclasses import asdict


def _cmd_synth(args: argparse.Namespace) -> int:
    from bench.synth import SynthConfig, write_synthetic_set

    cfg = SynthConfig(seed=args.seed, duration_s=args.duration, width=args.width,
                      height=args.height, fps=args.fps)
    paths = write_synthetic_set(args.out, n=args.n, config=cfg, progress=True)
    print(json.dumps([str(p) for p in paths], indent=2) if args.json
          else "\n".join(str(p) for p in paths))
    return 0


def _cmd_sim(args: argparse.Namespace) -> int:
    from judge.sim.generate import make_config, summary_line, write_sim_set

    fields = {"seed": args.seed, "tasks": tuple(args.tasks.split(",")),
              "duration_s": args.duration, "min_duration_s": args.min_duration,
              "width": args.width, "height": args.height, "fps": args.fps,
              "failure_rate": args.failure_rate, "perturbation": args.perturbation,
              "group_size": args.group_size}
    if args.near_band is not None:
        from judge.sim.labels import LabelRules

        fields["labels"] = LabelRules(near_band=args.near_band)
    cfg = make_config(**fields)
    paths, summary = write_sim_set(args.out, n=args.n, config=cfg, workers=args.workers,
                                   progress=True)
    if args.json:
        print(json.dumps({**summary, "bundles": [str(p) for p in paths]}, indent=2))
    else:
        print("\n".join(str(p) for p in paths))
        print(summary_line(summary))
    return 0


def _cmd_truth_labels(args: argparse.Namespace) -> int:
    from judge.sim.truth_labels import read_picks, write_truth_labels

    runs = read_picks(args.runs) if args.runs else None
    s = write_truth_labels(args.dir, args.out, fraction=args.fraction, seed=args.seed,
                           labeled_by=args.labeled_by, labeled_at=args.labeled_at,
                           near_threshold=args.near_threshold, mapping=args.mapping,
                           runs=runs)
    which = (f"the runs picked in {args.runs}" if runs is not None
             else f"fraction {s.fraction}, seed {s.seed}")
    print(json.dumps(asdict(s), indent=2) if args.json else
          f"{s.out}: {s.labeled} label(s) of {s.runs_found} run(s) with truth.json ({which})")
    return 0


def _cmd_bench_call(args: argparse.Namespace) -> int:
    from bench.call import cmd_call

    return cmd_call(args)


def _cmd_bench_batch(args: argparse.Namespace) -> int:
    from bench.call import cmd_batch

    return cmd_batch(args)


def register(sub: argparse._SubParsersAction) -> None:
    """Add the bench's subcommands to the `rcjudge` parser."""
    bench = sub.add_parser("bench", help="measure a judge: per-call stages, batch throughput "
                           "(docs/performance.md)")
    bsub = bench.add_subparsers(dest="bench_command", required=True, metavar="WHAT")
    p = bsub.add_parser("call", help="p50/p90/p99 per stage of single calls beside the "
                        "spec's targets; CPU/GPU seconds and cost per call")
    p.add_argument("--judge", required=True, metavar="VERSION", help="judge version")
    p.add_argument("--bundles", required=True, metavar="DIR", help="folder of bundles")
    p.add_argument("--repeats", type=int, default=1, help="passes over the folder (default 1)")
    p.add_argument("--out", metavar="DIR", help="write stages.md and stages.png here")
    p.add_argument("--in-flight", metavar="K,K,...", help="a version with served models: "
                   "p50/p95 latency, rate and cost of a judgment with K judgments and K "
                   "requests per served model in flight, per K (bench.served)")
    p.add_argument("--baseline", metavar="VERSION", help="with --in-flight: an in-process "
                   "version judged on the same bundles, one at a time; ratios against it")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=_cmd_bench_call)
    p = bsub.add_parser("batch", help="throughput at saturation and latency at concurrency 1, "
                        "sequential loop vs Ray")
    p.add_argument("--judge", required=True, metavar="VERSION", help="judge version")
    p.add_argument("--bundles", required=True, metavar="DIR", help="folder of bundles")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=_cmd_bench_batch)

    p = sub.add_parser("synth", help="write synthetic rollout bundles with ground truth")
    p.add_argument("--n", type=int, default=4, help="number of bundles")
    p.add_argument("--out", required=True, help="output folder")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--duration", type=float, default=6.0, help="seconds per rollout")
    p.add_argument("--width", type=int, default=160)
    p.add_argument("--height", type=int, default=120)
    p.add_argument("--fps", type=int, default=15)
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=_cmd_synth)

    from judge.sim.names import KINDS
    from judge.sim.tasks import TASKS

    p = sub.add_parser("sim", help="physics rollouts (MuJoCo + Meta-World experts) as "
                       "bundles with truth.json (needs the sim extra; docs/sim.md)")
    p.add_argument("--tasks", default="all",
                   help=f"comma list of {', '.join(TASKS)} (default all)")
    p.add_argument("--n", type=int, default=4, help="number of rollouts")
    p.add_argument("--out", required=True, help="output folder")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--workers", type=int, default=1, help="processes (default 1)")
    p.add_argument("--duration", type=float, default=3.0, help="seconds per rollout "
                   "(with --min-duration, the longest)")
    p.add_argument("--min-duration", type=float, metavar="S", help="draw each rollout's "
                   "length from [S, --duration] s: the time limit cuts some experts mid-task")
    p.add_argument("--width", type=int, default=160)
    p.add_argument("--height", type=int, default=120)
    p.add_argument("--fps", type=int, default=16)
    p.add_argument("--failure-rate", type=float, default=0.5,
                   help="share of rollouts with a perturbed expert (default 0.5)")
    p.add_argument("--perturbation", choices=KINDS, help="force one perturbation kind")
    p.add_argument("--group-size", type=int, default=4,
                   help="rollouts sharing initial conditions (default 4)")
    p.add_argument("--near-band", type=float,
                   help="near-threshold band as a fraction of the threshold (default 0.2)")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=_cmd_sim)

    p = sub.add_parser("truth-labels", help="operator-label file (rcjudge labels import) "
                       "from the truth.json of sim or synth bundles")
    p.add_argument("dir", help="folder of bundle folders")
    p.add_argument("--out", required=True, help="labels file to write (.csv or .jsonl)")
    p.add_argument("--fraction", type=float, help="share of runs to label (default 1)")
    p.add_argument("--runs", metavar="PICKS.json", help="label exactly the runs the review "
                   "queue picked: the JSON of `rcjudge review next --json` (not with --fraction)")
    p.add_argument("--seed", type=int, default=0, help="seed of the subset")
    p.add_argument("--labeled-by", default="truth", help="labeled_by of every row")
    p.add_argument("--labeled-at", help="ISO 8601 labeled_at of every row (default now)")
    p.add_argument("--json", action="store_true")
    p.add_argument("--near-threshold", action="store_true", help="add the near_threshold "
                   "column (for rcjudge eval's slice; labels import refuses it)")
    p.add_argument("--mapping", metavar="FILE.yaml", help="read truth files of another "
                   "layout: file name, field paths, value and class maps (docs/sim.md); "
                   "default the project's truth.json")
    p.set_defaults(func=_cmd_truth_labels)
