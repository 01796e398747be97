"""`rcjudge`: the one command-line entry point, with subcommands.

The commands come in groups, the main path first (:data:`GROUPS`); each group's
commands are registered by its packages' ``register_*`` functions (:data:`REGISTER`),
each command a thin wrapper over a library function. ``--help`` lists them under their
group's heading. Errors raised on purpose (:class:`rcjudge.errors.RcjudgeError`) print as
one line (``--debug`` for the traceback); the exit codes are :data:`EXIT_CODES`, the
same for every command (docs/cli.md).
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable, Sequence
from typing import NoReturn

from rcjudge.errors import InputError, RcjudgeError, one_line

EXIT_CODES = """exit codes (every command):
  0    done
  1    an input was refused, or some inputs failed (a bundle, bag, episode, file,
       label, CSV row): each named on one stderr line (batch: also in its summary);
       verdict check/grade/recapture-check, db check, doctor: a failed check
  2    usage or setup error: flags (an existing --out included: nothing is
       overwritten), config, judge version, models, a missing ledger
  130  interrupted (Ctrl-C); a batch resumes where it stopped
  141  stdout was closed early (`rcjudge inspect --json | head`)"""

#: The help's groups, main path first, and each group's commands in the order shown.
GROUPS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("bring data in", ("bundle", "import", "inspect")),
    ("judge", ("judge", "batch", "rejudge", "explain")),
    ("improve the judge", ("review", "labels", "train", "eval", "calibrate", "average")),
    ("report", ("rates", "compare", "verdict", "export")),
    ("serve", ("serve", "keys", "api")),
    ("datasets and outcomes", ("datasets", "sequence-outcomes", "split", "release",
                               "acceptance", "attestations", "mcp")),
    ("setup", ("doctor", "models", "judges", "tasks", "db")),
    ("development", ("bench", "synth", "sim", "truth-labels")),
)


def _registrars() -> dict[str, list[Callable[[argparse._SubParsersAction], object]]]:
    """Each group's ``register_*`` functions, in :data:`GROUPS`' order."""
    from bench.cli import register as register_dev
    from judge.api.cli import register_api, register_attestations, register_keys
    from judge.cli import register_bring_in, register_improve, register_judging, register_setup
    from judge.learn.rates_cli import register_rates
    from judge.ledgers.cli import register_db, register_export, register_labels
    from judge.outcomes.cli import register as register_outcomes
    from judge.outcomes.cli import register_lerobot_export
    from judge.preflight.cli import register as register_doctor
    from rcjudge.serve import register as register_serve
    from rcjudge.serve import register_aliases as register_serve_aliases
    from verdict.cli import register as register_verdict

    return {
        "bring data in": [register_bring_in],
        "judge": [register_judging],
        "improve the judge": [register_improve, register_labels],
        "report": [register_rates, register_verdict,
                   lambda sub: register_lerobot_export(register_export(sub))],
        "serve": [register_serve, register_keys, register_api, register_serve_aliases],
        "datasets and outcomes": [register_outcomes, register_attestations],
        "setup": [register_doctor, register_setup, register_db],
        "development": [register_dev],
    }


#: What exit 1 names, for each command that can exit 1 (docs/cli.md's table; the others
#: exit 0, 2, 130 or 141 only). ``tests/integration/test_exit_codes.py`` runs each.
EXIT_1: dict[str, str] = {
    "inspect": "the bundle", "bundle create": "a video, the signal table or the attribution",
    "import lerobot": "each episode (or the dataset)", "import rosbag": "the bag",
    "judge": "each bundle", "batch": "each bundle or bag (in the summary), or SOURCE",
    "rejudge": "each bundle (in the summary)", "explain": "the bundle",
    "labels import": "the label file, then a line a bad row",
    "verdict build": "a table or cards file", "verdict check": "a failed check",
    "verdict grade": "a disagreement with the gold set",
    "verdict recapture-check": "a mismatch with the plan",
    "attestations import": "the attestation file", "doctor": "a red row",
    "db check": "an unencodable row", "truth-labels": "the bundle folder or truth file",
}


def command_table() -> str:
    """docs/cli.md's table: every leaf command, its group and its exit codes."""
    parser = build_parser()
    group_of = {n: title for title, names in GROUPS for n in names}
    rows = ["| command | group | exit 1 names | exit codes |", "| --- | --- | --- | --- |"]
    for leaf in _leaves(parser):
        one = EXIT_1.get(leaf)
        codes = "0, 1, 2, 130, 141" if one else "0, 2, 130, 141"
        rows.append(f"| `rcjudge {leaf}` | {group_of[leaf.split()[0]]} | {one or '—'} | "
                    f"{codes} |")
    return "\n".join(rows)


def _leaves(parser: argparse.ArgumentParser, prefix: tuple[str, ...] = ()) -> list[str]:
    """Every command ``--help`` shows that has no subcommands, in the help's order."""
    sub = commands_action(parser) if any(
        isinstance(a, argparse._SubParsersAction) for a in parser._actions) else None
    if sub is None:
        return [" ".join(prefix)]
    order = ([n for _, names in GROUPS for n in names] if not prefix
             else [a.dest for a in sub._choices_actions])
    return [leaf for name in order for leaf in _leaves(sub.choices[name], (*prefix, name))]


class Parser(argparse.ArgumentParser):
    """Every command's parser: a usage error is one stderr line, naming the command and
    where its help is, and exit 2 (argparse's own prints the usage block first)."""

    def error(self, message: str) -> NoReturn:
        where = "" if self.prog == "rcjudge" else f"{self.prog.removeprefix('rcjudge ')}: "
        self.exit(2, f"rcjudge: error: {where}{one_line(message)} (see {self.prog} --help)\n")


class GroupedParser(Parser):
    """The top-level parser: ``--help`` lists the commands under :data:`GROUPS`' headings."""

    def format_help(self) -> str:
        formatter = self._get_formatter()
        formatter.add_usage(self.usage, self._actions, self._mutually_exclusive_groups)
        formatter.add_text(self.description)
        shown = {a.dest: a for a in commands_action(self)._choices_actions}
        for title, names in GROUPS:
            formatter.start_section(title)
            formatter.add_arguments([shown[n] for n in names])
            formatter.end_section()
        formatter.start_section("options")
        formatter.add_arguments([a for a in self._actions if a.option_strings])
        formatter.end_section()
        formatter.add_text(self.epilog)
        return formatter.format_help()


def commands_action(parser: argparse.ArgumentParser) -> argparse._SubParsersAction:
    """``parser``'s subcommands."""
    return next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))


def build_parser() -> argparse.ArgumentParser:
    parser = GroupedParser(prog="rcjudge", description=__doc__.splitlines()[0],
                           epilog=EXIT_CODES,
                           formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--debug", action="store_true", help="show tracebacks on errors")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND",
                                parser_class=Parser)
    for register in (r for regs in _registrars().values() for r in regs):
        register(sub)
    for p in sub.choices.values():  # the same rule in every command's own --help
        if p.epilog is None:
            p.epilog = EXIT_CODES
            p.formatter_class = argparse.RawDescriptionHelpFormatter
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
        return 1 if isinstance(exc, InputError) else 2
    except KeyboardInterrupt:
        print("rcjudge: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:  # `rcjudge inspect --json | head`: the reader left; no traceback
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 141


if __name__ == "__main__":
    sys.exit(main())
