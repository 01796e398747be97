"""Subcommands of the judging pipeline (``rcjudge inspect|bundle|judge|batch|rejudge|…``).

Each one is a thin wrapper over a library function; :mod:`rcjudge.cli` builds the
parser and turns errors into one line.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from judge.errors import JudgeError
from judge.ledgers.cli import db_arg
from judge.preflight.cli import gpu_memory_gib
from rcjudge.errors import RcjudgeError, one_line

#: ``models.tiny.PROFILES``' names, spelt out so parsing the arguments imports no model code
#: (numpy); ``tests/unit/test_imports.py`` holds them equal.
TINY_PROFILES = ("plumbing", "vision", "vision-224")
#: ``judge.learn.select.STRATEGIES``, spelt out for the same reason (tests/unit/test_imports.py).
REVIEW_STRATEGIES = ("committee", "uncertainty", "random", "coverage")
#: ``judge.ledgers.rounds.SAMPLING_STRATEGIES``, likewise: the queue's sampling rounds.
SAMPLING_STRATEGIES = ("sample", "sample-uniform")


def _emit(obj: Any, as_json: bool, text: Callable[[Any], str]) -> None:
    print(json.dumps(obj, indent=2, ensure_ascii=False) if as_json else text(obj))


def _cmd_inspect(args: argparse.Namespace) -> int:
    from judge.bundle.inspect import format_report, inspect_bundle

    report = inspect_bundle(args.bundle, args.judge)
    _emit(report, args.json, format_report)
    return 0


def _usage(make: Callable[[], Any]) -> Any:
    """``make()``, its :class:`~judge.errors.BundleError` (a bad flag value) a usage error."""
    from judge.errors import BundleError

    try:
        return make()
    except BundleError as exc:  # EncodeOptions names the flag: exit 2, not 1
        raise JudgeError(str(exc)) from None


def _cmd_bundle_create(args: argparse.Namespace) -> int:
    from judge.bundle.create import create_bundle
    from judge.bundle.transcode import EncodeOptions

    videos = {}
    for item in args.video:
        name, sep, path = item.partition("=")
        if not sep or not name or not path:
            raise JudgeError(f"--video {item!r}: expected NAME=PATH")
        videos[name] = path
    encode = _usage(lambda: EncodeOptions(keyframe_s=args.keyframe_s, crf=args.crf,
                                          preset=args.preset, force=args.reencode))
    from judge.bundle.create import REQUIRED_CAMERAS

    if len(videos) != REQUIRED_CAMERAS:  # flags, not inputs: exit 2 (rcjudge --help)
        raise JudgeError(f"--video: expected {REQUIRED_CAMERAS} cameras, got {len(videos)} "
                         f"({', '.join(sorted(videos)) or 'none'})")
    if Path(args.out).exists():
        raise JudgeError(f"--out {args.out}: already exists; bundles are never overwritten")
    created = create_bundle(videos=videos, signals=args.signals, attribution=args.attribution,
                            out=args.out, encode=encode, progress=True,
                            gripper=args.gripper)

    def text(d: dict) -> str:
        lines = [f"bundle {args.out}: hash {d['bundle_hash']}"]
        for name, c in d["cameras"].items():
            how = "copied" if c["mode"] == "copy" else f"re-encoded ({c['reason']})"
            lines.append(f"  {name}: {c['codec']}, {c['frames']} frames, {how}")
        return "\n".join(lines)

    for w in created.warnings:
        print(f"rcjudge: warning: {args.out}: {w}", file=sys.stderr)
    _emit(created.as_dict(), args.json, text)
    return 0


def _cmd_explain(args: argparse.Namespace) -> int:
    from judge.explain import explain, explain_runs, read_run_ids
    from judge.explain_evidence import ExplainError

    if args.out_dir:
        if args.out or args.mcap or args.rrd:
            raise ExplainError("rcjudge explain: --out-dir writes a page per run; not with "
                               "--out, --mcap or --rrd")
        ids = list(args.target) + (read_run_ids(args.runs) if args.runs else [])
        rows = explain_runs(list(dict.fromkeys(ids)), args.judge, args.out_dir, args.db)
        _emit(rows, args.json, lambda d: "\n".join(
            f"{r['out']}: run {r['run_id']} by {r['judge_version']}" for r in d)
            + f"\n{len(d)} page(s) in {args.out_dir}")
        return 0
    if len(args.target) != 1 or not (args.out or args.rrd) or args.runs:
        raise ExplainError("rcjudge explain: give one BUNDLE|RUN_ID and --out FILE.html "
                           "(and/or --rrd FILE.rrd), or RUN_IDs and/or --runs FILE with "
                           "--out-dir DIR")
    r = explain(args.target[0], args.judge, args.out, args.db, args.mcap, args.rrd)
    _emit(r, args.json, lambda d: f"{', '.join(x for x in (d['out'], d['rrd']) if x)}: run "
          f"{d['run_id']} by {d['judge_version']} "
          f"({d['judgment']}), {d['sampled']} frames a camera, {d['shown']} shown, "
          f"{len(d['contacts'])} contact event(s)")
    return 0


def _cmd_import_lerobot(args: argparse.Namespace) -> int:
    from judge.bundle.lerobot import import_lerobot
    from judge.bundle.transcode import EncodeOptions

    encode = _usage(lambda: EncodeOptions(keyframe_s=args.keyframe_s, crf=args.crf))
    imported = import_lerobot(args.dataset, args.out, args.mapping, args.episodes,
                              args.pad_cameras, encode, progress=True)
    for f in imported.failed:  # one line each: episode, file, cause
        print(f"rcjudge: error: episode {f.episode_index}: {one_line(f.message)}",
              file=sys.stderr)
    if imported.bundles or args.json:
        _emit(imported.bundles, args.json, lambda rs: "\n".join(
            f"episode {r['episode_index']}: {r['bundle']} ({r['task_id']})" for r in rs))
    return 1 if imported.failed else 0


def _cmd_import_rosbag(args: argparse.Namespace) -> int:
    from judge.bundle.rosbag import import_bag, list_bag
    from judge.bundle.transcode import EncodeOptions

    if args.list:
        reports = [list_bag(b) for b in args.bags]
        _emit(reports if len(reports) > 1 else reports[0], args.json, lambda r: "\n\n".join(
            _format_bag_list(x) for x in (r if isinstance(r, list) else [r])))
        return 0
    if not args.mapping or not args.out:
        raise JudgeError("rcjudge import rosbag: give --mapping FILE and --out DIR (or --list)")
    encode = _usage(lambda: EncodeOptions(keyframe_s=args.keyframe_s, crf=args.crf))
    from judge.bundle.rosbag import check_mapping
    from judge.bundle.rosbag.bag import recordings

    try:  # the mapping is configuration: a bad one exits 2, a bad bag 1 (rcjudge --help)
        check_mapping(args.mapping)
    except JudgeError as exc:
        raise JudgeError(str(exc)) from None

    rows: list[dict] = []

    def emit() -> None:
        _emit(rows, args.json, lambda rs: "\n".join(
            f"{r['bag']} episode {r['episode']}: {r['bundle']} ("
            + ", ".join(f"{n} {c['frames']} frames {c['mode']}" for n, c in
                        r["cameras"].items()) + ")" for r in rs))

    for parts in recordings(args.bags):  # a split recording's parts: one bag
        try:
            done = import_bag(parts if len(parts) > 1 else parts[0], args.mapping, args.out,
                              args.episodes, progress=True, encode=encode)
        except RcjudgeError:
            if rows:  # the bags before this one are written: say which
                emit()
            raise
        for r in done:
            for line in r["notes"]:
                print(f"rcjudge: note: {r['bundle']}: {line}", file=sys.stderr)
        rows += done
    emit()
    return 0


def _cmd_tasks_add(args: argparse.Namespace) -> int:
    from judge.tasks import add_task, home_file

    task, new = add_task(args.task_id, args.instruction)
    _emit({**task.as_dict(), "added": new, "file": str(home_file())}, args.json,
          lambda d: f"{d['id']}: {'added to' if d['added'] else 'already in'} {d['file']}")
    return 0


def _cmd_tasks_list(args: argparse.Namespace) -> int:
    from judge.tasks import catalog

    rows = [t.as_dict() for t in catalog().values()]
    width = max((len(r["id"]) for r in rows), default=0)
    _emit(rows, args.json, lambda rs: "\n".join(
        f"{r['id']:<{width}}  ({r['source']})  {r['instruction']}" for r in rs))
    return 0


def _format_bag_list(r: dict) -> str:
    lines = [f"{r['bag']}: {r['storage']}, {r['duration_s']} s, {len(r['topics'])} topics"]
    width = max([len(t["topic"]) for t in r["topics"]] + [5])
    tw = max([len(t["type"]) for t in r["topics"]] + [4])
    lines.append(f"  {'topic':<{width}}  {'type':<{tw}}  {'count':>7}  {'rate_hz':>8}")
    for t in r["topics"]:
        lines.append(f"  {t['topic']:<{width}}  {t['type']:<{tw}}  {t['count']:>7}  "
                     f"{t['rate_hz']:>8}")
    if r["custom_data"]:
        lines.append("  custom_data: " + ", ".join(f"{k}={v}" for k, v in
                                                     sorted(r["custom_data"].items())))
    lines += ["", "# starter mapping:", r["mapping_yaml"].rstrip()]
    return "\n".join(lines)


def _bundle_error(uri: str, exc: Exception, progress: bool) -> None:
    """One stderr line ``rcjudge: error: BUNDLE: MESSAGE`` (BUNDLE not repeated)."""
    msg = str(exc)
    line = msg if msg.startswith(f"{uri}:") else f"{uri}: {msg}"
    print(("\r\x1b[K" if progress else "") + f"rcjudge: error: {one_line(line)}",
          file=sys.stderr)


def _cmd_judge(args: argparse.Namespace) -> int:
    from judge.ensemble.judge import Judge, admit, prepare_admitted, read_streams
    from judge.ensemble.version import load_judge_version
    from rcjudge.progress import Progress

    version = load_judge_version(args.judge)
    admitted, failed = [], 0
    for uri in args.bundles:  # intake and the MCAP first: refused before any model loads
        try:
            admitted.append(read_streams(admit(uri)))
        except RcjudgeError as exc:
            _bundle_error(uri, exc, False)
            failed += 1
    results = []
    if admitted:
        judge = Judge(version)
        meter = Progress(len(admitted), len(admitted) > 1, "judged")
        try:
            for a in admitted:
                try:
                    j = judge.judge_prepared(prepare_admitted(a, version))
                    results.append(j.model_dump(mode="json"))
                except RcjudgeError as exc:
                    _bundle_error(a.bundle.uri, exc, meter.tty)
                    failed += 1
                meter.step()
        finally:
            judge.close()
            meter.close()
    if results or args.json:
        _emit(results, args.json, format_judgments)
    return 1 if failed else 0


def format_judgments(rows: list[dict]) -> str:
    """A table: bundle, attempt, success, class, confidences, milliseconds."""
    head = f"{'bundle':<28} {'attempt':<7} {'success':<7} {'failure_class':<22} " \
           f"{'att.conf':>8} {'suc.conf':>8} {'ms':>7}"
    lines = [head, "-" * len(head)]
    for r in rows:
        ms = sum(r["timings"].values()) * 1000
        lines.append(f"{r['run_id'][:28]:<28} {str(r['attempt']).lower():<7} "
                     f"{str(r['success']).lower():<7} {r['failure_class'] or '-':<22} "
                     f"{r['attempt_confidence']:>8.3f} {r['success_confidence']:>8.3f} "
                     f"{ms:>7.0f}")
    return "\n".join(lines)


def check_report_path(path: str, flag: str = "--report") -> None:
    """Refuse, before any work, a report path that cannot be written (a folder, under a file).

    Raises:
        BatchError: naming the flag, the path and what stands in the way.
    """
    import os

    from judge.batch.run import BatchError

    target = Path(path)
    if target.is_dir():
        raise BatchError(f"{flag} {path}: is a folder; expected the path of a JSON file to write")
    if target.exists():
        if not os.access(target, os.W_OK):
            raise BatchError(f"{flag} {path}: cannot be written: the file is read-only")
        return
    parent = target.absolute().parent
    while not parent.exists():  # the folders still to be made; the first existing one decides
        parent = parent.parent
    if not parent.is_dir():
        raise BatchError(f"{flag} {path}: cannot be written: {parent} is a file, not a folder")
    if not os.access(parent, os.W_OK | os.X_OK):
        raise BatchError(f"{flag} {path}: cannot be written: {parent} is not writable")


def _bag_source(args: argparse.Namespace) -> tuple[list[str], Any]:
    """``--mapping``: the bags of SOURCE and the cache they are imported into, the mapping
    checked first (a bad one refuses the batch, exit 2, before anything starts)."""
    from judge.batch.bags import bag_cache, check_bundles_dir, resolve_bags
    from judge.batch.run import BatchError
    from judge.bundle.rosbag.mapping import RosbagError, load_mapping
    from rcjudge.home import home

    try:
        load_mapping(args.mapping)
    except RosbagError as exc:
        raise BatchError(f"--mapping {exc}") from None
    root = args.bundles_dir or str(home() / "bag-bundles")
    check_bundles_dir(root)
    return resolve_bags(args.source), bag_cache(root, args.mapping)


def _cmd_batch(args: argparse.Namespace) -> int:
    from judge.batch.plan import check_overrides, parse_per_model
    from judge.batch.run import BatchError, check_max_in_flight, run_batch
    from judge.batch.sources import find_sources
    from judge.ensemble.version import load_judge_version
    from judge.ledgers.store import Ledger
    from judge.preflight.doctor import refuse_on_red

    if args.max_in_flight is not None:
        check_max_in_flight(args.max_in_flight, "--max-in-flight")
    replicas = parse_per_model(args.replicas, "--replicas")
    batch_size = parse_per_model(args.batch_size, "--batch-size")
    if args.report:
        check_report_path(args.report)
    bags = how = None
    passed_over: list[str] = []
    if args.mapping:
        uris, bags, how = [], *_bag_source(args)
    else:
        if args.bundles_dir:
            raise BatchError("--bundles-dir: where bags' bundles go; it needs --mapping")
        found = find_sources(args.source)
        uris, passed_over = found.uris, found.passed_over
        if passed_over:  # a converter's side files beside the bundles: not failures
            print(f"rcjudge: note: {found.note()}", file=sys.stderr)
    version = load_judge_version(args.judge)
    check_overrides(version, replicas, "--replicas")
    check_overrides(version, batch_size, "--batch-size")
    refuse_on_red(version, "batch", ray_address=args.ray_address,  # rcjudge doctor's red rows
                  gpu_memory_gib=args.gpu_memory_gib)
    with Ledger.open(args.db) as ledger:
        if args.dataset:
            from judge.outcomes.store import OutcomeStore

            OutcomeStore(ledger.engine).dataset(args.dataset)  # refused before judging
        summary = run_batch(uris, version, ledger, ray_address=args.ray_address,
                            max_in_flight=args.max_in_flight, progress=True,
                            replicas=replicas, batch_size=batch_size, bags=bags, bag_import=how,
                            gpu_memory_gib=args.gpu_memory_gib)
        if args.dataset:
            if bags is not None:
                from judge.batch.bags import cached_bundles

                uris = [u for b in bags for u in cached_bundles(b, how) or []]
            summary_labels = _label_batch(ledger, args.dataset, uris, version.name)
    out = summary.as_dict()
    if passed_over:
        out["passed_over"] = passed_over
    if args.dataset:
        out["dataset"] = summary_labels
    if args.report:
        Path(args.report).parent.mkdir(parents=True, exist_ok=True)
        Path(args.report).write_text(json.dumps(out, indent=2) + "\n")
    _emit(out, args.json, format_summary)
    return 130 if summary.interrupted else 1 if summary.failed else 0


def _label_batch(ledger, dataset: str, uris: list[str], judge_version: str) -> dict:
    """The judged bundles of a batch into ``dataset``, each with its model label."""
    from judge.bundle.manifest import claimed_bundle_hash
    from judge.outcomes.record import label_judged

    judged = ledger.judged_bundle_hashes(judge_version)
    hashes = [h for h in (claimed_bundle_hash(u) for u in uris) if h in judged]
    done = label_judged(ledger, dataset, hashes, judge_version)
    return {"name": dataset, "sequences": len(done.sequences), "labels_written": done.written,
            "labels_unchanged": done.unchanged}


def _cost_detail(c: dict) -> str:
    """`` ($X a judgment, N GPUs held, busy Y %)`` of a batch's reserved cost."""
    if not c:
        return ""
    return (f" (${c['per_judgment_usd']:.6f} a judgment, {c['gpus_held']} GPU(s) and "
            f"{c['cpus_held']:g} CPUs held, busy {100 * c['utilisation']:.1f} %)")


