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
