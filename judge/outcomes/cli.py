"""CLI of the outcome contract: ``rcjudge datasets …`` and ``rcjudge sequence-outcomes …``.

Thin over :class:`judge.outcomes.store.OutcomeStore` on the local ledger database (the
local operator has every right; API keys get rights with ``datasets grant``). Bad input
exits 2 with one line naming the field and the rule; nothing is half-written.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from judge.ledgers.cli import db_arg
from judge.outcomes.errors import OutcomeError
from judge.outcomes.labels import LEAKAGE_KEYS
from rcjudge import strict_json
from rcjudge.aliases import renamed


def _print(obj: Any, as_json: bool, text: str) -> None:
    print(json.dumps(obj, indent=2, ensure_ascii=False) if as_json else text)


def _store(args: argparse.Namespace):
    from judge.ledgers.store import Ledger
    from judge.outcomes.store import OutcomeStore

    ledger = Ledger.open(args.db)
    return ledger, OutcomeStore(ledger.engine)


def recorded_length(uri: str) -> tuple[str, float | None]:
    """A verified bundle's hash and the length its one MCAP file recorded (None if none)."""
    from judge.bundle.decode import recorded_span_s
    from judge.bundle.intake import intake

    bundle = intake(uri)
    return bundle.bundle_hash, recorded_span_s(bundle)


def _cmd_create(args: argparse.Namespace) -> int:
    ledger, store = _store(args)
    with ledger:
        ds = store.create_dataset(args.dataset, public=args.public)
    _print({"dataset": ds.name, "public": ds.public}, args.json, f"created {ds.name}")
    return 0


def _cmd_list(args: argparse.Namespace) -> int:
    ledger, store = _store(args)
    with ledger:
        rows = store.list_datasets(args.key)
    _print(rows, args.json, "\n".join(f"{r['dataset']}  {r['sequences']} sequence(s)  "
                                      f"{'public' if r['public'] else 'private'}  {r['access']}"
                                      for r in rows) or "no datasets")
    return 0


def _cmd_add(args: argparse.Namespace) -> int:
    ledger, store = _store(args)
    with ledger:
        store.dataset(args.dataset)  # refused before any bundle is read
        found = [(uri, *recorded_length(uri)) for uri in args.bundles]  # all verified first
        out = [{"bundle": uri, "sequence_uid": store.add_sequence(args.dataset, h, uri, n),
                "length_s": n} for uri, h, n in found]
    _print(out, args.json, "\n".join(f"{o['sequence_uid']}  {o['bundle']}" for o in out))
    return 0


def _cmd_grant(args: argparse.Namespace) -> int:
    ledger, store = _store(args)
    with ledger:
        store.grant(args.dataset, args.key_id, args.access)
    _print({"dataset": args.dataset, "key_id": args.key_id, "access": args.access}, args.json,
           f"{args.key_id} may {args.access} {args.dataset}")
    return 0


def _json_file(path: str | None, flag: str) -> Any:
    if path is None:
        return None
    try:
        return strict_json.load_file(path)
    except OSError as exc:
        raise OutcomeError(f"{flag} {path}: cannot read: {exc.strerror}") from None
    except strict_json.StrictJsonError as exc:
        raise OutcomeError(f"{flag} {path}: {exc.described()}") from None


def label_doc(args: argparse.Namespace) -> dict[str, Any]:
    """The label document of ``sequence-outcomes set``'s flags (only the flags given)."""
    doc: dict[str, Any] = {"outcome": args.outcome}
    for name in ("progress", "quality", "speed", "mistake_type", "recovery_type",
                 "failure_stage", "autonomy_level", "model_version", "evaluation_membership",
                 "source", "confidence"):
        if getattr(args, name) is not None:
            doc[name] = getattr(args, name)
    for flag, key in (("--subtasks-file", "subtasks"), ("--hand-actions-file", "hand_actions")):
        value = _json_file(getattr(args, key.replace("-", "_") + "_file"), flag)
        if value is not None:
            doc[key] = value
    if args.leakage_group:
        groups = {}
        for item in args.leakage_group:
            key, sep, gid = item.partition("=")
            if not sep:
                raise OutcomeError(f"--leakage-group {item!r}: expected KEY=ID with KEY one of "
                                   f"{', '.join(LEAKAGE_KEYS)}")
            groups[key] = gid
        doc["leakage_groups"] = groups
    if args.source_metadata is not None:
        try:
            doc["source_metadata"] = strict_json.loads(args.source_metadata)
        except strict_json.StrictJsonError as exc:
            raise OutcomeError(f"--source-metadata: {exc.described()}") from None
    return doc