def format_summary(s: dict) -> str:
    lines = [f"judge {s['judge_version']}: {s['judged']} judged, {s['skipped']} skipped "
             f"(already judged), {s['failed']} failed of {s['total']}"
             + (" — INTERRUPTED" if s["interrupted"] else ""),
             f"{s['seconds']} s (+{s['startup_s']} s placing and starting models), "
             f"{s['bundles_per_minute']} bundles/min, "
             f"cost ${s['cost_usd']:.6f} reserved" + _cost_detail(s.get("cost", {}))
             + "".join(f"; {name} {m['replicas']} replica(s), batches of ≤{m['batch_size']}"
                       for name, m in s.get("plan", {}).get("models", {}).items())]
    if "dataset" in s:
        d = s["dataset"]
        lines.append(f"dataset {d['name']}: {d['sequences']} sequence(s), "
                     f"{d['labels_written']} model label(s) written, "
                     f"{d['labels_unchanged']} already there")
    if "bags" in s:
        b = s["bags"]
        lines.append(f"bags: {b['bags']} ({b['imported']} imported now, {b['cached']} from the "
                     f"cache, {b['failed']} failed) into {b['bundles']} bundle(s) in "
                     f"{b['bundles_dir']}")
    lines += [one_line(f"  failed {f['uri']}: {f['error']}: {f['message']}")
              for f in s["failures"]]
    return "\n".join(lines)


