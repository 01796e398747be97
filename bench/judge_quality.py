"""Judge quality on physics truth: the v1 -> v2 loop end to end, timed stage by stage.

``python -m bench.judge_quality --n 600 --out bench-out/judge-quality [--workers 2]
[--judge tiny-vision-streams]``:

0. ``rcjudge models build-tiny [--profile vision]`` when the judge's tiny models are not
   built yet;
1. ``rcjudge sim``: N Meta-World rollouts over the tasks, cameras drawn per rollout;
2. ``rcjudge batch``: the untrained judge (v1, default ``tiny-vision-streams``) judges them all;
3. ``rcjudge truth-labels`` + ``labels import``: operator labels (from the physics truth)
   for ``--label-fraction`` of the runs;
4. ``rcjudge train``: v2 from v1's labelled history, ``--hold-out-task`` never used, each
   training question shown black frames with probability ``--blank-images`` (0.5);
5. ``rcjudge rejudge``: v2 judges every run beside v1's rows;
6. ``rcjudge eval --compare``: both versions on the runs neither trained on, against the
   physics truth of every run, with bootstrap intervals, per task, near-threshold slice;
   once on the unseen seeds of the trained tasks (``truth-trained-tasks.csv``: the issue's
   success, ECE, attempt and class targets) and once with the held-out task too.

Prints a markdown table (the figures of docs/judge-quality.md) and keeps every output under
``--out``. Each stage is skipped when its output already exists, so an interrupted run
resumes. This is a benchmark, not a test: it takes minutes to an hour on 2 cores.
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import subprocess
import sys
import time
from pathlib import Path

TASKS = "pick-place,pick-place-wall,drawer-open,button-press-topdown,peg-insert-side"


def _run(args: list[str], log: Path) -> float:
    """One rcjudge command, output appended to ``log``; its wall seconds."""
    t0 = time.perf_counter()
    with log.open("a") as fh:
        fh.write(f"$ rcjudge {' '.join(args)}\n")
        fh.flush()
        proc = subprocess.run([sys.executable, "-m", "rcjudge.cli", *args], stdout=fh,
                              stderr=subprocess.STDOUT, env={**os.environ,
                                                             "RAY_AUTH_MODE": "disabled"})
    if proc.returncode != 0:
        raise SystemExit(f"rcjudge {args[0]} failed (exit {proc.returncode}); see {log}")
    return time.perf_counter() - t0


def _fmt(m: dict, key: str) -> str:
    v, ci = m.get(key), m.get(f"{key}_ci")
    if v is None:
        return "–"
    return f"{v:.3f} [{ci[0]:.3f}, {ci[1]:.3f}]" if ci else f"{v:.3f}"


def table(report: dict, v1: str, v2: str) -> str:
    """Markdown: per version, attempt and success accuracy/ECE with 95 % intervals."""
    rows = ["| version | runs | attempt accuracy | attempt ECE | success accuracy | success ECE "
            "| class accuracy |", "|---|---|---|---|---|---|---|"]
    for name in (v1, v2):
        v = report["versions"][name]
        rows.append(f"| {name} | {v['success']['n']} | {_fmt(v['attempt'], 'accuracy')} | "
                    f"{_fmt(v['attempt'], 'ece')} | {_fmt(v['success'], 'accuracy')} | "
                    f"{_fmt(v['success'], 'ece')} | {_fmt(v['failure_class'], 'accuracy')} |")
    return "\n".join(rows)


def trained_tasks_truth(truth: Path, bundles: Path, held_out: set[str], out: Path) -> None:
    """Write ``truth`` less the runs of the ``held_out`` task ids (read from each run's
    ``truth.json``) to ``out``: the issue's "unseen seeds" targets are on the trained tasks,
    the held-out task has its own."""
    from bench.sim.truth_labels import find_truths

    task = {run_id: doc["task_id"] for run_id, doc in find_truths(bundles)}
    with truth.open(newline="") as fh:
        rows = list(csv.reader(fh))
    kept = [rows[0]] + [r for r in rows[1:] if task[r[0]] not in held_out]
    with out.open("w", newline="") as fh:
        csv.writer(fh).writerows(kept)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=400)
    ap.add_argument("--tasks", default=TASKS)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--judge", default="tiny-vision-streams", help="v1, the version trained from")
    ap.add_argument("--v2", help="name of the trained version (default JUDGE-qSEED); a name "
                    "already trained is never overwritten")
    ap.add_argument("--label-fraction", type=float, default=0.7)
    ap.add_argument("--hold-out-task", default="metaworld.pick_place_wall")
    ap.add_argument("--epochs", type=int, default=20)
    ap.add_argument("--patience", type=int, default=5)
    ap.add_argument("--lr", type=float, default=5e-4)
    ap.add_argument("--warmup-steps", type=int, default=60)
    ap.add_argument("--blank-images", type=float, default=0.5,
                    help="rcjudge train --blank-images: modality dropout while training")
    ap.add_argument("--blank-text", type=float, default=0.0,
                    help="rcjudge train --blank-text: the text's dropout while training")
    ap.add_argument("--travel-jitter", type=float, default=0.0,
                    help="rcjudge train --travel-jitter: the arm travel's scale drawn per "
                    "training question")
    ap.add_argument("--out", default="bench-out/judge-quality")
    args = ap.parse_args(argv)

    out = Path(args.out).absolute()
    out.mkdir(parents=True, exist_ok=True)
    log, db = out / "log.txt", f"sqlite:///{out / 'ledger.db'}"
    v1, v2 = args.judge, args.v2 or f"{args.judge}-q{args.seed}"
    times_path = out / "times.json"  # a resumed run keeps the seconds of the stages it skips
    times: dict[str, float] = json.loads(times_path.read_text()) if times_path.exists() else {}
    at = "2026-12-01T00:00:00Z"
    from judge.ensemble.version import load_judge_version
    from models.tiny import FOLDERS

    paths = [m.resolved_path() for m in load_judge_version(v1).models]
    for profile, folder in FOLDERS.items():  # a tiny judge's models, built when missing
        if any(p.endswith(f"/{folder}/{Path(p).name}") and not Path(p, "config.json").exists()
               for p in paths):
            _run(["models", "build-tiny", "--profile", profile], log)
    if not (out / "bundles").exists():
        times["sim"] = _run(["sim", "--tasks", args.tasks, "--n", str(args.n), "--out",
                             str(out / "bundles"), "--seed", str(args.seed), "--workers",
                             str(args.workers)], log)
    fresh_ledger = not (out / "ledger.db").exists()  # else v1's judgments are skipped
    seconds = _run(["batch", str(out / "bundles"), "--judge", v1, "--db", db], log)
    if fresh_ledger:
        times["judge v1"] = seconds
    if not (out / "labels.csv").exists():
        _run(["truth-labels", str(out / "bundles"), "--out", str(out / "labels.csv"),
              "--fraction", str(args.label_fraction), "--seed", str(args.seed),
              "--labeled-at", at], log)
        _run(["truth-labels", str(out / "bundles"), "--out", str(out / "truth.csv"),
              "--labeled-by", "physics", "--labeled-at", at, "--near-threshold"], log)
        _run(["labels", "import", str(out / "labels.csv"), "--db", db], log)
    config = out / f"{v2}.yaml"
    trained_now = not config.exists()
    if trained_now:
        times["train v2"] = _run(["train", "--from", v1, "--out", v2, "--config",
                                  str(config), "--db", db, "--epochs", str(args.epochs),
                                  "--patience", str(args.patience), "--lr", str(args.lr),
                                  "--warmup-steps", str(args.warmup_steps),
                                  "--seed", str(args.seed), "--hold-out-tasks",
                                  args.hold_out_task, "--blank-images",
                                  str(args.blank_images), "--blank-text",
                                  str(args.blank_text), "--travel-jitter",
                                  str(args.travel_jitter)], log)
    seconds = _run(["rejudge", "--from", v1, "--to", str(config), "--db", db], log)
    if trained_now or "judge v2" not in times:
        times["judge v2"] = seconds
    held_out = set(args.hold_out_task.split(",")) if args.hold_out_task else set()
    trained_tasks_truth(out / "truth.csv", out / "bundles", held_out,
                        out / "truth-trained-tasks.csv")
    t0 = time.perf_counter()
    _run(["eval", "--judge", v1, "--compare", str(config), "--labels",
          str(out / "truth.csv"), "--db", db, "--out", str(out / "eval")], log)
    times["eval"] = time.perf_counter() - t0
    _run(["eval", "--judge", v1, "--compare", str(config), "--labels",
          str(out / "truth-trained-tasks.csv"), "--db", db, "--out",
          str(out / "eval-trained-tasks")], log)
    trained = json.loads((out / "eval-trained-tasks" / "report.json").read_text())
    print("unseen seeds of the trained tasks (the held-out task left out; "
          "eval-trained-tasks/):")
    print(table(trained, v1, v2))
    report = json.loads((out / "eval" / "report.json").read_text())
    print(f"\nevery run neither version trained on, the held-out task ({args.hold_out_task}) "
          "included (eval/):")
    print(table(report, v1, v2))
    print("\nper task, success accuracy (v1 | v2):")
    for task, row in sorted(report["versions"][v2]["per_task"].items()):
        v1_row = report["versions"][v1]["per_task"].get(task, {})
        print(f"  {task:<34} {v1_row.get('success_accuracy')} | {row.get('success_accuracy')}"
              f"  (n {row.get('n')})")
    print("\nwall seconds: " + ", ".join(f"{k} {v:.0f}" for k, v in times.items()))
    times_path.write_text(json.dumps(times, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
