"""``rcjudge api serve``, ``rcjudge keys create|list|revoke``, ``rcjudge attestations import``.

Thin wrappers over :class:`judge.api.service.JudgeService`; ``--db`` is the live
database (the test-mode one sits beside it, see docs/api.md).
"""

from __future__ import annotations

import argparse
import json
import os
from datetime import datetime
from typing import Any

from judge.api.errors import ApiError
from judge.errors import JudgeError
from judge.ledgers.cli import db_arg
from rcjudge import strict_json
from rcjudge.errors import InputError


class ApiCliError(JudgeError, ValueError):
    """A refused API admin command (bad rights, unknown key): exit 2."""


class AttestationFileError(ApiCliError, InputError):
    """An attestation file with errors; nothing of it was imported (exit 1)."""


def _service(args: argparse.Namespace) -> Any:
    from judge.api.service import JudgeService

    return JudgeService(args.db, workers=1, bundle_roots=getattr(args, "bundle_root", None) or ())


def bundle_root_arg(p: argparse.ArgumentParser) -> None:
    """``--bundle-root URI`` (repeatable): where the server may read bundles from."""
    env = [r for r in os.environ.get("RCJUDGE_BUNDLE_ROOTS", "").split(",") if r.strip()]
    p.add_argument("--bundle-root", action="append", metavar="URI", default=env,
                   help="a folder or object-store prefix (s3://bucket/prefix, gs://, az://) "
                   "the API reads bundles from; repeatable, added to $RCJUDGE_BUNDLE_ROOTS "
                   "(comma-separated); none: every judgment is refused")


def _cmd_tier_b(args: argparse.Namespace) -> int:
    service = _service(args)
    try:
        added = service.designate_tier_b(args.task_ids, args.mode, args.key)
    except ApiError as exc:
        raise ApiCliError(f"--key: {exc.detail}") from None
    finally:
        service.close()
    keys = list(dict.fromkeys(args.key))
    out = {"designated": added, "tasks": len(set(args.task_ids)), "mode": args.mode,
           "keys": keys}
    print(json.dumps(out) if args.json else
          f"{added} task(s) newly tier B ({args.mode}); ids are kept only as keyed hashes; "
          + (f"judged by {', '.join(keys)} (and keys named before)" if keys else
             "no key added (only keys named for a task may judge it)"))
    return 0


def _cmd_keys_create(args: argparse.Namespace) -> int:
    from judge.api.auth import RIGHTS

    rights = sorted(RIGHTS) if args.rights == "all" else [
        r.strip() for r in args.rights.split(",") if r.strip()]
    service = _service(args)
    try:
        key, rec = service.create_key(args.name, args.mode, rights, args.dataset)
    except ApiError as exc:
        flag = "--dataset" if exc.extra.get("param") == "dataset" else "--rights"
        raise ApiCliError(f"{flag}: {exc.detail}") from None
    finally:
        service.close()
    out = {"key": key, "key_id": rec.key_id, "mode": rec.mode,
           "rights_granted": list(rec.rights), "dataset": rec.dataset}
    if args.json:
        print(json.dumps(out))
    else:
        print(f"{key}\n(shown once: only its hash is stored) id {rec.key_id}, {rec.mode}, "
              f"rights: {', '.join(rec.rights)}"
              + (f", judgments labelled into {rec.dataset}" if rec.dataset else ""))
    return 0


def _cmd_keys_list(args: argparse.Namespace) -> int:
    service = _service(args)
    try:
        rows = service.list_keys()
    finally:
        service.close()
    if args.json:
        print(json.dumps(rows))
    else:
        for r in rows:
            state = f"revoked {r['revoked_at']}" if r["revoked_at"] else "active"
            print(f"{r['key_id']}  {r['mode']:4}  {state:7}  {r['name']}  "
                  f"{','.join(r['rights_granted'])}"
                  + (f"  dataset {r['dataset']}" if r["dataset"] else ""))
    return 0


def _cmd_keys_revoke(args: argparse.Namespace) -> int:
    service = _service(args)
    try:
        changed = service.revoke_key(args.key_id)
    except ApiError as exc:
        raise ApiCliError(exc.detail) from None
    finally:
        service.close()
    print(json.dumps({"key_id": args.key_id, "revoked": True, "changed": changed})
          if args.json else f"{args.key_id}: revoked" + ("" if changed else " (already)"))
    return 0


_ATTESTATION_FIELDS = ("attestation_id", "subject", "statement", "issued_by", "issued_at")