def _cmd_rejudge(args: argparse.Namespace) -> int:
    from judge.batch.rejudge import rejudge
    from judge.ensemble.version import load_judge_version
    from judge.ledgers.store import Ledger

    with Ledger.open(args.db, create=False) as ledger:
        summary, diff = rejudge(ledger, args.from_version, load_judge_version(args.to_version),
                                task_id=args.task, source=args.source,
                                ray_address=args.ray_address,
                                progress=True)
    out = {"batch": summary.as_dict(), "diff": diff.as_dict()}
    _emit(out, args.json, lambda o: format_summary(o["batch"]) + "\n" + format_diff(
        args.from_version, args.to_version, o["diff"]))
    return 130 if summary.interrupted else 1 if summary.failed else 0


def format_diff(a: str, b: str, d: dict) -> str:
    def flips(f: dict) -> str:
        return ", ".join(f"{k}: {v}" for k, v in sorted(f.items())) or "none"

    lines = [f"{a} -> {b} on {d['runs']} runs",
             f"  attempt flips: {flips(d['attempt_flips'])}",
             f"  success flips: {flips(d['success_flips'])}",
             f"  class changes: {d['class_changes']}"]
    lines += [f"    {k}: {v}" for k, v in d["class_transitions"].items()]
    if d["labelled"]:
        ba, aa = d["agreement_before"], d["agreement_after"]
        lines.append(f"  agreement with operator labels ({d['labelled']} runs): attempt "
                     f"{ba['attempt']:.1%} -> {aa['attempt']:.1%}, success "
                     f"{ba['success']:.1%} -> {aa['success']:.1%}")
    else:
        lines.append("  no operator labels for these runs")
    return "\n".join(lines)


