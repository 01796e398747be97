"""Input edge of the verdict engine: read and normalise the three tables.

``evaluation_run``, ``task_spec`` and ``dataset_index`` come as ``.parquet``,
``.csv`` or ``.jsonl`` (JSON lines with explicit ``null``s) or as Arrow tables.
Columns the rules use are cast to one type each; every missing column of a
table is reported at once. Extra columns are kept: evidence may cite any real
column, and check 12 compares against the columns actually present. The
optional ``evaluation_run.counts_against_policy`` (written by the ledger
export) is cast to bool when present: a row with ``success`` false and that
flag false is an exempt failure and leaves the task's
evaluation rows; without the column every row counts.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pacsv
import pyarrow.json as pajson
import pyarrow.parquet as pq

from verdict.errors import VerdictInputError

#: Columns each table must have, with the type the rules read them as.
COLUMNS: dict[str, dict[str, pa.DataType]] = {
    "evaluation_run": {
        "task_id": pa.string(), "model_artifact": pa.string(), "episode_id": pa.string(),
        "success": pa.bool_(), "failure_reason": pa.string(), "cycle_sec": pa.float64(),
    },
    "task_spec": {
        "task_id": pa.string(), "required_skill": pa.string(),
        "target_success_rate": pa.float64(), "top_reason_share_limit": pa.float64(),
        "max_cycle_sec": pa.float64(), "min_episode_count": pa.int64(),
    },
    "dataset_index": {
        "task_id": pa.string(), "required_skill": pa.string(), "episode_count": pa.int64(),
        "capture_site": pa.string(), "robot_hand_type": pa.string(),
    },
}
TABLES: tuple[str, ...] = tuple(COLUMNS)
#: The optional column that marks a failure as not the policy's (env/hardware/operator).
EXEMPT_FLAG = "counts_against_policy"
#: Columns a table may have, cast when present; absent means every row counts.
OPTIONAL: dict[str, dict[str, pa.DataType]] = {
    "evaluation_run": {EXEMPT_FLAG: pa.bool_()}, "task_spec": {}, "dataset_index": {},
}
#: String columns where an empty string means an empty cell (CSV writes both the same).
#: ``failure_reason`` is left as is: the rules treat "" and null alike there.
_BLANK_IS_NULL: dict[str, tuple[str, ...]] = {
    "evaluation_run": ("model_artifact",),
    "task_spec": ("required_skill",),
    "dataset_index": ("required_skill", "capture_site", "robot_hand_type"),
}


@dataclass(frozen=True)
class Inputs:
    """The three normalised tables of one round, plus the artifact being judged."""

    evaluation_run: pa.Table
    task_spec: pa.Table
    dataset_index: pa.Table
    artifact: str

    def columns(self, table: str) -> frozenset[str]:
        """Column names actually present in ``table`` (what evidence may cite)."""
        return frozenset(getattr(self, table).column_names)


def read_table(path: str | Path, table: str) -> pa.Table:
    """Read one input table from ``.parquet``, ``.csv`` or ``.jsonl`` and normalise it.

    Raises:
        VerdictInputError: unknown suffix, unreadable file, or missing columns.
    """
    path = Path(path)
    if table not in COLUMNS:
        raise VerdictInputError(f"unknown table {table!r}: expected one of {', '.join(TABLES)}")
    if not path.is_file():
        raise VerdictInputError(f"{table}: file {path} does not exist")
    types = COLUMNS[table]
    suffix = path.suffix.lower()
    try:
        if suffix == ".parquet":
            raw = pq.read_table(path)
        elif suffix == ".csv":
            raw = pacsv.read_csv(path, convert_options=pacsv.ConvertOptions(
                column_types={**types, **OPTIONAL[table]}, strings_can_be_null=True,
                true_values=["true", "True", "TRUE", "1"],
                false_values=["false", "False", "FALSE", "0"]))
        elif suffix in (".jsonl", ".ndjson"):
            schema = pa.schema(list(types.items()))
            raw = pajson.read_json(path, parse_options=pajson.ParseOptions(
                explicit_schema=schema, unexpected_field_behavior="infer"))
        else:
            raise VerdictInputError(
                f"{table}: {path} has suffix {suffix!r}; expected .parquet, .csv or .jsonl")
    except pa.ArrowInvalid as exc:
        raise VerdictInputError(f"{table}: cannot read {path}: {exc}") from exc
    return normalise(raw, table, origin=str(path))


def normalise(raw: pa.Table, table: str, origin: str = "<table>") -> pa.Table:
    """Cast the rule columns of ``raw`` to their types; keep extra columns as they are.

    Raises:
        VerdictInputError: naming every missing column at once, or a column whose
            values cannot be cast (e.g. ``episode_count`` of ``12.5``).
    """
    types = COLUMNS[table]
    missing = [name for name in types if name not in raw.column_names]
    if missing:
        raise VerdictInputError(
            f"{table} ({origin}): missing {len(missing)} column(s): {', '.join(missing)}")
    cols = []
    for name in raw.column_names:
        col = raw.column(name)
        want = types.get(name) or OPTIONAL[table].get(name)
        if want is not None and col.type != want:
            col = _cast(col, want, table, name, origin)
        cols.append(col)
    out = pa.table(cols, names=raw.column_names)
    for name in _BLANK_IS_NULL[table]:
        col = out.column(name)
        if col.num_chunks and pc.any(pc.equal(col, "")).as_py():
            out = out.set_column(out.column_names.index(name), name,
                                 pc.if_else(pc.equal(col, ""), pa.scalar(None, pa.string()), col))
    _validate(out, table, origin)
    return out


def _cast(col: pa.ChunkedArray, want: pa.DataType, table: str, name: str,
          origin: str) -> pa.ChunkedArray:
    if pa.types.is_null(col.type):
        return pa.chunked_array([pa.nulls(len(col), want)])
    try:
        return pc.cast(col, want, safe=True)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as exc:
        raise VerdictInputError(
            f"{table} ({origin}): column {name!r} of type {col.type} cannot be read as "
            f"{want}: {exc}") from exc


def _validate(tab: pa.Table, table: str, origin: str) -> None:
    """Reject values the rules cannot mean: duplicate keys, null ids, cycle_sec ≤ 0."""
    key = tab.column("task_id")
    if key.null_count:
        raise VerdictInputError(f"{table} ({origin}): {key.null_count} row(s) with empty task_id")
    if table in ("task_spec", "dataset_index") and tab.num_rows:
        counts = pc.value_counts(key)
        dup = pc.filter(counts.field("values"), pc.greater(counts.field("counts"), 1))
        if len(dup):
            raise VerdictInputError(
                f"{table} ({origin}): task_id must be unique, repeated: "
                + ", ".join(map(str, dup.to_pylist()[:5])))
    if table == "evaluation_run" and tab.num_rows:
        bad = pc.sum(pc.less_equal(tab.column("cycle_sec"), 0)).as_py() or 0
        if bad:
            raise VerdictInputError(
                f"{table} ({origin}): {bad} row(s) with cycle_sec ≤ 0; expected seconds > 0")
    for name in ("min_episode_count", "episode_count"):
        if name in COLUMNS[table] and tab.num_rows:
            neg = pc.sum(pc.less(tab.column(name), 0)).as_py() or 0
            if neg:
                raise VerdictInputError(f"{table} ({origin}): {neg} row(s) with {name} < 0")


def load_inputs(evaluation_run: str | Path | pa.Table, task_spec: str | Path | pa.Table,
                dataset_index: str | Path | pa.Table, artifact: str) -> Inputs:
    """Read or normalise the three tables of one round.

    Args:
        evaluation_run: path or Arrow table, one evaluated episode a row.
        task_spec: path or Arrow table, one task's targets a row.
        dataset_index: path or Arrow table, one task's collected data a row.
        artifact: the ``model_artifact`` judged in this round (e.g. ``RLDX-1-rc7``).
    """
    if not artifact:
        raise VerdictInputError("artifact: empty; expected the model_artifact of this round")
    given = {"evaluation_run": evaluation_run, "task_spec": task_spec,
             "dataset_index": dataset_index}
    tabs = {name: (normalise(src, name) if isinstance(src, pa.Table) else read_table(src, name))
            for name, src in given.items()}
    return Inputs(artifact=artifact, **tabs)
