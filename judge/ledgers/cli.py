"""CLI of the ledgers: ``rcjudge db upgrade`` / ``check``, ``labels import``, ``export``.

Thin wrappers over :mod:`judge.ledgers.store`, :mod:`~judge.ledgers.labels` and
:mod:`~judge.ledgers.export`. ``--db URL|PATH`` (:func:`db_arg`, every command that opens
a ledger) defaults to ``$RCJUDGE_DB``, else the embedded SQLite file
``<$RCJUDGE_DATA or $RCJUDGE_HOME>/rcjudge.db``. A refused label file exits 1 (one summary
line, then one line per bad row); a usage or setup error 2.
"""

from __future__ import annotations

import argparse
import json
from dataclasses import asdict
from typing import Any

DB_HELP = ("the ledger: a database URL or an SQLite file path (default $RCJUDGE_DB, else "
           "<$RCJUDGE_DATA or $RCJUDGE_HOME>/rcjudge.db); PostgreSQL: "
           "postgresql+psycopg://HOST:PORT/DB")


def db_arg(p: argparse.ArgumentParser) -> None:
    """``--db URL|PATH``, the same flag and help in every command that opens a ledger;
    :func:`judge.ledgers.store.resolve_url` turns it into the URL."""
    p.add_argument("--db", metavar="URL|PATH", default=None, help=DB_HELP)


def _print(obj: Any, as_json: bool, text: str) -> None:
    print(json.dumps(obj, indent=2, ensure_ascii=False) if as_json else text)


def _cmd_db_upgrade(args: argparse.Namespace) -> int:
    from judge.ledgers.store import make_engine, upgrade

    engine = make_engine(args.db)
    try:
        rev = upgrade(engine, args.revision)
    finally:
        engine.dispose()
    url = engine.url.render_as_string(hide_password=True)
    _print({"db": url, "revision": rev}, args.json, f"{url}: at revision {rev}")
    return 0


def _cmd_db_check(args: argparse.Namespace) -> int:
    """Report stored rows a read cannot encode (exit 1 when there is one)."""
    from judge.ledgers.store import Ledger
    from judge.outcomes.store import OutcomeStore

    with Ledger.open(args.db, create=False) as ledger:
        bad = OutcomeStore(ledger.engine).unencodable_rows()
        url = ledger.engine.url.render_as_string(hide_password=True)
    lines = [f"{b['table']} {b['dataset']} {b['sequence_uid']} v{b['version']}: unencodable "
             f"text in {', '.join(b['fields'])} (served as U+FFFD)" for b in bad]
    _print({"db": url, "unencodable": bad}, args.json,
           "\n".join(lines) or f"{url}: every stored label encodes")
    return 1 if bad else 0


def _cmd_labels_import(args: argparse.Namespace) -> int:
    from judge.ledgers.errors import LabelImportError
    from judge.ledgers.labels import import_labels
    from judge.ledgers.store import Ledger

    reviews = None
    if args.random_sample and args.picks:
        from judge.ledgers.errors import LedgerError

        raise LedgerError("--random-sample: not with --picks (a queue file's picks carry their "
                          "own draw)")
    if args.picks:
        from judge.learn.select import picked_reviews

        reviews = picked_reviews(args.picks)  # a bad queue file: refused before the ledger opens
    with Ledger.open(args.db) as ledger:
        try:
            s = import_labels(ledger, args.file, reviews, random_sample=args.random_sample)
        except LabelImportError as exc:
            if not args.json:
                raise
            _print({"file": exc.source, "imported": 0,
                    "errors": [asdict(e) for e in exc.errors]}, True, "")
            return 1  # an input refused (rcjudge --help)
    out = asdict(s)
    if s.round_id is None:  # the three fields of --random-sample
        del out["round_id"], out["frame"], out["pi"]
    _print(out, args.json,
           f"{s.file}: {s.rows} label(s) for {s.runs} run(s): {s.imported} imported, "
           f"{s.already_present} already present"
           + (f"; {s.from_queue} picked by the queue of {args.picks}" if args.picks else "")
           + (f"; recorded as a random sample of {s.frame} run(s) (sampling round "
              f"{s.round_id}, pi {s.pi:.4f} each)" if s.round_id is not None else ""))
    return 0


def _cmd_export_evaluation_run(args: argparse.Namespace) -> int:
    from judge.ensemble.version import judge_name
    from judge.ledgers.export import export_evaluation_run
    from judge.ledgers.store import Ledger

    with Ledger.open(args.db, create=False) as ledger:
        s = export_evaluation_run(ledger, judge_name(args.judge), args.out)
    _print(asdict(s), args.json,
           f"{s.path}: {s.rows} row(s) of {s.judge_version} "
           f"({s.operator_rows} with an operator label)")
    return 0


def register_db(sub: argparse._SubParsersAction) -> None:
    """setup: ``db upgrade``, ``db check``."""
    db = sub.add_parser("db", help="ledger database tools").add_subparsers(
        dest="db_command", required=True, metavar="COMMAND")
    p = db.add_parser("upgrade", help="migrate the ledger database (default: to head)")
    db_arg(p)
    p.add_argument("--revision", default="head", help="target revision (default head)")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=_cmd_db_upgrade)
    p = db.add_parser("check", help="find stored rows that a read cannot encode (lone "
                      "surrogates, NUL); exit 1 when there is one")
    db_arg(p)
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=_cmd_db_check)



def register_labels(sub: argparse._SubParsersAction) -> None:
    """improve the judge: ``labels import``."""
    labels = sub.add_parser("labels", help="operator labels").add_subparsers(
        dest="labels_command", required=True, metavar="COMMAND")
    p = labels.add_parser("import", help="import operator labels from CSV or JSONL "
                          "(all rows or none)")
    p.add_argument("file", metavar="FILE", help=".csv or .jsonl with run_id, attempt, success, "
                   "failure_class, labeled_by, labeled_at")
    p.add_argument("--picks", metavar="FILE", help="the queue file these runs were labelled "
                   "from (`rcjudge review next --json`): each picked run's label is stored "
                   "with the pick (strategy, rank, score, reason), as the review page stores it")
    p.add_argument("--random-sample", action="store_true", help="assert the file's runs are "
                   "a uniform random sample of the runs that had no label: recorded as a "
                   "sampling round (pi = runs / those runs), so rates may be rectified with "
                   "them (docs/review.md)")
    db_arg(p)
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=_cmd_labels_import)



def register_export(sub: argparse._SubParsersAction) -> argparse._SubParsersAction:
    """report: ``export evaluation-run``; returns ``export``'s subcommands, where
    :func:`judge.outcomes.cli.register_lerobot_export` adds ``export lerobot``."""
    export = sub.add_parser("export", help="export tables from the ledgers").add_subparsers(
        dest="export_command", required=True, metavar="TABLE")
    p = export.add_parser("evaluation-run", help="Parquet evaluation_run of one judge version "
                          "(OUT/judge_version=V/part-0.parquet)")
    p.add_argument("--judge", required=True, metavar="VERSION", help="judge version to export")
    p.add_argument("--out", required=True, metavar="DIR", help="dataset folder")
    db_arg(p)
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=_cmd_export_evaluation_run)
    return export  # rcjudge.cli adds export lerobot (judge.outcomes.cli) to it