def _cmd_calibrate(args: argparse.Namespace) -> int:
    from judge.ensemble.version import load_judge_version
    from judge.learn.calibrate import calibrate_version, version_path, write_version
    from judge.ledgers.seen import check_unrecorded, label_rows, record_training
    from judge.ledgers.store import Ledger

    target = version_path(args.out, args.config)  # refused before any work if it exists
    with Ledger.open(args.db, create=False) as ledger:
        check_unrecorded(ledger, args.out)
        new, report = calibrate_version(ledger, load_judge_version(args.judge), args.out,
                                        holdout=args.holdout)
        report["written"] = str(write_version(new, target))
        # what it saw: every labelled run of the version, its maps' data (judge.ledgers.seen)
        labels = ledger.current_labels()
        record_training(ledger, args.out, args.judge, "ledger", label_rows(ledger, [
            (rid, labels[rid].label, "calibration")
            for rid in sorted(ledger.judged_run_ids(args.judge) & set(labels))], False))
    _emit(report, args.json, format_calibration)
    return 0


def format_calibration(r: dict) -> str:
    """Before/after per question on the held-out tasks, then the reliability bins of success."""
    b, a = r["before"], r["after"]
    lines = [f"{r['from']} -> {r['to']}: held-out tasks {', '.join(r['held_out_tasks'])} "
             f"({b['success']['n']} runs; maps fitted on the other {r['train_runs']}), "
             f"written fitted on all {r['fitted_on']}"]
    for q in ("attempt", "success"):
        lines.append(f"  {q:<8} accuracy {b[q]['accuracy']:.3f} -> {a[q]['accuracy']:.3f}   "
                     f"ECE of {q}_confidence {b[q]['ece']:.4f} -> {a[q]['ece']:.4f}   "
                     f"ROC-AUC {b[q]['roc_auc']} -> {a[q]['roc_auc']}")
    lines.append("  success_confidence reliability (held out): bin  n  accuracy  mean conf "
                 "(before | after)")
    for rb, ra in zip(b["success"]["bins"], a["success"]["bins"], strict=True):
        def cell(x: dict) -> str:
            return (f"{x['n']:>4} {x['accuracy']:.3f} {x['mean_confidence']:.3f}" if x["n"]
                    else f"{x['n']:>4}     -     -")
        lines.append(f"    [{rb['lo']:.2f}, {rb['hi']:.2f})  {cell(rb)} | {cell(ra)}")
    lines.append(f"  wrote {r['written']}")
    return "\n".join(lines)


def _cmd_train(args: argparse.Namespace) -> int:
    from judge.ensemble.version import load_judge_version
    from judge.learn.memory import GIB, check_plan, format_plan, training_memory_plan
    from judge.learn.recipe import RECIPES
    from judge.learn.train import TrainConfig, TrainError, train_version
    from judge.ledgers.store import Ledger
    from judge.preflight.doctor import refuse_on_red

    given = ("epochs", "patience", "warmup_steps", "blank_images", "blank_text", "travel_jitter")
    knobs = {**RECIPES[args.recipe],  # the recipe, then each flag given explicitly
             **{k: v for k in given if (v := getattr(args, k)) is not None}}
    cfg = TrainConfig(seed=args.seed, split_seed=args.split_seed, lr=args.lr, batch=args.batch,
                      test_fraction=args.test_fraction, max_steps=args.max_steps,
                      lora=args.lora, lora_rank=args.lora_rank,
                      gradient_checkpointing=args.gradient_checkpointing, **knobs,
                      hold_out_tasks=tuple(t for t in (args.hold_out_tasks or "").split(",")
                                           if t))
    parent = load_judge_version(args.from_version)
    memory = None
    if args.device_memory_gib is not None:
        if not args.device_memory_gib > 0:
            raise TrainError(f"--device-memory-gib {args.device_memory_gib}: a size in GiB "
                             "above 0")
        memory = int(args.device_memory_gib * GIB)
    if args.plan:  # the estimate alone: nothing is prepared, loaded or written
        rows = training_memory_plan(parent, cfg, memory)
        _emit(rows, args.json, format_plan)
        check_plan(rows)
        return 0
    if args.out is None:
        raise TrainError("--out NEW_VERSION: the name of the version to train (or --plan)")
    refuse_on_red(parent, "train")  # rcjudge doctor's red rows, before any run is prepared
    with Ledger.open(args.db, create=False) as ledger:
        _, report = train_version(ledger, parent, args.out, cfg, labels_file=args.labels,
                                  config_out=args.config, progress=True,
                                  device_memory_bytes=memory)
    _emit(report, args.json, format_training)
    return 0


def format_training(r: dict) -> str:
    """What was trained on what, how it went, where it was written."""
    s = r["split"]
    lines = [f"{r['from']} -> {r['to']}: train {s['train']} / validation {s['validation']} / "
             f"calibration {s['calibration']} runs; {s['test']} labelled runs held out as the "
             f"test part (never used)"]
    for name, m in r["models"].items():
        lines.append(f"  {name:<16} best epoch {m['best_epoch']} of {len(m['history'])}, "
                     f"validation loss {m['best_val_loss']}, {m['steps']} steps")
    v = r["validation"]
    lines.append(f"  validation: attempt accuracy {v['attempt']['accuracy']:.3f}, success "
                 f"accuracy {v['success']['accuracy']:.3f} (ECE {v['success']['ece']:.3f})")
    if r["skipped"]:
        lines.append(f"  skipped {len(r['skipped'])} run(s) that could not be prepared")
    lines.append(f"  {r['seconds']['total']} s; wrote {r['config']} and {r['weights']}")
    return "\n".join(lines)


def _cmd_average(args: argparse.Namespace) -> int:
    from judge.ensemble.version import load_judge_version
    from judge.learn.average import average_versions
    from judge.ledgers.store import Ledger

    versions = [load_judge_version(v) for v in args.versions.split(",") if v]
    with Ledger.open(args.db, create=False) as ledger:
        _, report = average_versions(ledger, versions, args.out, labels_file=args.labels,
                                     config_out=args.config, progress=True)
    _emit(report, args.json, format_average)
    return 0


def format_average(r: dict) -> str:
    """Which versions were averaged, on what the maps were fitted, where it was written."""
    v = r["validation"]
    lines = [f"{', '.join(r['members'])} -> {r['to']}: each model the mean of "
             f"{len(r['members'])} checkpoints (trained from {r['parent']} on one split)",
             f"  calibration fitted on {r['calibration_runs']} runs; validation "
             f"({r['validation_runs']} runs): attempt accuracy {v['attempt']['accuracy']:.3f}, "
             f"success accuracy {v['success']['accuracy']:.3f} (ECE "
             f"{v['success']['ece']:.3f})"]
    if r["skipped"]:
        lines.append(f"  skipped {len(r['skipped'])} run(s) that could not be prepared")
    lines.append(f"  {r['seconds']} s; wrote {r['config']}")
    return "\n".join(lines)