def _cmd_set(args: argparse.Namespace) -> int:
    doc = label_doc(args)
    ledger, store = _store(args)
    with ledger:
        label = store.put_label(f"{args.owner}/{args.slug}", args.sequence_uid, doc,
                                labeled_by=args.labeled_by)
    _print(label, args.json, f"{label['sequence_uid']}: version {label['version']} "
           f"{label['outcome']}")
    return 0


def _cmd_get(args: argparse.Namespace) -> int:
    ledger, store = _store(args)
    with ledger:
        label = store.get_label(f"{args.owner}/{args.slug}", args.sequence_uid)
    _print(label, True, "")
    return 0


def _cmd_history(args: argparse.Namespace) -> int:
    ledger, store = _store(args)
    with ledger:
        versions = store.history(f"{args.owner}/{args.slug}", args.sequence_uid)
    _print(versions, args.json, "\n".join(
        f"v{v['version']}{' (current)' if v['is_current'] else ''}  {v['outcome']}  "
        f"{v['source']}  {v['labeled_by'] or ''}  {v['created_at']}" for v in versions))
    return 0


def _cmd_list_labels(args: argparse.Namespace) -> int:
    ledger, store = _store(args)
    with ledger:
        page = store.list_labels(f"{args.owner}/{args.slug}", filters={
            "outcome": args.outcome, "evaluation_membership": args.evaluation_membership,
            "source": args.source, "autonomy_level": args.autonomy_level},
            model_version=args.model_version, limit=args.limit, cursor=args.cursor)
    _print(page, args.json, "\n".join(
        f"{r['sequence_uid']}  v{r['version']}  {r['outcome']}  {r['source']}"
        for r in page["results"]) + (f"\nnext: --cursor {page['next']}" if page["next"] else ""))
    return 0


def _cmd_split(args: argparse.Namespace) -> int:
    from judge.outcomes.release import split

    ledger, store = _store(args)
    with ledger:
        out = split(store, args.dataset, [k for k in args.by.split(",") if k], args.held_out,
                    args.seed)
    _print(out, args.json, f"{out['dataset']}: {out['groups']} group(s) by {','.join(out['by'])}"
           f": {out['held_out_eval']} held_out_eval, {out['train']} train "
           f"({out['versions_written']} new version(s), {out['unlabelled_skipped']} "
           "unlabelled skipped)")
    return 0


def _cmd_release(args: argparse.Namespace) -> int:
    from judge.outcomes.release import release

    ledger, store = _store(args)
    with ledger:
        rows = release(store, args.dataset, args.slice)
    text = "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows)
    if args.out:
        Path(args.out).write_text(text, encoding="utf-8")
        print(f"{args.out}: {len(rows)} sequence(s) of the {args.slice} slice")
    else:
        print(text, end="")
    return 0


def _cmd_lerobot_export(args: argparse.Namespace) -> int:
    from judge.outcomes.release import export_sidecar

    if not args.include_outcomes:
        raise OutcomeError("rcjudge export lerobot writes the outcome sidecar only: pass "
                           "--include-outcomes")
    ledger, store = _store(args)
    with ledger:
        out = export_sidecar(store, args.dataset, args.dataset_dir, args.repo_id)
    _print(out, args.json, f"{out['path']}: {out['episodes']} episode(s), {out['labelled']} "
           f"labelled, {out['without_sequence']} not in {args.dataset}")
    return 0


def _campaign(path: str | None):
    from judge.config import load_model, load_yaml
    from judge.outcomes.acceptance import Campaign

    return Campaign() if path is None else load_model(Campaign, load_yaml(path), path)


def _targets(store: Any, ledger: Any, args: argparse.Namespace, campaign: Any):
    """Store ``--campaign``'s targets (when given), evaluate the stored ones, alert the new
    crossings by webhook; the report and the new crossings."""
    from judge.api.outcome_hooks import notify
    from judge.outcomes.targets import evaluate, set_targets

    if args.campaign is not None:
        set_targets(store, args.dataset, campaign.targets, Path(args.campaign).name)
    return evaluate(store, args.dataset, notify(ledger.engine))


def _alert_lines(rep: dict[str, Any]) -> list[str]:
    return [f"ALERT {a['target']}: {a['value']} (limit {a['limit']})" for a in rep["alerts"]]