def read_attestations(path: str) -> list[dict[str, Any]]:
    """Rows of a JSON-lines attestation file; every bad line named, nothing half-read."""
    try:
        with open(path, encoding="utf-8") as f:
            lines = f.read().splitlines()
    except (OSError, UnicodeDecodeError) as exc:
        raise AttestationFileError(f"{path}: cannot read: {exc}") from None
    rows, errors, seen = [], [], set()
    for i, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            doc = strict_json.loads(line)
        except strict_json.StrictJsonError as exc:
            errors.append(f"line {i}: {exc.described()}")
            continue
        if not isinstance(doc, dict):
            errors.append(f"line {i}: expected a JSON object")
            continue
        missing = [k for k in _ATTESTATION_FIELDS
                   if not isinstance(doc.get(k), str) or not doc[k].strip()]
        extra = sorted(set(doc) - set(_ATTESTATION_FIELDS))
        if missing or extra:
            errors.append(f"line {i}: " + "; ".join(
                ([f"missing {', '.join(missing)}"] if missing else [])
                + ([f"unknown {', '.join(extra)}"] if extra else [])))
            continue
        try:
            at = datetime.fromisoformat(doc["issued_at"])
        except ValueError:
            errors.append(f"line {i}: issued_at {doc['issued_at']!r}: not ISO 8601")
            continue
        if doc["attestation_id"] in seen:
            errors.append(f"line {i}: attestation_id {doc['attestation_id']!r} repeated")
            continue
        seen.add(doc["attestation_id"])
        rows.append({**doc, "issued_at": at})
    if errors:
        raise AttestationFileError(f"{path}: {len(errors)} error(s), nothing imported: "
                          + "; ".join(errors))
    return rows


def _cmd_attestations_import(args: argparse.Namespace) -> int:
    import sqlalchemy as sa

    from judge.api import tables as T

    rows = read_attestations(args.file)
    service = _service(args)
    try:
        a = T.attestations
        with service.modes["live"].write() as conn, conn.begin():
            have = {r[0] for r in conn.execute(sa.select(a.c.attestation_id)).all()}
            new = [r for r in rows if r["attestation_id"] not in have]
            if new:
                conn.execute(sa.insert(a), new)
    finally:
        service.close()
    out = {"file": args.file, "read": len(rows), "imported": len(new)}
    print(json.dumps(out) if args.json else
          f"{args.file}: {len(new)} imported, {len(rows) - len(new)} already there")
    return 0


def db(p: argparse.ArgumentParser, json_flag: bool = True) -> None:
    """``--db`` (the live database: :func:`judge.ledgers.cli.db_arg`) and ``--json``."""
    db_arg(p)
    if json_flag:
        p.add_argument("--json", action="store_true", help="print JSON")


def register_api(sub: argparse._SubParsersAction) -> argparse._SubParsersAction:
    """serve: ``api tier-b``; returns ``api``'s subcommands, where :mod:`rcjudge.serve` adds
    the old ``api serve`` (now ``serve --only api``)."""
    api = sub.add_parser("api", help="the Judge API's operator commands (serving it: "
                         "rcjudge serve)").add_subparsers(
        dest="api_command", required=True, metavar="ACTION")
    p = api.add_parser("tier-b", help="designate tasks tier B (the operator's, never a "
                       "caller's: their cells need K tasks of other key owners)")
    db(p)
    p.add_argument("task_ids", nargs="+", metavar="TASK_ID")
    p.add_argument("--mode", choices=["live", "test"], default="live")
    p.add_argument("--key", action="append", default=[], metavar="KEY_ID",
                   help="a key that may judge these tasks (repeatable; added to those named "
                   "before); to every other key they answer as tasks the catalog lacks")
    p.set_defaults(func=_cmd_tier_b)
    return api


def register_keys(sub: argparse._SubParsersAction) -> None:
    """serve: ``keys create|list|revoke``."""
    keys = sub.add_parser("keys", help="API keys: create, list, revoke").add_subparsers(
        dest="keys_command", required=True, metavar="ACTION")
    p = keys.add_parser("create", help="create a key (printed once)")
    db(p)
    p.add_argument("--name", required=True)
    p.add_argument("--mode", choices=["live", "test"], default="live")
    p.add_argument("--rights", default="all",
                   help="comma-separated rights, or 'all' (docs/api.md lists them)")
    p.add_argument("--dataset", metavar="OWNER/SLUG", help="every judgment through the key "
                   "lands in this dataset (of the key's mode database) with its model label; "
                   "needs datasets:write (docs/outcomes.md)")
    p.set_defaults(func=_cmd_keys_create)
    p = keys.add_parser("list", help="list keys (never the keys themselves)")
    db(p)
    p.set_defaults(func=_cmd_keys_list)
    p = keys.add_parser("revoke", help="revoke a key by its id")
    db(p)
    p.add_argument("key_id")
    p.set_defaults(func=_cmd_keys_revoke)



def register_attestations(sub: argparse._SubParsersAction) -> None:
    """datasets and outcomes: ``attestations import``."""
    att = sub.add_parser("attestations", help="attestations (the API only reads them)")
    att_sub = att.add_subparsers(dest="att_command", required=True, metavar="ACTION")
    p = att_sub.add_parser("import", help="import a JSON-lines file of attestations")
    db(p)
    p.add_argument("file")
    p.set_defaults(func=_cmd_attestations_import)