def _cmd_eval(args: argparse.Namespace) -> int:
    from judge.learn.evaluate import check_resamples, evaluate
    from judge.learn.report import check_out_dir, format_eval, write_report
    from judge.learn.truth import read_truth_file
    from judge.ledgers.store import Ledger

    check_resamples(args.bootstrap)  # the cheap checks first: flags, folder, label file
    if args.out:
        check_out_dir(args.out)
    truth = read_truth_file(args.labels) if args.labels else None
    with Ledger.open(args.db, create=False) as ledger:
        report = evaluate(ledger, [args.judge] + ([args.compare] if args.compare else []),
                          truth, args.labels, resamples=args.bootstrap, seed=args.seed)
    if args.out:
        report["written"] = write_report(report, args.out)
    _emit(report, args.json, format_eval)
    return 0


def _cmd_review_next(args: argparse.Namespace) -> int:
    from dataclasses import asdict

    from judge.ensemble.version import judge_name
    from judge.learn.select import (
        SelectError,
        known_test_runs,
        next_runs,
        pick_json,
        read_test_runs,
    )
    from judge.ledgers.store import Ledger

    args.judge = judge_name(args.judge)
    named = read_test_runs(args.test_runs) if args.test_runs else {}  # before the ledger opens
    if args.floor is not None and args.strategy != "sample":
        raise SelectError(f"--floor: only with --strategy sample, not {args.strategy}")
    with Ledger.open(args.db, create=False) as ledger:
        test_runs = known_test_runs(ledger, named, args.test_runs) if named else frozenset()
        split = {"split_seed": args.split_seed, "test_fraction": args.test_fraction,
                 "test_runs": test_runs}
        if args.strategy in SAMPLING_STRATEGIES:
            from judge.learn.draw import DEFAULT_FLOOR, sampling_round

            round_, picks = sampling_round(
                ledger, args.judge, n=args.n, strategy=args.strategy, seed=args.seed,
                floor=DEFAULT_FLOOR if args.floor is None else args.floor, **split)
            out = {"judge_version": args.judge, "strategy": args.strategy,
                   "round": asdict(round_), "picks": [pick_json(p) for p in picks]}
            _emit(out, args.json, _format_round)
            return 0
        picks = next_runs(ledger, args.judge, n=args.n, strategy=args.strategy, seed=args.seed,
                          **split)
    out = {"judge_version": args.judge, "strategy": args.strategy,
           "picks": [pick_json(p) for p in picks]}
    _emit(out, args.json, lambda o: "\n".join(
        [f"{len(picks)} run(s) of {args.judge} to label next ({args.strategy}):"
         if picks else f"no unlabelled run of {args.judge} outside the test part"]
        + [f"{p.rank:>4}  {p.run_id}  {p.score:.4f}  {p.reason}" for p in picks]))
    return 0


def _format_round(o: dict[str, Any]) -> str:
    r, picks = o["round"], o["picks"]
    pis = [p["pi"] for p in picks]
    spread = f"; their pi {min(pis):.3f}-{max(pis):.3f}" if pis else ""
    head = (f"sampling round {r['round_id']} of {o['judge_version']} ({r['strategy']}, seed "
            f"{r['seed']}{'' if r['new'] else ', already recorded'}): {r['drawn']} run(s) "
            f"drawn of {r['candidates']} candidate(s), {r['budget']:g} expected{spread}; "
            "label every one of them (a drawn run left unlabelled biases the rate)")
    return "\n".join([head] + [f"{p['rank']:>4}  {p['run_id']}  {p['score']:.4f}  {p['reason']}"
                               for p in picks])


def _format_review_stats(s: dict[str, Any]) -> str:
    lines = [f"{s['labels']} label(s) of {s['runs']} run(s)"]
    for title, key in (("strategy", "by_strategy"), ("task", "by_task"),
                       ("labeled_by", "by_labeller")):
        lines.append(f"per {title}:")
        for e in s[key]:
            wrong = (f", the picking version's success answer wrong on {e['judge_wrong']}"
                     if "judge_wrong" in e and e[title] != "unqueued" else "")
            lines.append(f"  {e[title]:<28} {e['labels']:>5} label(s), {e['runs']} run(s){wrong}")
    return "\n".join(lines)


def _cmd_review_stats(args: argparse.Namespace) -> int:
    from judge.ledgers.review import review_stats
    from judge.ledgers.store import Ledger

    with Ledger.open(args.db, create=False) as ledger:
        stats = review_stats(ledger)
    _emit(stats, args.json, _format_review_stats)
    return 0


def _cmd_build_tiny(args: argparse.Namespace) -> int:
    from models.tiny import FOLDERS, build_tiny
    from rcjudge.home import models_dir

    built = build_tiny(args.out or models_dir() / FOLDERS[args.profile], seed=args.seed,
                       profile=args.profile)
    rows = [{"name": m.name, "path": str(m.path), "architecture": m.architecture,
             "bytes": m.bytes, "parameters": m.parameters} for m in built]
    _emit(rows, args.json, lambda rs: "\n".join(
        f"{r['name']:<10} {r['architecture']:<34} {r['bytes'] / 1e6:5.2f} MB "
        f"{r['parameters']:>8} params  {r['path']}" for r in rs))
    return 0


def _cmd_models_list(args: argparse.Namespace) -> int:
    from models.registry import BACKENDS

    _emit(BACKENDS, args.json, lambda b: "\n".join(f"{k:<14} {v}" for k, v in b.items()))
    return 0


def _cmd_judges_list(args: argparse.Namespace) -> int:
    from judge.ensemble.version import load_judge_version, version_names

    rows = []
    for name in version_names():
        v = load_judge_version(name)
        rows.append({"name": v.name, "description": v.description,
                     "models": [f"{m.name} ({m.backend})" for m in v.models]})
    _emit(rows, args.json, lambda rs: "\n".join(
        f"{r['name']:<16} {', '.join(r['models'])}  {r['description']}" for r in rs))
    return 0


def _cmd_judges_show(args: argparse.Namespace) -> int:
    from judge.ensemble.fingerprint import fingerprint_of, version_parts
    from judge.ensemble.taxonomy import load_taxonomy
    from judge.ensemble.version import load_judge_version

    version = load_judge_version(args.version)
    taxonomy = load_taxonomy()
    content = version_parts(version, taxonomy)  # hashes the model folders once
    fp = fingerprint_of(content)
    out: dict[str, Any] = {
        "name": version.name, "fingerprint": fp.digest,
        "parts": {n: {"sha256": h, "content": content[n] if n != "taxonomy" else
                      f"{len(taxonomy.classes)} classes, {len(taxonomy.exempt)} exempt"}
                  for n, h in fp.parts.items()}}
    if args.db:
        from judge.ledgers.store import Ledger

        with Ledger.open(args.db, create=False) as ledger:
            recorded = ledger.version_fingerprint(version.name)
        out["ledger"] = None if recorded is None else {
            "fingerprint": recorded[0], "same": recorded[0] == fp.digest,
            "changed": fp.changed(recorded[1]) if recorded[0] != fp.digest else []}

    def text(o: dict) -> str:
        lines = [f"judge version {o['name']}", f"fingerprint  {o['fingerprint']}"]
        lines += [f"  {n:<28} {v['sha256'][:16]}" for n, v in o["parts"].items()]
        if "ledger" in o:
            led = o["ledger"]
            lines.append("ledger: never judged with this version" if led is None else
                         "ledger: judged with this same fingerprint" if led["same"] else
                         f"ledger: judged with {led['fingerprint'][:16]}, changed since: "
                         f"{', '.join(led['changed']) or 'unknown parts'}")
        return "\n".join(lines)

    _emit(out, args.json, text)
    return 0


