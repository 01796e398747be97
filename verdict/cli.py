"""CLI subcommands of the verdict engine (`rcjudge verdict …`; the screen in `rcjudge serve`).

``rcjudge verdict build --evaluation-run F --task-spec F --dataset-index F --artifact A
--out cards.json [--html screen.html]`` builds the cards (``verdict build --cards C --html
P`` writes an existing file's screen); ``check``, ``grade`` and ``recapture-check`` are
its other subcommands. The old spellings (``verdict`` with flags, ``verdict screen``) stay
one release, hidden, with a notice. Failed checks, a grade
below N/N and recapture mismatches exit 1; bad input exits 2 (one line).

``rcjudge serve`` (``rcjudge/serve.py``) serves the Judge API and, when given the screen's
inputs (:func:`screen_args`), this screen too (:func:`screen_app`).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from rcjudge import strict_json
from rcjudge.aliases import notice, renamed

DEFAULT_GRADE = "bench-out/verdict-grade.json"


def _tables(p: argparse.ArgumentParser, required: bool) -> None:
    for flag, what in (("--evaluation-run", "one evaluated episode a row"),
                       ("--task-spec", "one task's targets a row"),
                       ("--dataset-index", "one task's collected data a row")):
        p.add_argument(flag, required=required, metavar="FILE",
                       help=f".parquet, .csv or .jsonl table, {what}")


def _screen_opts(p: argparse.ArgumentParser) -> None:
    p.add_argument("--previous", metavar="CARDS", help="last round's saved cards.json")
    p.add_argument("--grade-result", metavar="FILE", default=DEFAULT_GRADE,
                   help=f"grade result file for the self-grading figure (default {DEFAULT_GRADE};"
                        " blank when absent)")
    p.add_argument("--explain-dir", metavar="DIR",
                   help="list each task's evaluation_run rows, linked to the explain pages in "
                        "DIR (written by rcjudge explain --runs FILE --out-dir DIR); needs the "
                        "tables")
    p.add_argument("--rates", metavar="RATES.json",
                   help="rectified success rates to show beside each card's success_rate "
                        "(rcjudge rates --json: by task or policy,task; docs/verdict.md)")


def _build_args(p: argparse.ArgumentParser, hidden: bool = False) -> None:
    """``verdict build``'s flags (``hidden``: the bare ``verdict``'s, kept out of its help)."""
    def h(text: str) -> str:
        return argparse.SUPPRESS if hidden else text

    p.add_argument("--cards", help=h("an existing cards.json: write its screen (--html) "
                                     "instead of building cards; omit before new records"))
    for flag, what in (("--evaluation-run", "one evaluated episode a row"),
                       ("--task-spec", "one task's targets a row"),
                       ("--dataset-index", "one task's collected data a row")):
        p.add_argument(flag, metavar="FILE", help=h(f".parquet, .csv or .jsonl table, {what}"))
    p.add_argument("--artifact", help=h("model_artifact judged in this round (e.g. RLDX-1-rc7)"))
    p.add_argument("--out", metavar="CARDS", help=h("write the cards (JSON array) here"))
    p.add_argument("--html", metavar="PAGE", help=h("also write the self-contained screen "
                                                    "(serve it: rcjudge serve --cards CARDS)"))
    p.add_argument("--previous", metavar="CARDS", help=h("last round's saved cards.json"))
    p.add_argument("--grade-result", metavar="FILE", default=DEFAULT_GRADE,
                   help=h(f"grade result file for the self-grading figure (default "
                          f"{DEFAULT_GRADE}; blank when absent)"))
    p.add_argument("--explain-dir", metavar="DIR",
                   help=h("list each task's evaluation_run rows, linked to the explain pages "
                          "in DIR (written by rcjudge explain --runs FILE --out-dir DIR); "
                          "needs the tables"))
    p.add_argument("--rates", metavar="RATES.json",
                   help=h("rectified success rates to show beside each card's success_rate "
                          "(rcjudge rates --json: by task or policy,task; docs/verdict.md)"))
    p.add_argument("--json", action="store_true", help=h("print the cards as JSON"))


def register(sub: argparse._SubParsersAction) -> None:
    """report: ``verdict build|check|grade|recapture-check`` (and the hidden old spellings:
    ``verdict`` with flags, ``verdict screen``)."""
    p = sub.add_parser("verdict", help="'what to collect next' cards from three tables, "
                       "their checks and their screen")
    _build_args(p, hidden=True)  # the bare `verdict --evaluation-run ...` of before
    p.set_defaults(func=_cmd_bare)
    vs = p.add_subparsers(dest="verdict_command", metavar="COMMAND")

    b = vs.add_parser("build", help="build the cards from three tables (--out), and/or write "
                      "the screen (--html) of them or of an existing --cards file")
    _build_args(b)
    b.set_defaults(func=_cmd_build_or_screen)

    c = vs.add_parser("check", help="run the 14 automatic checks on any cards file")
    c.add_argument("cards", help="cards.json (a JSON array of cards)")
    _tables(c, required=True)
    c.add_argument("--json", action="store_true")
    c.set_defaults(func=_cmd_check)

    g = vs.add_parser("grade", help="verdict agreement against the gold set")
    g.add_argument("--gold", required=True, metavar="DIR", help="gold set folder (verdict/gold)")
    g.add_argument("--out", default=DEFAULT_GRADE, help=f"result file (default {DEFAULT_GRADE})")
    g.add_argument("--json", action="store_true")
    g.set_defaults(func=_cmd_grade)

    r = vs.add_parser("recapture-check", help="compare cards' recapture site/hand with the plan")
    r.add_argument("cards")
    r.add_argument("--plan", required=True, metavar="PLAN.csv",
                   help="columns task_id, capture_site, robot_hand_type")
    r.add_argument("--json", action="store_true")
    r.set_defaults(func=_cmd_recapture)

    s = vs.add_parser("screen")  # hidden: the old spelling of `verdict build --cards --html`
    s.add_argument("--cards")
    _tables(s, required=False)
    _screen_opts(s)
    s.add_argument("--html", required=True, metavar="PAGE")
    s.set_defaults(func=renamed("verdict screen", "verdict build --cards CARDS --html PAGE",
                                _cmd_screen))


def _cmd_bare(args: argparse.Namespace) -> int:
    """``rcjudge verdict --evaluation-run ...``: the old spelling of ``verdict build``."""
    from verdict.errors import VerdictUsageError

    given = [k for k in ("cards", "evaluation_run", "task_spec", "dataset_index", "artifact",
                         "out", "html") if getattr(args, k, None) is not None]
    if not given:
        raise VerdictUsageError("rcjudge verdict: give a command: build, check, grade or "
                                "recapture-check (rcjudge verdict --help)")
    notice("verdict --evaluation-run ...", "verdict build --evaluation-run ...")
    return _cmd_build_or_screen(args)


def _cmd_build_or_screen(args: argparse.Namespace) -> int:
    """``verdict build``: the cards from the tables, or the screen of ``--cards``."""
    from verdict.errors import VerdictUsageError

    if args.cards is None:
        return _cmd_build(args)
    if args.html is None or args.out is not None:
        raise VerdictUsageError("rcjudge verdict build --cards CARDS: writes that file's "
                                "screen; give --html PAGE (and no --out)")
    return _cmd_screen(args)


def screen_args(p: argparse.ArgumentParser) -> None:
    """The screen's inputs, as ``rcjudge serve`` takes them."""
    p.add_argument("--cards", help="verdict screen: this round's cards.json")
    _tables(p, required=False)
    p.add_argument("--artifact", help="verdict screen: build the cards from the tables for "
                   "this artifact")
    _screen_opts(p)


