"""Judge quality on physics truth: the v1 -> v2 loop end to end, timed stage by stage.

``python -m bench.judge_quality --n 600 --out bench-out/judge-quality [--workers 2]
[--judge tiny-vision-streams]``:

1. ``rcjudge sim``: N Meta-World rollouts over the tasks, cameras drawn per rollout;
2. ``rcjudge batch``: the untrained judge (v1, default ``tiny-vision-streams``) judges them all
   (a tiny judge's models are built on first use);
3. ``rcjudge truth-labels`` + ``labels import``: operator labels (from the physics truth)
   for ``--label-fraction`` of the runs;
4. ``rcjudge train``: v2 from v1's labelled history, ``--hold-out-task`` never used, each
   training question shown black frames with probability ``--blank-images`` (0.5);
5. ``rcjudge rejudge``: v2 judges every run beside v1's rows;
6. ``rcjudge eval --compare``: both versions on the runs neither trained on, against the
   physics truth of every run, with bootstrap intervals, per task, near-threshold slice;
   once on the unseen seeds of the trained tasks (``truth-trained-tasks.csv``: the issue's
   success, ECE, attempt and class targets), once with the held-out task too, and once on
   the held-out task alone (``truth-held-out.csv``: its success accuracy per true outcome).

``--pool N`` adds N more rollouts (``--pool-seed``; of ``--pool-tasks``, default the trained
tasks, never a held-out one; ``--pool-perturbation`` forces one kind; each rollout's length
drawn from [``--pool-min-duration``, 3] s, so the time limit cuts some experts mid-task)
under ``pool/``, judged by v1 and labelled in full: training data only. They are not in
``truth.csv``, so every figure is on the same runs as without them.

``--average`` (with ``--split-seed S`` and two or more training seeds: one split for all)
then makes ``V2-avg-S1-S2...`` (named by the seeds it averages) with ``rcjudge average``,
each of its models the mean of the seeds' checkpoints, and scores it the same way
(``eval/V2-avg-…/``, ``eval-trained-tasks/V2-avg-…/``).

``--train-seeds 1,2,3`` repeats 4-6 once per training seed (versions ``V2-s1``, ``V2-s2``,
...; the split, the data order and the initial weights change, the labelled runs do not:
they are drawn with ``--seed``), writes each one's reports under ``eval/V2-sS/`` and
``eval-trained-tasks/V2-sS/``, and prints the spread: one training's held-out figure is one
draw from a wide one (docs/judge-quality.md).

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


def spread(results: dict[str, tuple[dict, dict, dict | None]], hold_out_task: str,
           apart: tuple[str, ...] = ()) -> str:
    """Markdown: the issue's figures for each trained version (one per training seed), with
    their mean and range. ``results``: version name -> (trained tasks' eval report, every
    unseen run's eval report, the held-out task's or None); the versions named in ``apart``
    (the seeds' average) get a column but no part in the mean and range."""
    def figures(name: str, trained: dict, report: dict,
                held: dict | None) -> dict[str, float | None]:
        t, a = trained["versions"][name], report["versions"][name]
        out = {"trained tasks: success": t["success"]["accuracy"],
               "trained tasks: success ECE": t["success"]["ece"],
               "trained tasks: attempt": t["attempt"]["accuracy"],
               "trained tasks: class": t["failure_class"]["accuracy"],
               "every unseen run: success": a["success"]["accuracy"]}
        for task, row in sorted(a["per_task"].items()):
            mark = " (held out)" if task in hold_out_task.split(",") else ""
            out[f"{task}{mark}: success"] = row["success_accuracy"]
        for outcome, row in (held["versions"][name]["per_outcome"] if held else {}).items():
            out[f"held out, {outcome} ({row['n']}): success"] = row["success_accuracy"]
        return out

    per = {name: figures(name, *r) for name, r in results.items()}
    names = list(per)
    rows = [f"| figure | {' | '.join(names)} | mean (lowest - highest) |",
            "|---|" + "---|" * (len(names) + 1)]
    for key in per[names[0]]:
        vals = [per[n].get(key) for n in names]
        got = [per[n].get(key) for n in names if n not in apart and per[n].get(key) is not None]
        cells = " | ".join("–" if v is None else f"{v:.3f}" for v in vals)
        summary = (f"{sum(got) / len(got):.3f} ({min(got):.3f} - {max(got):.3f})" if got
                   else "–")
        rows.append(f"| {key} | {cells} | {summary} |")
    return "\n".join(rows)


def average_name(v2: str, seeds: list[int]) -> str:
    """The seeds' average, named by them: ``average_name("v", [0, 1])`` -> ``"v-avg-0-1"``."""
    return f"{v2}-avg-{'-'.join(map(str, seeds))}"


def trained_tasks(tasks: str, held_out: set[str]) -> str:
    """The comma list of task keys ``tasks`` less those whose task id is in ``held_out``:
    ``trained_tasks("pick-place,pick-place-wall", {"metaworld.pick_place_wall"})`` ->
    ``"pick-place"``."""
    from judge.sim.tasks import resolve_tasks

    return ",".join(t.key for t in resolve_tasks(tasks) if t.task_id not in held_out)


def split_truth(truth: Path, bundles: Path, held_out: set[str], trained_out: Path,
                held_out_out: Path) -> None:
    """Write ``truth``'s runs of the trained tasks to ``trained_out`` and those of the
    ``held_out`` task ids to ``held_out_out`` (each run's task read from its ``truth.json``):
    the issue's "unseen seeds" targets are on the trained tasks, the held-out task has its
    own."""
    from judge.sim.truth_labels import find_truths

    task = {run_id: doc["task_id"] for run_id, doc in find_truths(bundles)}
    with truth.open(newline="") as fh:
        head, *rows = list(csv.reader(fh))
    for out, held in ((trained_out, False), (held_out_out, True)):
        with out.open("w", newline="") as fh:
            csv.writer(fh).writerows([head] + [r for r in rows
                                               if (task[r[0]] in held_out) == held])


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=400)
    ap.add_argument("--tasks", default=TASKS)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--width", type=int, default=160, help="rcjudge sim --width: frame width "
                    "(px); 320 with --height 240 for tiny-vision-224-streams")
    ap.add_argument("--height", type=int, default=120, help="rcjudge sim --height (px)")
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
    ap.add_argument("--train-seeds", type=lambda v: [int(x) for x in v.split(",")],
                    help="comma list: one v2 per training seed (NAME-sSEED), each on the same "
                    "labels (drawn with --seed), and their spread (default: --seed alone)")
    ap.add_argument("--split-seed", type=int, help="rcjudge train --split-seed: one split for "
                    "every training seed (default: each training seed splits its own way)")
    ap.add_argument("--average", action="store_true", help="also rcjudge average the "
                    "training seeds' versions (NAME-avg-S1-S2-...: each model the mean of their "
                    "checkpoints) and score it; needs --split-seed and two or more seeds")
    ap.add_argument("--pool", type=int, default=0, metavar="N",
                    help="N more labelled rollouts of the trained tasks, of drawn lengths, "
                    "for training only (default 0)")
    ap.add_argument("--pool-seed", type=int, default=2, help="rcjudge sim --seed of the pool")
    ap.add_argument("--pool-tasks", help="the pool's tasks (default: the trained ones)")
    ap.add_argument("--pool-perturbation", help="rcjudge sim --perturbation of the pool "
                    "(default: drawn, as in the rest)")
    ap.add_argument("--pool-min-duration", type=float, default=1.0,
                    help="rcjudge sim --min-duration of the pool (s)")
    ap.add_argument("--out", default="bench-out/judge-quality")
    args = ap.parse_args(argv)

    held_out = set(args.hold_out_task.split(",")) if args.hold_out_task else set()
    from judge.sim.errors import SimError

    try:
        pool_tasks = trained_tasks(args.pool_tasks or args.tasks, held_out)
    except SimError as exc:
        ap.error(str(exc))
    if args.pool_tasks and pool_tasks != trained_tasks(args.pool_tasks, set()):
        ap.error(f"--pool-tasks {args.pool_tasks}: names a held-out task "
                 f"({args.hold_out_task}); the pool is training data")
    if args.average and (args.split_seed is None or len(args.train_seeds or []) < 2):
        ap.error("--average: needs --split-seed and two or more --train-seeds (the versions "
                 "it averages share one split)")
    out = Path(args.out).absolute()
    out.mkdir(parents=True, exist_ok=True)
    log, db = out / "log.txt", f"sqlite:///{out / 'ledger.db'}"
    v1, v2 = args.judge, args.v2 or f"{args.judge}-q{args.seed}"
    times_path = out / "times.json"  # a resumed run keeps the seconds of the stages it skips
    times: dict[str, float] = json.loads(times_path.read_text()) if times_path.exists() else {}
    at = "2026-12-01T00:00:00Z"
    if not (out / "bundles").exists():
        times["sim"] = _run(["sim", "--tasks", args.tasks, "--n", str(args.n), "--out",
                             str(out / "bundles"), "--seed", str(args.seed), "--workers",
                             str(args.workers), "--width", str(args.width), "--height",
                             str(args.height)], log)
    if args.pool and not (out / "pool").exists():
        forced = ["--perturbation", args.pool_perturbation] if args.pool_perturbation else []
        times["sim pool"] = _run(["sim", "--tasks", pool_tasks, "--n", str(args.pool), "--out",
                                  str(out / "pool"), "--seed", str(args.pool_seed),
                                  "--workers", str(args.workers), "--min-duration",
                                  str(args.pool_min_duration), "--width", str(args.width),
                                  "--height", str(args.height), *forced], log)
    fresh_ledger = not (out / "ledger.db").exists()  # else v1's judgments are skipped
    seconds = _run(["batch", str(out / "bundles"), "--judge", v1, "--db", db], log)
    if fresh_ledger:
        times["judge v1"] = seconds
    if args.pool and not (out / "pool-labels.csv").exists():
        times["judge v1 pool"] = _run(["batch", str(out / "pool"), "--judge", v1, "--db", db],
                                      log)
        _run(["truth-labels", str(out / "pool"), "--out", str(out / "pool-labels.csv"),
              "--labeled-at", at], log)
        _run(["labels", "import", str(out / "pool-labels.csv"), "--db", db], log)
    if not (out / "labels.csv").exists():
        _run(["truth-labels", str(out / "bundles"), "--out", str(out / "labels.csv"),
              "--fraction", str(args.label_fraction), "--seed", str(args.seed),
              "--labeled-at", at], log)
        _run(["truth-labels", str(out / "bundles"), "--out", str(out / "truth.csv"),
              "--labeled-by", "physics", "--labeled-at", at, "--near-threshold"], log)
        _run(["labels", "import", str(out / "labels.csv"), "--db", db], log)
    split_truth(out / "truth.csv", out / "bundles", held_out, out / "truth-trained-tasks.csv",
                out / "truth-held-out.csv")
    seeds = args.train_seeds or [args.seed]

    def score(name: str, config: Path, sub: str,
              what: str) -> tuple[dict, dict, dict | None]:
        """Re-judge every run with ``name``, eval it beside v1 both ways, print the tables."""
        seconds = _run(["rejudge", "--from", v1, "--to", str(config), "--db", db], log)
        if f"judge {name}" not in times:
            times[f"judge {name}"] = seconds
        t0 = time.perf_counter()
        _run(["eval", "--judge", v1, "--compare", str(config), "--labels",
              str(out / "truth.csv"), "--db", db, "--out", f"{out}/eval{sub}"], log)
        times[f"eval {name}"] = time.perf_counter() - t0
        _run(["eval", "--judge", v1, "--compare", str(config), "--labels",
              str(out / "truth-trained-tasks.csv"), "--db", db, "--out",
              f"{out}/eval-trained-tasks{sub}"], log)
        held = None
        if held_out:
            _run(["eval", "--judge", v1, "--compare", str(config), "--labels",
                  str(out / "truth-held-out.csv"), "--db", db, "--out",
                  f"{out}/eval-held-out{sub}"], log)
            held = json.loads(Path(f"{out}/eval-held-out{sub}/report.json").read_text())
        trained = json.loads(Path(f"{out}/eval-trained-tasks{sub}/report.json").read_text())
        report = json.loads(Path(f"{out}/eval{sub}/report.json").read_text())
        print(f"{name} ({what}): unseen seeds of the trained tasks (the held-out "
              f"task left out; eval-trained-tasks{sub}/):")
        print(table(trained, v1, name))
        print(f"\nevery run neither version trained on, the held-out task "
              f"({args.hold_out_task}) included (eval{sub}/):")
        print(table(report, v1, name))
        print("\nper task, success accuracy (v1 | v2):")
        for task, row in sorted(report["versions"][name]["per_task"].items()):
            v1_row = report["versions"][v1]["per_task"].get(task, {})
            print(f"  {task:<34} {v1_row.get('success_accuracy')} | "
                  f"{row.get('success_accuracy')}  (n {row.get('n')})")
        if held:
            print(f"\nthe held-out task ({args.hold_out_task}), success accuracy per true "
                  f"outcome (v1 | v2; eval-held-out{sub}/):")
            for o, row in held["versions"][name]["per_outcome"].items():
                print(f"  {o:<34} {held['versions'][v1]['per_outcome'][o]['success_accuracy']}"
                      f" | {row['success_accuracy']}  (n {row['n']})")
        print(flush=True)
        times_path.write_text(json.dumps(times, indent=2) + "\n")
        return trained, report, held

    results = {}
    configs = []
    for seed in seeds:
        name = v2 if len(seeds) == 1 else f"{v2}-s{seed}"
        # one seed: eval/ and eval-trained-tasks/; several: a folder per seed in each
        sub = "" if len(seeds) == 1 else f"/{name}"
        config = out / f"{name}.yaml"
        configs.append(config)
        if not config.exists():
            times[f"train {name}"] = _run(
                ["train", "--from", v1, "--out", name, "--config", str(config), "--db", db,
                 "--epochs", str(args.epochs), "--patience", str(args.patience), "--lr",
                 str(args.lr), "--warmup-steps", str(args.warmup_steps), "--seed", str(seed),
                 "--hold-out-tasks", args.hold_out_task, "--blank-images",
                 str(args.blank_images), "--blank-text", str(args.blank_text),
                 "--travel-jitter", str(args.travel_jitter),
                 *(["--split-seed", str(args.split_seed)] if args.split_seed is not None
                   else [])], log)
        results[name] = score(name, config, sub, f"training seed {seed}")
    if args.average:
        name = average_name(v2, seeds)
        config = out / f"{name}.yaml"
        if not config.exists():
            times[f"average {name}"] = _run(
                ["average", "--versions", ",".join(map(str, configs)), "--out", name,
                 "--config", str(config), "--db", db], log)
        results[name] = score(name, config, f"/{name}",
                              f"the mean of training seeds {', '.join(map(str, seeds))}")
    if len(seeds) > 1:
        print(f"over the {len(seeds)} training seeds ({', '.join(map(str, seeds))})"
              f"{' and their average' if args.average else ''}: mean (lowest - highest)")
        apart = (average_name(v2, seeds),) if args.average else ()
        print(spread(results, args.hold_out_task, apart))
    print("wall seconds: " + ", ".join(f"{k} {v:.0f}" for k, v in times.items()))
    times_path.write_text(json.dumps(times, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