def _cmd_acceptance_check(args: argparse.Namespace) -> int:
    from judge.outcomes.validity import check_dataset

    campaign = _campaign(args.campaign)
    ledger, store = _store(args)
    with ledger:
        rows = check_dataset(store, args.dataset, campaign)
        rep, _ = _targets(store, ledger, args, campaign)
    _print(rows, args.json, "\n".join([
        f"{r['sequence_uid']}  {r['verdict']:<10}  " + "  ".join(
            f"{k}={v['status']}" + (f"({','.join(v['reasons'])})" if v["reasons"] else "")
            for k, v in r["criteria"].items()) for r in rows] + _alert_lines(rep))
        or "no sequences")
    return 0


def _cmd_acceptance_review(args: argparse.Namespace) -> int:
    from judge.outcomes.validity import review

    ledger, store = _store(args)
    with ledger:
        row = review(store, args.dataset, args.sequence_uid, args.verdict, args.by, args.note)
    _print(row, args.json, f"{row['sequence_uid']}: {row['machine_verdict']} -> "
           f"{row['verdict']} by {row['review']['by']} at {row['review']['at']}")
    return 0


def _cmd_acceptance_report(args: argparse.Namespace) -> int:
    campaign = _campaign(args.campaign)
    ledger, store = _store(args)
    with ledger:
        out, new = _targets(store, ledger, args, campaign)
    out["new_alerts"] = [e["target"] for e in new]
    lines = [f"{out['dataset']}: {out['checked']} checked, acceptance {out['acceptance_rate']}, "
             f"reject {out['reject_rate']}, issues {out['issue_rate']}"]
    _print(out, args.json, "\n".join(lines + _alert_lines(out)))
    return 0


def _cmd_mcp(args: argparse.Namespace) -> int:
    from judge.outcomes.mcp_tools import build_server

    ledger, store = _store(args)
    with ledger:
        build_server(store).run("stdio")
    return 0


