"""``rcjudge doctor`` and ``rcjudge models fetch``: thin wrappers; heavy imports stay inside."""

from __future__ import annotations

import argparse
import json


def _cmd_models_fetch(args: argparse.Namespace) -> int:
    from judge.ensemble.fetch import fetch_version, format_fetch
    from judge.ensemble.version import load_judge_version

    reports = fetch_version(load_judge_version(args.version), progress=not args.json)
    print(json.dumps(reports, indent=2) if args.json else format_fetch(reports))
    return 0


def register_fetch(models: argparse._SubParsersAction) -> None:
    """Add ``fetch`` to ``rcjudge models``."""
    p = models.add_parser("fetch", help="download a version's models from the hub at their "
                          "pinned revisions into their paths (resumable; docs/doctor.md)")
    p.add_argument("version", metavar="VERSION", help="judge version name or YAML file")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=_cmd_models_fetch)


def gpu_memory_gib(text: str) -> float:
    """``--gpu-memory-gib``: a number of GiB above 0."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number of GiB, got {text!r}") from None
    if not 0 < value < 10_000:
        raise argparse.ArgumentTypeError(f"expected GiB above 0, got {text}")
    return value


def _cmd_doctor(args: argparse.Namespace) -> int:
    from judge.ensemble.version import load_judge_version
    from judge.preflight.doctor import exit_code, format_table, run_checks

    version = load_judge_version(args.judge)
    found = run_checks(version, "doctor", load=args.load, gpu_memory_gib=args.gpu_memory_gib)
    code = exit_code(found)
    if args.json:
        print(json.dumps({"judge_version": version.name, "exit": code,
                          "rows": [r.as_dict() for r in found]}, indent=2))
    else:
        print(format_table(version.name, found))
    return code


def register(sub: argparse._SubParsersAction) -> None:
    """Add ``doctor`` to the ``rcjudge`` parser."""
    p = sub.add_parser("doctor", help="pre-flight table: GPUs, versions against the tested "
                       "pins, model folders, processors, prompt budgets (docs/doctor.md); "
                       "exit 1 on a red row")
    p.add_argument("--judge", default="tiny", metavar="VERSION",
                   help="judge version name or YAML file (default tiny)")
    p.add_argument("--load", action="store_true",
                   help="also the checks that load each model (answer-token mass)")
    p.add_argument("--gpu-memory-gib", type=gpu_memory_gib, metavar="GIB",
                   help="plan the vLLM engines for GPUs of this memory (e.g. 80 or 141; "
                   "default: this machine's GPUs)")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=_cmd_doctor)
