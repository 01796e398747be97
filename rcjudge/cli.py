"""`rcjudge`: the one command-line entry point, with subcommands.

Each package registers its own subcommands (``judge.cli``, ``judge.ledgers.cli``,
``judge.api.cli``, ``verdict.cli``, ``bench.cli``); ``rcjudge serve`` (``rcjudge.serve``)
serves the Judge API and the verdict screen; each is a thin wrapper over a library
function.
Errors raised on purpose (:class:`rcjudge.errors.RcjudgeError`) print as one line
(``--debug`` for the traceback); the exit codes are :data:`EXIT_CODES`.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence

from rcjudge.errors import InputError, RcjudgeError, one_line

EXIT_CODES = """exit codes (judge, batch, rejudge, import, bundle create):
  0    every input was judged (or written)
  1    some inputs failed; each is named on one stderr line (batch: in its summary)
  2    usage or setup error (flags, config, judge version, models, ledger); other
       commands, and import rosbag, also exit 2 for a bad input
  130  interrupted (Ctrl-C); a batch resumes where it stopped
  141  stdout was closed early (`rcjudge inspect --json | head`)"""


def build_parser() -> argparse.ArgumentParser:
    from bench.cli import register as register_bench
    from judge.api.cli import register as register_api
    from judge.cli import register as register_judge
    from judge.ledgers.cli import register as register_ledgers
    from judge.outcomes.cli import register as register_outcomes
    from judge.preflight.cli import register as register_doctor
    from rcjudge.serve import register as register_serve
    from verdict.cli import register as register_verdict

    parser = argparse.ArgumentParser(prog="rcjudge", description=__doc__.splitlines()[0],
                                     epilog=EXIT_CODES,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--debug", action="store_true", help="show tracebacks on errors")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    register_bench(sub)
    register_judge(sub)
    register_verdict(sub)
    register_ledgers(sub)
    register_api(sub)
    register_serve(sub)  # the Judge API, and the verdict screen when given its inputs
    register_outcomes(sub)
    register_doctor(sub)  # pre-flight: rcjudge doctor
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return int(args.func(args) or 0)
    except RcjudgeError as exc:
        if args.debug:
            raise
        first, *rest = exc.lines()
        print("\n".join([f"rcjudge: error: {one_line(first)}", *map(one_line, rest)]),
              file=sys.stderr)
        return getattr(args, "input_exit", 2) if isinstance(exc, InputError) else 2
    except KeyboardInterrupt:
        print("rcjudge: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:  # `rcjudge inspect --json | head`: the reader left; no traceback
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 141


if __name__ == "__main__":
    sys.exit(main())