def register(sub: argparse._SubParsersAction) -> None:
    """Add ``datasets`` and ``sequence-outcomes`` to the ``rcjudge`` parser."""
    ds = sub.add_parser("datasets", help="datasets of sequences (one run = one sequence)"
                        ).add_subparsers(dest="datasets_command", required=True,
                                         metavar="COMMAND")

    def common(p: argparse.ArgumentParser) -> argparse.ArgumentParser:
        db_arg(p)
        p.add_argument("--json", action="store_true")
        return p

    p = common(ds.add_parser("create", help="create a dataset OWNER/SLUG"))
    p.add_argument("dataset", metavar="OWNER/SLUG")
    p.add_argument("--public", action="store_true", help="readable by every API key")
    p.set_defaults(func=_cmd_create)
    p = common(ds.add_parser("list", help="datasets and their sequence counts"))
    p.add_argument("--key", metavar="KEY_ID", help="only those this API key may read")
    p.set_defaults(func=_cmd_list)
    p = common(ds.add_parser("add", help="put bundles into a dataset (verified first)"))
    p.add_argument("dataset", metavar="OWNER/SLUG")
    p.add_argument("bundles", nargs="+", metavar="BUNDLE")
    p.set_defaults(func=_cmd_add)
    p = common(ds.add_parser("grant", help="give an API key read or edit on a dataset"))
    p.add_argument("dataset", metavar="OWNER/SLUG")
    p.add_argument("key_id", metavar="KEY_ID")
    p.add_argument("access", choices=("read", "edit"))
    p.set_defaults(func=_cmd_grant)

    so = sub.add_parser("sequence-outcomes", help="outcome labels of sequences (versioned)"
                        ).add_subparsers(dest="so_command", required=True, metavar="COMMAND")

    def target(p: argparse.ArgumentParser, uid: bool = True) -> argparse.ArgumentParser:
        p.add_argument("owner")
        p.add_argument("slug")
        if uid:
            p.add_argument("sequence_uid")
        return common(p)

    p = target(so.add_parser("set", help="write a new current label (the whole label)"))
    p.add_argument("--outcome", required=True)
    p.add_argument("--progress", type=float)
    p.add_argument("--quality", type=int)
    p.add_argument("--speed", type=int)
    p.add_argument("--subtasks-file", metavar="FILE", help="JSON list of subtasks")
    p.add_argument("--hand-actions-file", metavar="FILE", help='JSON {"left": [...], '
                   '"right": [...]}')
    for name in ("mistake-type", "recovery-type", "failure-stage", "autonomy-level",
                 "model-version", "evaluation-membership", "source"):
        p.add_argument(f"--{name}")
    p.add_argument("--confidence", type=float, help="only with --source model")
    p.add_argument("--leakage-group", action="append", metavar="KEY=ID",
                   help=f"repeatable; KEY one of {', '.join(LEAKAGE_KEYS)}")
    p.add_argument("--source-metadata", metavar="JSON", help="flat JSON object")
    p.add_argument("--labeled-by", metavar="WHO", help="who writes it (recorded)")
    p.set_defaults(func=_cmd_set)
    p = target(so.add_parser("get", help="the current label (JSON)"))
    p.set_defaults(func=_cmd_get)
    p = target(so.add_parser("history", help="every version, newest first"))
    p.set_defaults(func=_cmd_history)
    p = common(sub.add_parser("split", help="train / held_out_eval by leakage group"))
    p.add_argument("--dataset", required=True, metavar="OWNER/SLUG")
    p.add_argument("--by", required=True, metavar="KEY[,KEY…]",
                   help=f"leakage keys: {', '.join(LEAKAGE_KEYS)}")
    p.add_argument("--held-out", type=float, required=True, metavar="SHARE")
    p.add_argument("--seed", type=int, default=0)
    p.set_defaults(func=_cmd_split)
    p = common(sub.add_parser("release", help="one slice of a dataset as JSONL labels"))
    p.add_argument("--dataset", required=True, metavar="OWNER/SLUG")
    p.add_argument("--slice", required=True, choices=("train", "held_out_eval", "recovery"))
    p.add_argument("--out", metavar="FILE")
    p.set_defaults(func=_cmd_release)
    lr = sub.add_parser("lerobot").add_subparsers(dest="lerobot_command", required=True)
    p = _lerobot_export_args(lr.add_parser("export"))  # hidden: the old spelling
    p.set_defaults(func=renamed("lerobot export", "export lerobot", _cmd_lerobot_export))

    p = sub.add_parser("mcp", help="read-only MCP tools over outcome labels, on stdio")
    db_arg(p)
    p.set_defaults(func=_cmd_mcp)

    acc = sub.add_parser("acceptance", help="technical validity of captures (apart from "
                         "labels)").add_subparsers(dest="acc_command", required=True,
                                                  metavar="COMMAND")
    p = common(acc.add_parser("check", help="machine verdict of every sequence's capture"))
    p.add_argument("dataset", metavar="OWNER/SLUG")
    p.add_argument("--campaign", metavar="FILE.yaml", help="what the campaign asks "
                   "(docs/outcomes.md); its targets become the dataset's")
    p.set_defaults(func=_cmd_acceptance_check)
    p = common(acc.add_parser("review", help="a reviewer confirms or changes a verdict"))
    p.add_argument("dataset", metavar="OWNER/SLUG")
    p.add_argument("sequence_uid")
    p.add_argument("--verdict", required=True, choices=("accept", "quarantine", "reject"))
    p.add_argument("--by", required=True, metavar="WHO")
    p.add_argument("--note")
    p.set_defaults(func=_cmd_acceptance_review)
    p = common(acc.add_parser("report", help="rates and quality-target alerts"))
    p.add_argument("dataset", metavar="OWNER/SLUG")
    p.add_argument("--campaign", metavar="FILE.yaml", help="its targets become the "
                   "dataset's (default: the stored ones)")
    p.set_defaults(func=_cmd_acceptance_report)

    p = target(so.add_parser("list", help="current labels of a dataset, paged"), uid=False)
    for name in ("outcome", "evaluation-membership", "source", "autonomy-level"):
        p.add_argument(f"--{name}", metavar="V[,V…]")
    p.add_argument("--model-version")
    p.add_argument("--limit", type=int, default=100)
    p.add_argument("--cursor")
    p.set_defaults(func=_cmd_list_labels)


def _lerobot_export_args(p: argparse.ArgumentParser) -> argparse.ArgumentParser:
    db_arg(p)
    p.add_argument("--json", action="store_true")
    p.add_argument("dataset_dir", metavar="DATASET_DIR")
    p.add_argument("--include-outcomes", action="store_true")
    p.add_argument("--dataset", required=True, metavar="OWNER/SLUG",
                   help="the dataset whose labels to write")
    p.add_argument("--repo-id", help="the repo id its bundles were imported under (default: "
                   "info.json's repo_id, else the folder name)")
    return p


def register_lerobot_export(export: argparse._SubParsersAction) -> None:
    """``rcjudge export lerobot`` (under ``export``, :mod:`judge.ledgers.cli`)."""
    p = _lerobot_export_args(export.add_parser(
        "lerobot", help="meta/avala_sequence_outcomes.jsonl beside a LeRobot v3.0/v2.1 "
        "dataset"))
    p.set_defaults(func=_cmd_lerobot_export)