#: The flags that ask ``rcjudge serve`` for the screen (``--grade-result`` has a default).
SCREEN_INPUTS = ("cards", "evaluation_run", "task_spec", "dataset_index", "artifact",
                 "previous")


def wants_screen(args: argparse.Namespace) -> bool:
    """Whether any of the screen's inputs was given."""
    return any(getattr(args, f, None) is not None for f in SCREEN_INPUTS)


def _read_cards(path: str | None) -> list[dict[str, Any]] | None:
    from verdict.errors import VerdictInputError

    if path is None:
        return None
    try:
        data = strict_json.load_file(path)
    except (OSError, strict_json.StrictJsonError) as exc:
        raise VerdictInputError(f"cards file {path}: {exc}") from exc
    if not isinstance(data, list) or not all(isinstance(c, dict) for c in data):
        raise VerdictInputError(f"cards file {path}: expected a JSON array of card objects")
    return data


def _need_tables(args: argparse.Namespace, what: str) -> None:
    from verdict.errors import VerdictUsageError

    missing = [f for f in ("evaluation_run", "task_spec", "dataset_index", "artifact")
               if getattr(args, f, None) is None]
    if missing:
        raise VerdictUsageError(f"{what}: missing " + ", ".join(
            "--" + m.replace("_", "-") for m in missing))


