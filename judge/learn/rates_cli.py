"""``rcjudge rates`` and ``rcjudge compare``: a version's success rates, rectified by the
lab's sampled labels, per cell; and two policies' difference.

Thin: the version is resolved (a name, or a version YAML whose ``training.used_runs`` the
ledger may not record), :func:`judge.learn.rate_inputs.rate_rows` reads the rows,
:mod:`judge.learn.rates_report` makes and renders the report. Registered on the CLI by
:func:`register_rates` (one call from :mod:`judge.cli`).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from judge.ledgers.cli import db_arg

OUTCOMES = ("success", "attempt")  # judge.learn.rate_inputs.OUTCOMES (no numpy at parse time)


def resolve_version(ledger: Any, spec: str | None) -> tuple[str, frozenset[str]]:
    """(version name, bundle hashes it trained on as its version file says).

    ``spec`` None: the ledger's one judged version. A version YAML, or a name with a version
    file, is read as ``rcjudge eval`` reads it (its ``training.used_runs``, which a version
    trained against another ledger needs); a name without one relies on the ledger's record
    of what it trained on.

    Raises:
        RateInputError: no ``--judge`` where the ledger holds several versions, or none.
        EvalError: a version file naming a version the ledger has no judgment of, or a
            missing ``used_runs`` file.
    """
    from judge.ensemble.version import version_file
    from judge.learn.evaluate import load_candidate
    from judge.learn.rate_inputs import RateInputError

    known = ledger.judge_versions()
    if spec is None:
        if len(known) != 1:
            raise RateInputError("--judge: give the version whose rates to read (versions "
                                 f"with judgments: {', '.join(known) or 'none'})")
        spec = known[0]
    if Path(spec).suffix in (".yaml", ".yml") or version_file(spec) is not None:
        c = load_candidate(spec, known)
        return c.name, c.used_runs
    return spec, frozenset()


def check_html_path(path: str) -> None:
    """Refuse, before any work, an ``--html`` path that cannot be written.

    Raises:
        RateInputError: naming the path and what stands in the way (a folder, a file above
            it, a folder that cannot be written).
    """
    import os

    from judge.learn.rate_inputs import RateInputError

    target = Path(path)
    if target.is_dir():
        raise RateInputError(f"--html {path}: is a folder; expected the path of a page to write")
    parent = target.absolute().parent
    while not parent.exists():  # the folders still to be made; the first existing one decides
        parent = parent.parent
    if not parent.is_dir():
        raise RateInputError(f"--html {path}: cannot be written: {parent} is a file")
    if not os.access(target if target.exists() else parent, os.W_OK):
        raise RateInputError(f"--html {path}: cannot be written")


def read_truth(path: str) -> dict[str, Any]:
    """``--truth FILE``: the label-file reader of ``rcjudge eval --labels``."""
    from judge.learn.truth import EvalError, read_truth_file

    try:
        return read_truth_file(path)
    except EvalError as exc:
        raise EvalError(str(exc).replace("--labels", "--truth", 1)) from None


def _inputs(ledger: Any, spec: str | None, outcome: str, by: list[str]) -> Any:
    from judge.learn.rate_inputs import rate_rows

    name, used = resolve_version(ledger, spec)
    return rate_rows(ledger, name, outcome, by, trained_on=used or None)


def _rounds(ledger: Any) -> dict[int, Any]:
    from judge.ledgers.rounds import read_frames

    with ledger.engine.connect() as conn:
        return read_frames(conn)[0]


def _cmd_rates(args: argparse.Namespace) -> int:
    from judge.learn.rates_report import format_rates, rates_report, render_rates_html
    from judge.ledgers.store import Ledger

    by = _by(args.by)
    if args.html:
        check_html_path(args.html)
    truth = read_truth(args.truth) if args.truth else None  # before the ledger opens
    with Ledger.open(args.db, create=False) as ledger:
        inputs = _inputs(ledger, args.judge, args.outcome, by)
        report = rates_report(inputs, _rounds(ledger), truth, args.truth)
    if args.html:
        Path(args.html).parent.mkdir(parents=True, exist_ok=True)
        Path(args.html).write_text(render_rates_html(report), encoding="utf-8")
    if args.json:
        print(json.dumps(report, indent=2, ensure_ascii=False))
    else:
        print(format_rates(report) + (f"\nwrote {args.html}" if args.html else ""))
    return 0


def _cmd_compare(args: argparse.Namespace) -> int:
    from judge.learn.rates_report import compare_report, format_compare
    from judge.ledgers.store import Ledger

    by = _by(args.by) if args.by else []
    if "policy" in by:
        from judge.learn.rate_inputs import RateInputError

        raise RateInputError("--by: compare groups each policy's runs; 'policy' is not a "
                             "cell key here (task, body, checkpoint)")
    with Ledger.open(args.db, create=False) as ledger:
        inputs = _inputs(ledger, args.judge, args.outcome, ["policy", *by])
        report = compare_report(inputs, args.policy_a, args.policy_b)
    if args.json:
        print(json.dumps(report, indent=2, ensure_ascii=False))
    else:
        print(format_compare(report))
    return 0


def _by(text: str) -> list[str]:
    return [k.strip() for k in text.split(",")] if text else []


def register_rates(sub: argparse._SubParsersAction) -> None:
    """``rcjudge rates`` and ``rcjudge compare``."""
    p = sub.add_parser("rates", help="success rates per cell: judge-only (uncorrected), "
                       "labels-only and rectified by the sampled labels, with intervals "
                       "(docs/rates.md)")
    p.add_argument("--judge", metavar="VERSION", help="judge version name or YAML file "
                   "(default: the ledger's only judged version)")
    p.add_argument("--by", default="policy,task", metavar="KEYS", help="cell keys, comma "
                   "separated, among policy, task, body, checkpoint (default policy,task)")
    p.add_argument("--outcome", choices=OUTCOMES, default="success")
    p.add_argument("--truth", metavar="FILE", help="a label file (CSV/JSONL as `labels "
                   "import`) holding the true outcome of every run: its rate is printed "
                   "beside the readings, labelled as known only in a demo or a benchmark")
    db_arg(p)
    out = p.add_mutually_exclusive_group()
    out.add_argument("--json", action="store_true")
    out.add_argument("--html", metavar="OUT", help="also write the table as one "
                     "self-contained HTML page")
    p.set_defaults(func=_cmd_rates)

    p = sub.add_parser("compare", help="two policies' rectified success rates, A − B with "
                       "interval and p-value, per task and pooled (docs/rates.md)")
    p.add_argument("--judge", required=True, metavar="VERSION",
                   help="judge version name or YAML file")
    p.add_argument("policy_a", metavar="POLICY_A", help="vendor/name@version")
    p.add_argument("policy_b", metavar="POLICY_B", help="vendor/name@version")
    p.add_argument("--by", default="task", metavar="KEYS", help="cell keys, comma separated, "
                   "among task, body, checkpoint (default task; '' for one pooled cell)")
    p.add_argument("--outcome", choices=OUTCOMES, default="success")
    db_arg(p)
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=_cmd_compare)
