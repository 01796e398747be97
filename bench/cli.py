"""Subcommands of the bench (``rcjudge synth``): data generators for tests, demos and benchmarks."""

from __future__ import annotations

import argparse
import json


def _cmd_synth(args: argparse.Namespace) -> int:
    from bench.synth import SynthConfig, write_synthetic_set

    cfg = SynthConfig(seed=args.seed, duration_s=args.duration, width=args.width,
                      height=args.height, fps=args.fps)
    paths = write_synthetic_set(args.out, n=args.n, config=cfg, progress=not args.json)
    print(json.dumps([str(p) for p in paths], indent=2) if args.json
          else "\n".join(str(p) for p in paths))
    return 0


def register(sub: argparse._SubParsersAction) -> None:
    """Add the bench's subcommands to the `rcjudge` parser."""
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