def _state(args: argparse.Namespace, cards: list[dict] | None, inputs: Any,
           html: str | None = None) -> Any:
    """The screen's state; ``html`` is where the page is written (None: served)."""
    import os

    from verdict.checks import run_checks
    from verdict.errors import VerdictInputError, VerdictUsageError
    from verdict.reference import Reference
    from verdict.screen.app import ScreenState
    from verdict.screen.checks_file import read_checks
    from verdict.screen.runs import task_runs

    note = ""
    if cards is not None and inputs is not None:
        report = run_checks(cards, Reference(inputs)).to_dict()
    elif cards is not None and getattr(args, "cards", None):
        report, note = read_checks(args.cards)  # the checks the cards were built with
    else:
        report = None
    title = (inputs.artifact if inputs is not None
             else (cards[0].get("model_artifact", "") if cards else ""))
    runs = None
    if args.explain_dir:
        if inputs is None:
            raise VerdictUsageError(f"--explain-dir {args.explain_dir}: needs --evaluation-run, "
                                    "--task-spec and --dataset-index (the runs are the "
                                    "evaluation_run rows)")
        if not Path(args.explain_dir).is_dir():
            raise VerdictInputError(f"--explain-dir {args.explain_dir}: not a folder")
        base = ("explain/" if html is None else Path(os.path.relpath(
            args.explain_dir, Path(html).resolve().parent)).as_posix() + "/")
        runs = task_runs(inputs, args.explain_dir, base)
    return ScreenState(cards, report, _read_cards(args.previous), args.grade_result, title,
                       runs, args.explain_dir, _rates(args, cards, inputs), note)


def _rates(args: argparse.Namespace, cards: list[dict] | None, inputs: Any) -> Any:
    """task_id -> the rectified rate of its cell, from ``--rates`` (None without it)."""
    from verdict.errors import VerdictInputError
    from verdict.screen.rates import card_rates, read_rates

    path = getattr(args, "rates", None)
    if path is None or cards is None:
        return None
    try:
        doc = strict_json.load_file(path)
    except (OSError, strict_json.StrictJsonError) as exc:
        raise VerdictInputError(f"--rates {path}: {exc}") from None
    by, cells = read_rates(doc, f"--rates {path}")
    targets = {}
    if inputs is not None:
        spec = inputs.task_spec.to_pylist()
        targets = {r["task_id"]: r["target_success_rate"] for r in spec
                   if r.get("target_success_rate") is not None}
    return card_rates(cards, by, cells, targets)