def register_bring_in(sub: argparse._SubParsersAction) -> None:
    """bring data in: ``bundle``, ``import``, ``inspect``."""
    p = sub.add_parser("inspect", help="channels, fps, contacts and sampled timestamps of a bundle")
    p.add_argument("bundle", help="bundle folder or fsspec URI")
    p.add_argument("--judge", metavar="VERSION", help="find contacts with this judge version's "
                   "contact and sampling settings (e.g. its impact_min_nm; default "
                   "configs/sampling.yaml)")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=_cmd_inspect)

    bundle = sub.add_parser("bundle", help="bundle tools").add_subparsers(
        dest="bundle_command", required=True, metavar="COMMAND")
    p = bundle.add_parser("create", help="build a bundle from three videos and a signal table")
    p.add_argument("--video", action="append", required=True, metavar="NAME=PATH",
                   help="a camera recording (any codec PyAV decodes); give it three times")
    p.add_argument("--signals", required=True, help="Parquet or CSV signal table")
    p.add_argument("--attribution", required=True, help="JSON file with the attribution fields")
    p.add_argument("--out", required=True, help="output bundle folder (must not exist)")
    p.add_argument("--keyframe-s", type=float, default=0.5,
                   help="keyframe interval of re-encoded cameras (s, default 0.5)")
    p.add_argument("--crf", type=int, default=18,
                   help="libx264 quality of re-encoded cameras (0 lossless..51, default 18)")
    p.add_argument("--preset", default="veryfast", help="libx264 preset (default veryfast)")
    p.add_argument("--reencode", action="store_true",
                   help="re-encode every camera, even one that could be copied")
    p.add_argument("--gripper", metavar="PROFILE|FILE.yaml",
                   help="gripper profile (configs/grippers.yaml) or a YAML file of its fields: "
                        "gripper.force is then that gripper's effort, not a contact force")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=_cmd_bundle_create)

    imp = sub.add_parser("import", help="turn other formats into bundles").add_subparsers(
        dest="import_command", required=True, metavar="FORMAT")
    p = imp.add_parser("lerobot", help="each episode of a LeRobot v3.0/v2.1 dataset -> a bundle")
    p.add_argument("dataset", metavar="DATASET_DIR")
    p.add_argument("--out", required=True, help="folder the bundles go into")
    p.add_argument("--mapping", required=True, metavar="FILE.yaml",
                   help="attribution, task.id per task text, gripper dimensions (docs/lerobot.md)")
    p.add_argument("--episodes", help="e.g. 0,3-9 (default: all)")
    p.add_argument("--pad-cameras", action="store_true",
                   help="fewer than three cameras: repeat the first (default: refuse)")
    p.add_argument("--keyframe-s", type=float, default=0.5)
    p.add_argument("--crf", type=int, default=18)
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=_cmd_import_lerobot)
    p = imp.add_parser("rosbag", help="each episode of a ROS 2 (MCAP, SQLite) or ROS 1 bag "
                       "-> a bundle")
    p.add_argument("bags", nargs="+", metavar="BAG",
                   help="a ROS 2 bag folder (metadata.yaml), a .mcap or a ROS 1 .bag")
    p.add_argument("--list", action="store_true",
                   help="print the bag's topics, types, counts and rates, and a starter mapping")
    p.add_argument("--mapping", metavar="FILE.yaml",
                   help="topic -> role, attribution, episode cuts (docs/rosbag.md)")
    p.add_argument("--out", help="folder the bundles go into")
    p.add_argument("--episodes", help="e.g. 0,3-9 (default: all)")
    p.add_argument("--keyframe-s", type=float, default=0.5)
    p.add_argument("--crf", type=int, default=18)
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=_cmd_import_rosbag)  # a bad bag exits 1 (rcjudge --help)


def register_judging(sub: argparse._SubParsersAction) -> None:
    """judge: ``judge``, ``batch``, ``rejudge``, ``explain``."""
    p = sub.add_parser("judge", help="judge bundles with a judge version (three VLMs, voted)")
    p.add_argument("bundles", nargs="+", metavar="BUNDLE", help="bundle folders or URIs")
    p.add_argument("--judge", default="tiny", help="judge version (configs/judges/NAME.yaml)")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=_cmd_judge)

    p = sub.add_parser("batch", help="judge many bundles on Ray into the ledgers (resumable)")
    p.add_argument("source", help="a folder of bundles, a glob, or a list file of bundle URIs; "
                   "with --mapping a folder of ROS bags, a bag, or a list file of bags")
    p.add_argument("--mapping", metavar="FILE", help="SOURCE holds ROS bags: each is imported "
                   "with this mapping (docs/rosbag.md) by the prepare workers, then judged")
    p.add_argument("--bundles-dir", metavar="DIR", help="with --mapping: where the bags' "
                   "bundles are written, cached by bag content (default "
                   "RCJUDGE_HOME/bag-bundles)")
    p.add_argument("--judge", required=True, metavar="VERSION", help="judge version")
    p.add_argument("--ray-address", metavar="ADDR", help="join this Ray cluster (default: local)")
    db_arg(p)
    p.add_argument("--max-in-flight", type=int, metavar="N",
                   help="bundles between submission and ledger write (backpressure; "
                   "default max(8, 2 × replicas × batch size))")
    p.add_argument("--replicas", action="append", metavar="N|NAME=N",
                   help="replicas of every model (N) or of one (NAME=N, repeatable); default "
                   "the version's, else what the cluster's GPUs/CPUs allow (docs/batch.md)")
    p.add_argument("--batch-size", action="append", metavar="N|NAME=N",
                   help="most requests per engine call, gathered across bundles; default "
                   "the version's, else 32 on CUDA, 8 on CPU")
    p.add_argument("--report", metavar="FILE", help="also write the summary (with every "
                   "failure and its error) to this JSON file")
    p.add_argument("--gpu-memory-gib", type=gpu_memory_gib, metavar="GIB",
                   help="each GPU's memory, to check every vLLM engine's share against what it "
                   "needs (default: this machine's GPUs; with --ray-address: unchecked)")
    p.add_argument("--dataset", metavar="OWNER/SLUG", help="put the judged runs into this "
                   "dataset, each with a source: model outcome label (docs/outcomes.md)")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=_cmd_batch)

    p = sub.add_parser("rejudge", help="re-judge every run of version A with version B, and diff")
    p.add_argument("--from", dest="from_version", required=True, metavar="VERSION_A")
    p.add_argument("--to", dest="to_version", required=True, metavar="VERSION_B",
                   help="judge version name or YAML file")
    p.add_argument("--task", metavar="TASK_ID", help="only runs of this task")
    p.add_argument("--source", metavar="SOURCE", help="where the bundles are now (folder, "
                   "glob or list file; e.g. another mount): runs are found by bundle hash")
    p.add_argument("--ray-address", metavar="ADDR")
    db_arg(p)
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=_cmd_rejudge)

    p = sub.add_parser("explain", help="one HTML page: frames, signals, contacts and every "
                       "model's answers behind a judgment")
    p.add_argument("target", nargs="*", metavar="BUNDLE|RUN_ID",
                   help="a bundle (judged now) or a run id (its judgment from the ledger); "
                        "with --out-dir, run ids")
    p.add_argument("--judge", default="tiny", help="judge version (name or YAML file)")
    p.add_argument("--out", metavar="FILE.html", help="the page to write")
    p.add_argument("--out-dir", metavar="DIR", help="write one page per run id, "
                   "DIR/<run_id>.html, from the ledger (the pages the verdict screen's "
                   "--explain-dir links)")
    p.add_argument("--runs", metavar="FILE", help="with --out-dir: the run ids of a table's "
                   "run_id (else episode_id) column, e.g. the evaluation_run export")
    db_arg(p)  # the ledger a RUN_ID is read from
    p.add_argument("--mcap", metavar="FILE.mcap", help="also write the contact events and "
                   "sampled frames as Foxglove annotations (open it beside the bundle's MCAP)")
    p.add_argument("--rrd", metavar="FILE.rrd", help="also (or instead of --out) write the "
                   "page's content as a Rerun recording (needs the rerun extra: rerun-sdk)")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=_cmd_explain)


