"""evaluation_run export: the ledgers of one judge version → the verdict engine's input table.

One row per run judged by the version, written as a hive-partitioned Parquet
dataset ``OUT/judge_version=<v>/part-0.parquet`` (the version URL-quoted).
Precedence: where a run has an operator label, its current label wins for
``attempt``, ``success`` and ``failure_reason`` (``label_source='operator'``);
otherwise the judgment's values are used (``label_source='judge'``). The two
confidences and the ``judge_*`` columns are always the judge's. ``failure_reason``
is the failure class, ``""`` when the row is a success or has no class.
``counts_against_policy`` is looked up in the taxonomy as it is at export time
(not the value stored at judge time), so promoting a class reaches history on
the next export; a success never counts, an empty or unknown class always does.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import quote

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.dataset as ds
import pyarrow.parquet as pq
import sqlalchemy as sa

from judge.ensemble.taxonomy import Taxonomy, load_taxonomy
from judge.ledgers import schema as S
from judge.ledgers.errors import LedgerError
from judge.ledgers.store import Ledger

#: Output columns and types; the first six are what ``verdict.tables`` requires.
SCHEMA = pa.schema([
    ("task_id", pa.string()), ("model_artifact", pa.string()), ("episode_id", pa.string()),
    ("success", pa.bool_()), ("failure_reason", pa.string()), ("cycle_sec", pa.float64()),
    ("attempt", pa.bool_()), ("attempt_confidence", pa.float64()),
    ("success_confidence", pa.float64()), ("judge_version", pa.string()),
    ("run_id", pa.string()), ("label_source", pa.string()),
    ("judge_attempt", pa.bool_()), ("judge_success", pa.bool_()),
    ("judge_failure_class", pa.string()), ("failure_class", pa.string()),
    ("counts_against_policy", pa.bool_()),
])


@dataclass(frozen=True)
class ExportSummary:
    """What an export wrote."""

    path: str
    judge_version: str
    rows: int
    operator_rows: int


def partition_dir(out: str | Path, judge_version: str) -> Path:
    """``OUT/judge_version=<quoted version>`` (hive style, as pyarrow quotes it)."""
    return Path(out) / f"judge_version={quote(judge_version, safe='')}"


def counts_against_policy(success: bool, failure_class: str | None,
                          taxonomy: Taxonomy) -> bool:
    """Whether a row counts against the policy: never a success; a failure unless its
    class is listed in ``taxonomy`` as exempt (an empty or unknown class counts)."""
    return not success and taxonomy.counts_against_policy(failure_class)


def evaluation_run_table(ledger: Ledger, judge_version: str,
                         taxonomy: Taxonomy | None = None) -> pa.Table:
    """The evaluation_run rows of ``judge_version``, sorted by task_id then run_id.

    ``counts_against_policy`` comes from ``taxonomy`` (default: the current
    ``configs/taxonomy.yaml``), applied to the class that won (label, else judgment).

    Raises:
        LedgerError: no judgment of that version exists (the known versions are named).
    """
    j, r, c = S.judgments, S.runs, S.current_operator_labels
    stmt = (sa.select(r.c.task_id, r.c.policy_name, r.c.policy_version, r.c.cycle_sec,
                      j.c.run_id, j.c.attempt, j.c.success, j.c.failure_class,
                      j.c.attempt_confidence, j.c.success_confidence,
                      c.c.label_id, c.c.attempt.label("l_attempt"),
                      c.c.success.label("l_success"), c.c.failure_class.label("l_class"))
            .select_from(j.join(r, r.c.run_id == j.c.run_id)
                         .outerjoin(c, c.c.run_id == j.c.run_id))
            .where(j.c.judge_version == judge_version, r.c.owner == ledger.owner)
            .order_by(r.c.task_id, j.c.run_id))
    with ledger.engine.connect() as conn:
        rows = conn.execute(stmt).all()
    if not rows:
        known = ", ".join(ledger.judge_versions()) or "none"
        raise LedgerError(f"--judge {judge_version!r}: no judgments of this version in the "
                          f"ledger (versions with judgments: {known})")
    taxonomy = taxonomy or load_taxonomy()
    cols: dict[str, list] = {f.name: [] for f in SCHEMA}
    for row in rows:
        operator = row.label_id is not None
        attempt = row.l_attempt if operator else row.attempt
        success = row.l_success if operator else row.success
        cls = row.l_class if operator else row.failure_class
        values = {
            "task_id": row.task_id, "model_artifact": f"{row.policy_name}@{row.policy_version}",
            "episode_id": row.run_id, "success": success,
            "failure_reason": "" if success or cls is None else cls,
            "cycle_sec": row.cycle_sec, "attempt": attempt,
            "attempt_confidence": row.attempt_confidence,
            "success_confidence": row.success_confidence, "judge_version": judge_version,
            "run_id": row.run_id, "label_source": "operator" if operator else "judge",
            "judge_attempt": row.attempt, "judge_success": row.success,
            "judge_failure_class": row.failure_class, "failure_class": cls,
            "counts_against_policy": counts_against_policy(success, cls, taxonomy),
        }
        for name, value in values.items():
            cols[name].append(value)
    return pa.table(cols, schema=SCHEMA)


def export_evaluation_run(ledger: Ledger, judge_version: str, out: str | Path) -> ExportSummary:
    """Write ``OUT/judge_version=<v>/part-0.parquet``, replacing an earlier export of ``v``.

    The file is written beside its final name and renamed, so a reader never
    sees half a file. Other versions' partitions under ``OUT`` are left alone.
    """
    table = evaluation_run_table(ledger, judge_version)
    folder = partition_dir(out, judge_version)
    folder.mkdir(parents=True, exist_ok=True)
    final = folder / "part-0.parquet"
    tmp = folder / ".part-0.parquet.tmp"
    pq.write_table(table, tmp)
    os.replace(tmp, final)
    operator = sum(1 for v in table.column("label_source").to_pylist() if v == "operator")
    return ExportSummary(path=str(final), judge_version=judge_version, rows=table.num_rows,
                         operator_rows=operator)


def read_evaluation_run(out: str | Path, judge_version: str | None = None) -> pa.Table:
    """Read an export folder back (every version, or one).

    Each part file also carries ``judge_version`` as a column, so a single file
    stands alone (the verdict engine reads one file). Read the folder with
    ``pyarrow.dataset.dataset(OUT, partitioning="hive")`` as here: plain
    ``pyarrow.parquet.read_table(OUT)`` infers the partition as a dictionary
    column and refuses to merge it with the string column in the files.
    """
    table = ds.dataset(str(out), format="parquet", partitioning="hive").to_table()
    if judge_version is not None:
        table = table.filter(pc.equal(table.column("judge_version"), judge_version))
    return table
