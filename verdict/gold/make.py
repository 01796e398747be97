"""Writes the gold set's tables from the compact task list in :mod:`verdict.gold.tasks`.

``python -m verdict.gold.make [--seed-only] [DIR]`` expands every task into raw rows:
``evaluation_run.jsonl`` (explicit nulls), ``task_spec.csv``,
``dataset_index.csv``, ``answers.jsonl`` (expected decision, fields, origin,
one-line reason) and ``manifest.json``. The committed files under
``verdict/gold/`` are this script's output; a unit test regenerates them and
compares byte for byte.
"""

from __future__ import annotations

import csv
import io
import json
import sys
from pathlib import Path
from typing import Any

from verdict.gold.tasks import ARTIFACT, OTHER_ARTIFACT, TASKS, GoldTask
from verdict.model import ENGINE_VERSION

HERE = Path(__file__).resolve().parent
SPEC_COLS = ("task_id", "required_skill", "target_success_rate", "top_reason_share_limit",
             "max_cycle_sec", "min_episode_count")
DS_COLS = ("task_id", "required_skill", "episode_count", "capture_site", "robot_hand_type")


def episode_rows(task: GoldTask) -> list[dict[str, Any]]:
    """Raw evaluation rows of one task: ``(success, failure_reason, cycle_sec)`` each."""
    rows = []
    for i, (success, reason, cycle) in enumerate(task.episodes, start=1):
        rows.append({"task_id": task.task_id, "model_artifact": task.artifact or ARTIFACT,
                     "episode_id": f"{task.task_id}-ep{i:03d}", "success": success,
                     "failure_reason": reason, "cycle_sec": cycle})
    return rows


def _csv(rows: list[dict[str, Any]], cols: tuple[str, ...]) -> str:
    buf = io.StringIO()
    writer = csv.DictWriter(buf, fieldnames=cols, lineterminator="\n")
    writer.writeheader()
    for row in rows:
        writer.writerow({k: "" if row.get(k) is None else row[k] for k in cols})
    return buf.getvalue()


def render(tasks: tuple[GoldTask, ...] = TASKS) -> dict[str, str]:
    """File name -> text of every gold file."""
    evals = [row for t in tasks for row in episode_rows(t)]
    spec = [{"task_id": t.task_id, **t.spec} for t in tasks]
    ds = [{"task_id": t.task_id, **t.dataset} for t in tasks if t.dataset is not None]
    answers = [{"task_id": t.task_id, "origin": t.origin, "expected_verdict": t.verdict,
                "expected_blocked_cause": t.cause, "expected_fields": t.fields,
                "reason": t.reason} for t in tasks]
    origins = {o: sum(t.origin == o for t in tasks) for o in ("seed", "base", "augmented")}
    manifest = {
        "artifact": ARTIFACT, "other_artifact": OTHER_ARTIFACT, "tasks": len(tasks),
        "origins": origins, "made_with_engine": ENGINE_VERSION,
        "decided_by": "derived by hand from spec/verdict.md and the Korean original; "
                      "not chosen in a researchers' meeting",
        "files": {"evaluation_run": "evaluation_run.jsonl", "task_spec": "task_spec.csv",
                  "dataset_index": "dataset_index.csv", "answers": "answers.jsonl"},
    }
    jl = "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in evals)
    return {
        "evaluation_run.jsonl": jl,
        "task_spec.csv": _csv(spec, SPEC_COLS),
        "dataset_index.csv": _csv(ds, DS_COLS),
        "answers.jsonl": "".join(json.dumps(a, ensure_ascii=False) + "\n" for a in answers),
        "manifest.json": json.dumps(manifest, ensure_ascii=False, indent=2) + "\n",
    }


def write(out: Path = HERE, tasks: tuple[GoldTask, ...] = TASKS) -> list[Path]:
    """Write the gold files into ``out``; returns their paths."""
    out.mkdir(parents=True, exist_ok=True)
    paths = []
    for name, text in render(tasks).items():
        path = out / name
        path.write_text(text, encoding="utf-8")
        paths.append(path)
    return paths


def main(argv: list[str]) -> None:
    """``[--seed-only] [DIR]``: all 30 tasks, or only the seven seed tasks, into DIR."""
    from verdict.gold.tasks import SEED

    seed_only = "--seed-only" in argv
    rest = [a for a in argv if a != "--seed-only"]
    for p in write(Path(rest[0]) if rest else HERE, SEED if seed_only else TASKS):
        print(p)


if __name__ == "__main__":
    main(sys.argv[1:])