def register_improve(sub: argparse._SubParsersAction) -> None:
    """improve the judge: ``review``, ``train``, ``eval``, ``calibrate``, ``average`` (``labels``:
    :mod:`judge.ledgers.cli`)."""
    about = ("the review queue: which runs to label next, and the labels made from it "
             "(docs/review.md; the page: rcjudge serve, /review?judge=V)")
    review = sub.add_parser("review", help=about, description=about.replace(
        "it (", "it\n(")).add_subparsers(dest="review_command", required=True,
                                             metavar="COMMAND")
    p = review.add_parser("next", help="the unlabelled runs to label next, best first, each "
                          "with the reason it was picked")
    p.add_argument("--judge", required=True, metavar="VERSION",
                   help="the judge version whose judgments rank the runs")
    p.add_argument("--n", type=int, default=20, help="how many runs (default 20; for a "
                   "sampling round, how many it draws on average)")
    p.add_argument("--strategy", default="committee",
                   choices=REVIEW_STRATEGIES + SAMPLING_STRATEGIES,
                   help="committee: the three models disagree (default); uncertainty: low "
                   "reported confidence; random: seeded; coverage: tasks, policies, bodies "
                   "with few labels first; sample: a sampling round for rates, each run drawn "
                   "with probability from the judge's uncertainty (recorded in the ledger); "
                   "sample-uniform: the same, every run alike")
    p.add_argument("--seed", type=int, default=0, help="seed of --strategy random, sample, "
                   "sample-uniform")
    p.add_argument("--floor", type=float, metavar="F", help="--strategy sample: the share "
                   "of --n spread evenly, so no run is impossible (default 0.5; 1: uniform)")
    p.add_argument("--split-seed", type=int, default=0, metavar="S",
                   help="the --split-seed `rcjudge train` will use: runs of its test part are "
                   "never picked (default 0, train's default)")
    p.add_argument("--test-fraction", type=float, default=0.2, metavar="F",
                   help="the --test-fraction `rcjudge train` will use (default 0.2)")
    p.add_argument("--test-runs", metavar="FILE", help="runs the lab holds as its own test "
                   "set, never offered: one run id a line, or a .csv/.jsonl with a run_id "
                   "column")
    db_arg(p)
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=_cmd_review_next)
    p = review.add_parser("stats", help="labels per strategy, per task and per labeller")
    db_arg(p)
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=_cmd_review_stats)

    p = sub.add_parser("calibrate", help="fit per-model Platt scaling on operator labels")
    p.add_argument("--judge", required=True, metavar="VERSION")
    p.add_argument("--out", required=True, metavar="NEW_VERSION", help="name of the new version")
    p.add_argument("--config", metavar="FILE", help="where to write it (default "
                   "$RCJUDGE_HOME/judges/NEW_VERSION.yaml, found by name)")
    p.add_argument("--holdout", type=float, default=0.3, help="share of tasks held out")
    db_arg(p)
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=_cmd_calibrate)

    p = sub.add_parser("train", help="train the next judge version on the labelled history")
    p.add_argument("--from", dest="from_version", required=True, metavar="VERSION",
                   help="the version whose judgments and models to start from")
    p.add_argument("--out", metavar="NEW_VERSION", help="name of the new version (required "
                   "but with --plan)")
    db_arg(p)
    p.add_argument("--labels", metavar="FILE", help="labels (CSV/JSONL, the import format) "
                   "instead of the ledger's operator labels")
    p.add_argument("--config", metavar="FILE", help="where to write the version (default "
                   "$RCJUDGE_HOME/judges/NEW_VERSION.yaml, found by name)")
    p.add_argument("--seed", type=int, default=0,
                   help="the models' initial weights and data order, and the split's seed")
    p.add_argument("--split-seed", type=int, metavar="S", help="the split's own seed (default: "
                   "--seed): versions trained with one split seed and several --seed values "
                   "share their train, validation, calibration and test parts")
    p.add_argument("--recipe", choices=("judge-quality", "demo"), default="judge-quality",
                   help="named defaults for the flags below: judge-quality (default), the "
                   "recipe behind docs/judge-quality.md's figures: 20 epochs, patience 5, lr "
                   "5e-4 (models under 1 B parameters), 60 warm-up steps, --blank-images 0.5; "
                   "demo, make demo's quick one: 8 epochs, patience 3, lr 2e-3, no warm-up, "
                   "no modality dropout. A flag given explicitly overrides its recipe value")
    p.add_argument("--epochs", type=int, default=None, help="passes over the train part "
                   "(recipe: 20; demo 8)")
    p.add_argument("--lr", type=float, default=None, help="learning rate (default: the "
                   "recipe's for models under 1 B parameters, 5e-4, demo 2e-3; at 1 B and more "
                   "2e-4 with LoRA, 2e-5 without)")
    p.add_argument("--batch", type=int, default=8, help="questions per optimizer step")
    p.add_argument("--patience", type=int, default=None,
                   help="epochs without a better validation loss before stopping (recipe: "
                   "5; demo 3)")
    p.add_argument("--warmup-steps", type=int, default=None,
                   help="optimizer steps over which the learning rate rises linearly to --lr "
                   "(recipe: 60; demo 0)")
    p.add_argument("--max-steps", type=int, help="cap on optimizer steps per model")
    p.add_argument("--test-fraction", type=float, default=0.2,
                   help="share of seed groups never used, left for `rcjudge eval` (default "
                   "0.2; 0 when you hold your own test set: every labelled run is used)")
    p.add_argument("--hold-out-tasks", metavar="T1,T2", help="tasks never used")
    p.add_argument("--lora", action=argparse.BooleanOptionalAction, default=None,
                   help="LoRA adapters (peft, the `train` extra) instead of full fine-tuning; "
                   "default: on for models on CUDA")
    p.add_argument("--lora-rank", type=int, default=8)
    p.add_argument("--gradient-checkpointing", action=argparse.BooleanOptionalAction,
                   default=None, help="recompute each layer's activations in the backward pass "
                   "instead of keeping them; default: on for models on CUDA")
    p.add_argument("--plan", action="store_true", help="print each model's estimated peak "
                   "training memory and whether it fits its device, then stop (no ledger read)")
    p.add_argument("--device-memory-gib", type=float, metavar="GIB", help="plan for a device "
                   "of this much memory (default: each model's device: the GPU's, or the RAM)")
    p.add_argument("--blank-images", type=float, default=None, metavar="P",
                   help="show each training question black frames with probability P, so "
                   "the models learn to read the question's text too (recipe: 0.5; demo 0)")
    p.add_argument("--blank-text", type=float, default=None, metavar="P",
                   help="ask each training question that shows its images without the "
                   "{sensors} and {motion} lines with probability P, so the models learn to "
                   "read the images too (recipe and demo: 0)")
    p.add_argument("--travel-jitter", type=float, default=None, metavar="J",
                   help="scale each training question's arm travel ({motion}) by a factor "
                   "drawn log-uniformly from [1/(1+J), 1+J], so no task's range of it becomes "
                   "a cue (recipe and demo: 0)")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=_cmd_train)

    p = sub.add_parser("average", help="a version whose models average the checkpoints of "
                       "versions trained alike on one split (docs/train.md)")
    p.add_argument("--versions", required=True, metavar="A,B[,...]",
                   help="trained versions (names or YAML files): one parent, data, split and "
                   "options; other --seed values")
    p.add_argument("--out", required=True, metavar="NEW_VERSION", help="name of the new version")
    db_arg(p)
    p.add_argument("--labels", metavar="FILE", help="the label file they were trained from, "
                   "if not the ledger's operator labels")
    p.add_argument("--config", metavar="FILE", help="where to write the version (default "
                   "$RCJUDGE_HOME/judges/NEW_VERSION.yaml, found by name)")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=_cmd_average)

    p = sub.add_parser("eval", help="score a judge version (or two) on labelled runs it never "
                       "trained on (docs/eval.md)")
    p.add_argument("--judge", required=True, metavar="VERSION",
                   help="judge version name or YAML file")
    p.add_argument("--compare", metavar="VERSION_B", help="a second version, scored on the "
                   "same runs (those neither trained on and both judged), with the flips")
    db_arg(p)
    p.add_argument("--labels", metavar="FILE", help="truth from this label file (CSV/JSONL as "
                   "`labels import`, plus an optional near_threshold column); default: the "
                   "ledger's current operator labels")
    p.add_argument("--out", metavar="DIR", help="also write report.json, report.html and "
                   "reliability_{attempt,success}.png here")
    p.add_argument("--bootstrap", type=int, default=1000, metavar="N",
                   help="bootstrap resamples for the 95%% intervals (0: none)")
    p.add_argument("--seed", type=int, default=0, metavar="S", help="seed of the resamples")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=_cmd_eval)