def _cmd_build(args: argparse.Namespace) -> int:
    from verdict.engine import build_from_inputs
    from verdict.model import card_to_dict
    from verdict.tables import load_inputs

    _need_tables(args, "rcjudge verdict build")
    inputs = load_inputs(args.evaluation_run, args.task_spec, args.dataset_index, args.artifact)
    cards = [card_to_dict(c) for c in build_from_inputs(inputs)]
    text = json.dumps(cards, ensure_ascii=False, indent=2) + "\n"
    state = _state(args, cards, inputs, args.html)
    if args.out:
        from verdict.screen.checks_file import write_checks

        Path(args.out).write_text(text, encoding="utf-8")
        write_checks(args.out, state.report)  # the screen shows them with the cards alone
    if args.html:
        Path(args.html).write_text(state.page(), encoding="utf-8")
    if args.json:
        sys.stdout.write(text)
    else:
        counts: dict[str, int] = {}
        for c in cards:
            counts[c["verdict"]] = counts.get(c["verdict"], 0) + 1
        print(f"{len(cards)} cards: " + ", ".join(f"{k} {v}" for k, v in counts.items()))
    return 0


def _cmd_check(args: argparse.Namespace) -> int:
    from verdict.checks import CHECKS, run_checks
    from verdict.reference import Reference
    from verdict.tables import load_inputs

    cards = _read_cards(args.cards) or []
    artifacts = sorted({str(c.get("model_artifact")) for c in cards}) or ["-"]
    inputs = load_inputs(args.evaluation_run, args.task_spec, args.dataset_index, artifacts[0])
    report = run_checks(cards, Reference(inputs))
    if args.json:
        print(json.dumps(report.to_dict(), ensure_ascii=False, indent=2))
    else:
        for n, text in CHECKS.items():
            bad = [(t, r) for t, r in report.failures() if r.number == n]
            print(f"{'FAIL' if bad else 'pass'} {n:2d}. {text}")
            for task_id, r in bad:
                print(f"        {task_id}: {r.reason}")
        for finding in report.file_findings:
            print(f"FAIL file: {finding}")
        print(f"{len(cards)} cards, {len(report.failures())} failed check(s)")
    return 0 if report.passed else 1


def _cmd_grade(args: argparse.Namespace) -> int:
    from verdict.grade import format_result, grade, write_result

    result = grade(args.gold)
    path = write_result(result, args.out)
    print(json.dumps(result.to_dict(), ensure_ascii=False, indent=2) if args.json
          else format_result(result) + f"\nresult file: {path}")
    return 0 if result.agreed == result.total else 1


def _cmd_recapture(args: argparse.Namespace) -> int:
    from dataclasses import asdict

    from verdict.recapture import format_rows, read_plan, recapture_check

    rows = recapture_check(_read_cards(args.cards) or [], read_plan(args.plan))
    print(json.dumps([asdict(r) for r in rows], ensure_ascii=False, indent=2) if args.json
          else format_rows(rows))
    return 0 if all(r.status in ("match", "not named by a card") for r in rows) else 1


def _cmd_screen(args: argparse.Namespace) -> int:
    from verdict.tables import load_inputs

    cards = _read_cards(args.cards)
    inputs = None
    if cards and args.evaluation_run:
        args.artifact = str(cards[0].get("model_artifact"))
        _need_tables(args, "rcjudge verdict build --cards")
        inputs = load_inputs(args.evaluation_run, args.task_spec, args.dataset_index,
                             args.artifact)
    Path(args.html).write_text(_state(args, cards, inputs, args.html).page(),
                               encoding="utf-8")
    print(f"screen written: {args.html}")
    return 0


def screen_app(args: argparse.Namespace) -> Any:
    """The screen's FastAPI app for ``rcjudge serve``'s arguments (inputs read and checked)."""
    from verdict.engine import build_from_inputs
    from verdict.model import card_to_dict
    from verdict.screen.app import create_app
    from verdict.tables import load_inputs

    cards, inputs = _read_cards(args.cards), None
    if args.evaluation_run or args.artifact:
        _need_tables(args, "rcjudge serve")
        inputs = load_inputs(args.evaluation_run, args.task_spec, args.dataset_index,
                             args.artifact)
        if cards is None:
            cards = [card_to_dict(c) for c in build_from_inputs(inputs)]
    return create_app(_state(args, cards, inputs))