def register_setup(sub: argparse._SubParsersAction) -> None:
    """setup: ``models``, ``judges``, ``tasks`` (``doctor``: :mod:`judge.preflight.cli`;
    ``db``: :mod:`judge.ledgers.cli`)."""
    models = sub.add_parser("models", help="model tools").add_subparsers(
        dest="models_command", required=True, metavar="COMMAND")
    p = models.add_parser("build-tiny", help="build three tiny random-weight VLMs offline")
    p.add_argument("--out", help="output folder (default {models_dir}/tiny, "
                   "{models_dir}/tiny-vision or {models_dir}/tiny-vision-224 by --profile, "
                   "where those judges look: $RCJUDGE_MODELS or $RCJUDGE_HOME/models)")
    p.add_argument("--profile", choices=TINY_PROFILES, default="plumbing",
                   help="plumbing: the `tiny` judge's 64-px models (tests, demo); vision: the "
                   "`tiny-vision` judges' 128-px models, trainable to see success; "
                   "vision-224: the same at 224 px (`tiny-vision-224-streams`)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=_cmd_build_tiny)
    p = models.add_parser("list", help="registered backends")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=_cmd_models_list)
    from judge.preflight.cli import register_fetch

    register_fetch(models)  # rcjudge models fetch

    tasks = sub.add_parser("tasks", help="the task catalog: the instruction a judge is given "
                           "for each task.id (docs/judging.md)").add_subparsers(
        dest="tasks_command", required=True, metavar="COMMAND")
    p = tasks.add_parser("add", help="add a task to $RCJUDGE_HOME/tasks.yaml (an id keeps its "
                         "instruction)")
    p.add_argument("task_id", metavar="TASK_ID")
    p.add_argument("instruction", metavar="INSTRUCTION", help="one line, as the judge asks it")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=_cmd_tasks_add)
    p = tasks.add_parser("list", help="every task: the package's and $RCJUDGE_HOME/tasks.yaml's")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=_cmd_tasks_list)

    judges = sub.add_parser("judges", help="judge versions and their fingerprints").add_subparsers(
        dest="judges_command", required=True, metavar="COMMAND")
    p = judges.add_parser("list", help="the judge versions under configs/judges/ and "
                          "$RCJUDGE_HOME/judges/")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=_cmd_judges_list)
    p = judges.add_parser("show", help="a version's fingerprint and its parts (and, with --db, "
                          "whether it still judges as it did)")
    p.add_argument("version", metavar="VERSION", help="judge version name or YAML file")
    db_arg(p)  # given: compare with the fingerprint in this ledger
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=_cmd_judges_show)
