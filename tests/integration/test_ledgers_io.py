"""Ledger input and output on SQLite and PostgreSQL: operator-label import (all rows
or none, every bad row named) and the evaluation_run export read by the verdict engine.

Fixtures and record factories come from ``test_ledgers.py``.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import test_ledgers
from test_ledgers import T0, label, make_judgment, make_run

from judge.ensemble.taxonomy import load_taxonomy
from judge.ledgers import LabelImportError, Ledger, LedgerError
from judge.ledgers.export import export_evaluation_run, read_evaluation_run
from judge.ledgers.labels import import_labels
from rcjudge.cli import main

db = test_ledgers.db  # the same fixtures: SQLite, and PostgreSQL in its own schema
ledger = test_ledgers.ledger
HEADER = "run_id,attempt,success,failure_class,labeled_by,labeled_at\n"


@pytest.fixture
def three_runs(ledger: Ledger) -> Ledger:
    for name in ("run-001", "run-002", "run-003"):
        run = make_run(name)
        ledger.record(run, make_judgment(run))
    return ledger


# --- label import ---------------------------------------------------------------------------
def test_csv_labels_import_with_every_boolean_spelling_and_twice_is_a_noop(three_runs, tmp_path):
    f = tmp_path / "labels.csv"
    f.write_text(HEADER
                 + "run-001,TRUE,no,grasp.slip,op-kim,2026-09-16T12:01:00Z\n"
                 + "\n"
                 + 'run-002,Yes,1,,"op-lee\n(night shift)",2026-09-16 21:30:00+09:00\n'
                 + "run-003,0,False,,op-kim,2026-09-16T12:03:00\n")
    summary = import_labels(three_runs, f)
    assert (summary.rows, summary.imported, summary.already_present, summary.runs) == (3, 3, 0, 3)
    current = {k: v.label for k, v in three_runs.current_labels().items()}
    assert [(lb.attempt, lb.success, lb.failure_class, lb.labeled_by, lb.labeled_at)
            for _, lb in sorted(current.items())] == [
        (True, False, "grasp.slip", "op-kim", T0.replace(minute=1)),
        (True, True, None, "op-lee\n(night shift)", T0.replace(minute=30)),
        (False, False, None, "op-kim", T0.replace(minute=3)),  # no offset: UTC
    ]
    again = import_labels(three_runs, f)
    assert (again.imported, again.already_present) == (0, 3)
    assert three_runs.counts()["operator_labels"] == 3


def test_jsonl_labels_import(three_runs, tmp_path):
    f = tmp_path / "labels.jsonl"
    rows = [{"run_id": "run-001", "attempt": True, "success": False, "failure_class": "grasp.slip",
             "labeled_by": "op-kim", "labeled_at": "2026-09-16T12:01:00Z"},
            {"run_id": "run-002", "attempt": 1, "success": "YES", "failure_class": None,
             "labeled_by": "op-kim", "labeled_at": "2026-09-16T12:02:00+00:00"}]
    f.write_text("\n".join(json.dumps(r) for r in rows) + "\n\n")
    s = import_labels(three_runs, f)
    assert (s.rows, s.imported, s.runs) == (2, 2, 2)
    assert three_runs.current_labels()["run-002"].label.success is True


def test_a_csv_with_errors_imports_nothing_and_names_every_bad_row(three_runs, tmp_path):
    f = tmp_path / "bad.csv"
    f.write_text(HEADER
                 + "run-001,TRUE,no,grasp.slip,op-kim,2026-09-16T12:01:00Z\n"       # 2 ok
                 + "run-404,yes,No,,op-kim,2026-09-16T12:02:00Z\n"                  # 3
                 + "run-002,maybe,false,grasp.slip,op-kim,2026-09-16T12:03:00Z\n"   # 4
                 + "run-002,1,0,grasp.slip,op-kim,yesterday\n"                      # 5
                 + "run-003,1,1,grasp.slip,op-kim,2026-09-16T12:05:00\n"            # 6
                 + "run-003,1,1,,,2026-09-16T12:06:00\n"                            # 7
                 + "run-003,1,1\n"                                                  # 8
                 + "run-001,true,0,grasp.slip,op-kim,2026-09-16T12:01:00+00:00\n")  # 9
    with pytest.raises(LabelImportError) as info:
        import_labels(three_runs, f)
    assert [str(e) for e in info.value.errors] == [
        "line 3: run_id: unknown run 'run-404': not in the runs ledger",
        "line 4: attempt: 'maybe' is not a boolean; expected true/false/1/0/yes/no",
        "line 5: labeled_at: 'yesterday' is not an ISO 8601 timestamp (e.g. 2026-09-16T14:02:00Z)",
        "line 6: failure_class: 'grasp.slip' given for a successful run; expected empty when "
        "success is true",
        "line 7: labeled_by: empty or not text (''); expected a non-empty string",
        "line 8: row: 3 value(s), expected 6",
        "line 9: row: duplicate of line 2 (same run_id, labeled_by, labeled_at)",
    ]
    assert str(info.value).splitlines()[0] == f"{f}: 7 error(s), nothing imported"
    assert three_runs.counts()["operator_labels"] == 0


def test_line_numbers_count_the_lines_of_a_quoted_multiline_value(three_runs, tmp_path):
    f = tmp_path / "multi.csv"
    f.write_text(HEADER + 'run-001,1,0,,"op-lee\n(night\nshift)",2026-09-16T12:01:00Z\n'
                 + "run-002,sometimes,0,,op-kim,2026-09-16T12:01:00Z\n")
    with pytest.raises(LabelImportError) as info:
        import_labels(three_runs, f)
    assert [str(e) for e in info.value.errors] == [
        "line 5: attempt: 'sometimes' is not a boolean; expected true/false/1/0/yes/no"]


def test_a_csv_header_with_a_missing_or_unknown_column(three_runs, tmp_path):
    f = tmp_path / "cols.csv"
    f.write_text("run_id,attempt,success,labeled_by,labeled_at,note\n"
                 "run-001,1,0,op-kim,2026-09-16T12:01:00Z,hm\n")
    with pytest.raises(LabelImportError) as info:
        import_labels(three_runs, f)
    assert [str(e) for e in info.value.errors] == [
        "line 1: header: missing column(s) failure_class; unknown column(s) note (expected "
        "run_id, attempt, success, failure_class, labeled_by, labeled_at)"]
    empty = tmp_path / "empty.csv"
    empty.write_text("")
    with pytest.raises(LabelImportError, match=r"line 1: header: empty file"):
        import_labels(three_runs, empty)


def test_a_jsonl_with_errors_imports_nothing(three_runs, tmp_path):
    ok = {"run_id": "run-001", "attempt": True, "success": False, "failure_class": "grasp.slip",
          "labeled_by": "op-kim", "labeled_at": "2026-09-16T12:01:00Z"}
    lines = [json.dumps(ok), "{not json", "[1, 2]",
             json.dumps({**ok, "run_id": "run-002", "attempt": "y"}),
             json.dumps({k: v for k, v in ok.items() if k != "labeled_at"}), "",
             json.dumps({**ok, "run_id": 5, "attempt": 2})]
    f = tmp_path / "bad.jsonl"
    f.write_text("\n".join(lines) + "\n")
    with pytest.raises(LabelImportError) as info:
        import_labels(three_runs, f)
    assert [str(e) for e in info.value.errors] == [
        "line 2: row: not valid JSON: Expecting property name enclosed in double quotes "
        "(line 1, column 2)",
        "line 3: row: expected a JSON object, got list",
        "line 4: attempt: 'y' is not a boolean; expected true/false/1/0/yes/no",
        "line 5: columns: missing column(s) labeled_at",
        "line 7: run_id: empty or not text (5); expected a non-empty string",
        "line 7: attempt: 2 is not a boolean; expected true/false/1/0/yes/no",
    ]
    assert three_runs.counts()["operator_labels"] == 0


GRASP_CLASSES = ("grasp.miss, grasp.slip, grasp.wrong_pose, grasp.crush, "
                 "grasp.premature_release, grasp.unstable, grasp.no_close, "
                 "grasp.multiple_objects")
FAMILIES = "grasp, motion, perception, placement, task, env, hardware, operator"


def test_unknown_classes_and_a_success_without_an_attempt_are_refused(three_runs, tmp_path):
    f = tmp_path / "classes.csv"
    f.write_text(HEADER
                 + "run-001,1,0,grasp.drop,op-kim,2026-09-16T12:01:00Z\n"           # 2 unknown
                 + "run-002,1,0,,op-kim,2026-09-16T12:02:00Z\n"                     # 3 ok: empty
                 + "run-003,0,1,,op-kim,2026-09-16T12:03:00Z\n"                     # 4
                 + "run-001,1,0,gripper.jam,op-lee,2026-09-16T12:04:00Z\n"          # 5 family
                 + "run-002,1,0,env.object_missing,op-lee,2026-09-16T12:05:00Z\n"   # 6 ok
                 + "run-003,no,yes,grasp.slip,op-lee,2026-09-16T12:06:00Z\n"        # 7
                 + "run-001,true,false,Grasp.Slip,op-lee,2026-09-16T12:07:00Z\n")   # 8 case
    with pytest.raises(LabelImportError) as info:
        import_labels(three_runs, f)
    assert [str(e) for e in info.value.errors] == [
        "line 2: failure_class: 'grasp.drop' is not a class of the taxonomy; the grasp "
        f"classes are {GRASP_CLASSES} (or leave it empty)",
        "line 4: success: true with attempt false; a run that was not attempted cannot "
        "succeed (expected success false when attempt is false)",
        "line 5: failure_class: 'gripper.jam' is not a class of the taxonomy; its family "
        f"'gripper' is none of {FAMILIES} (or leave it empty)",
        "line 7: success: true with attempt false; a run that was not attempted cannot "
        "succeed (expected success false when attempt is false)",
        "line 7: failure_class: 'grasp.slip' given for a successful run; expected empty when "
        "success is true",
        "line 8: failure_class: 'Grasp.Slip' is not a class of the taxonomy; its family "
        f"'Grasp' is none of {FAMILIES} (or leave it empty)",
    ]
    assert str(info.value).splitlines()[0] == f"{f}: 6 error(s), nothing imported"
    assert three_runs.counts()["operator_labels"] == 0
    j = tmp_path / "classes.jsonl"
    ok = {"run_id": "run-001", "attempt": True, "success": False, "failure_class": None,
          "labeled_by": "op-kim", "labeled_at": "2026-09-16T12:01:00Z"}
    j.write_text("\n".join(json.dumps({**ok, **change}) for change in (
        {}, {"failure_class": "task.unknown"}, {"attempt": False, "success": True},
        {"failure_class": "", "labeled_by": "op-lee"})) + "\n")
    with pytest.raises(LabelImportError) as info:
        import_labels(three_runs, j)
    assert [str(e) for e in info.value.errors] == [
        "line 2: failure_class: 'task.unknown' is not a class of the taxonomy; the task "
        "classes are task.timeout, task.no_attempt, task.wrong_order, task.incomplete, "
        "task.gave_up, task.undid_progress, task.instruction_ignored, task.other (or leave "
        "it empty)",
        "line 3: success: true with attempt false; a run that was not attempted cannot "
        "succeed (expected success false when attempt is false)",
    ]
    assert three_runs.counts()["operator_labels"] == 0


def test_label_classes_are_checked_against_the_current_taxonomy(three_runs, configs, tmp_path):
    f = tmp_path / "drop.csv"
    f.write_text(HEADER + "run-001,1,0,grasp.drop,op-kim,2026-09-16T12:01:00Z\n")
    with pytest.raises(LabelImportError, match=r"line 2: failure_class: 'grasp.drop' is not"):
        import_labels(three_runs, f)
    with (configs / "taxonomy.yaml").open("a", encoding="utf-8") as fh:
        fh.write('  grasp.drop: {counts_against_policy: true, description: "dropped"}\n')
    load_taxonomy.cache_clear()
    assert import_labels(three_runs, f).imported == 1


def test_a_label_file_that_is_not_utf8_or_holds_nul_bytes_imports_nothing(three_runs,
                                                                        tmp_path):
    f = tmp_path / "bytes.csv"  # HEADER is 59 bytes, a plain row below 41
    f.write_bytes(HEADER.encode()
                  + b"run-001,1,0,,op-kim,2026-09-16T12:01:00Z\n"        # 2: 59..99
                  + b"run-002,1,0,,op-k\xe9im,2026-09-16T12:02:00Z\n"   # 3: 100..141, 100+17
                  + b"run-003,1,0,,op-kim,2026-09-16T12:03:00Z\n"        # 4: 142..182
                  + b"run-001,1,0,,op-lee\x00,2026-09-16T12:05:00Z\n"   # 5: 183..224, 183+19
                  + "run-002,1,0,,김".encode() + b"\xff,2026-09-16T12:06:00Z\n")  # 6: 225+16
    with pytest.raises(LabelImportError) as info:
        import_labels(three_runs, f)
    assert str(info.value).splitlines() == [
        f"{f}: 3 error(s), nothing imported",
        "  line 3: encoding: byte 0xe9 at offset 117 is not UTF-8 (invalid continuation "
        "byte); expected a UTF-8 file",
        "  line 5: row: NUL byte at offset 202; expected text without NUL bytes",
        "  line 6: encoding: byte 0xff at offset 241 is not UTF-8 (invalid start byte); "
        "expected a UTF-8 file",
    ]
    line = json.dumps({"run_id": "run-001", "attempt": 1, "success": 0, "failure_class": None,
                       "labeled_by": "op-kim", "labeled_at": "2026-09-16T12:01:00Z"}).encode()
    assert (len(line), line.index(b"op-kim")) == (134, 88)
    j = tmp_path / "bytes.jsonl"  # lines 1 and 2 are 135 bytes with the newline, 3 is blank
    j.write_bytes(line + b"\n" + line.replace(b"op-kim", b"op-k\xe9m") + b"\n\n"
                  + line.replace(b"op-kim", b"op-\x00im") + b"\n")
    with pytest.raises(LabelImportError) as info:
        import_labels(three_runs, j)
    assert [str(e) for e in info.value.errors] == [
        "line 2: encoding: byte 0xe9 at offset 227 is not UTF-8 (invalid continuation byte); "
        "expected a UTF-8 file",                                            # 135 + 88 + 4
        "line 4: row: NUL byte at offset 362; expected text without NUL bytes",  # 271 + 91
    ]
    assert three_runs.counts()["operator_labels"] == 0


def test_a_nul_byte_in_a_value_of_a_known_run_imports_nothing(three_runs, tmp_path):
    f = tmp_path / "nul.csv"
    f.write_bytes(HEADER.encode() + b"run-001,1,0,,op-k\x00im,2026-09-16T12:01:00Z\n")
    with pytest.raises(LabelImportError) as info:
        import_labels(three_runs, f)
    assert [str(e) for e in info.value.errors] == [
        "line 2: row: NUL byte at offset 76; expected text without NUL bytes"]  # 59 + 17
    j = tmp_path / "escaped.jsonl"  # a JSON \u0000 escape is a NUL in the value
    j.write_text(json.dumps({"run_id": "run-001", "attempt": 1, "success": 0,
                             "failure_class": None, "labeled_by": "op-k\x00im",
                             "labeled_at": "2026-09-16T12:01:00Z"}) + "\n")
    with pytest.raises(LabelImportError) as info:
        import_labels(three_runs, j)
    assert [str(e) for e in info.value.errors] == [
        "line 1: labeled_by: contains a NUL character at character 4"]  # the strict reader's
    assert three_runs.counts()["operator_labels"] == 0


def test_utf16_is_named_and_a_utf8_bom_is_fine(three_runs, tmp_path):
    f = tmp_path / "excel.csv"
    f.write_bytes((HEADER + "run-001,1,0,,op-kim,2026-09-16T12:01:00Z\n").encode("utf-16"))
    with pytest.raises(LabelImportError) as info:
        import_labels(three_runs, f)
    assert [str(e) for e in info.value.errors] == [
        "line 1: encoding: the file starts with a UTF-16 byte order mark (ff fe); expected "
        "a UTF-8 file"]
    bom = tmp_path / "bom.csv"
    bom.write_bytes(b"\xef\xbb\xbf" + (HEADER + "run-001,1,0,,op-kim,"
                                        "2026-09-16T12:01:00Z\n").encode())
    assert import_labels(three_runs, bom).imported == 1


def test_labels_import_command_on_bad_bytes(db, three_runs, tmp_path, capsys):
    f = tmp_path / "latin1.csv"
    f.write_bytes(HEADER.encode() + b"run-001,1,0,,Jos\xe9,2026-09-16T12:01:00Z\n")
    assert main(["labels", "import", str(f), "--db", db.cli_url]) == 1
    assert capsys.readouterr().err.splitlines() == [
        f"rcjudge: error: {f}: 1 error(s), nothing imported",
        "  line 2: encoding: byte 0xe9 at offset 75 is not UTF-8 (invalid continuation "
        "byte); expected a UTF-8 file"]                                     # 59 + 16
    assert main(["labels", "import", str(f), "--db", db.cli_url, "--json"]) == 1
    assert json.loads(capsys.readouterr().out)["errors"] == [
        {"line": 2, "field": "encoding", "message": "byte 0xe9 at offset 75 is not UTF-8 "
         "(invalid continuation byte); expected a UTF-8 file"}]
    assert three_runs.counts()["operator_labels"] == 0


def test_a_missing_file_or_an_unknown_suffix(ledger, tmp_path):
    with pytest.raises(LedgerError, match=r"labels.csv: label file not found$"):
        import_labels(ledger, tmp_path / "labels.csv")
    (tmp_path / "labels.xlsx").write_text("x")
    with pytest.raises(LedgerError, match=r"suffix '.xlsx'; expected .csv or .jsonl$"):
        import_labels(ledger, tmp_path / "labels.xlsx")


def test_labels_import_command(db, three_runs, tmp_path, capsys):
    good = tmp_path / "labels.csv"
    good.write_text(HEADER + "run-001,1,0,grasp.slip,op-kim,2026-09-16T12:01:00Z\n")
    assert main(["labels", "import", str(good), "--db", db.cli_url]) == 0
    assert capsys.readouterr().out == (
        f"{good}: 1 label(s) for 1 run(s): 1 imported, 0 already present\n")
    assert main(["labels", "import", str(good), "--db", db.cli_url, "--json"]) == 0
    assert json.loads(capsys.readouterr().out) == {
        "file": str(good), "rows": 1, "imported": 0, "already_present": 1, "runs": 1,
        "from_queue": 0}
    bad = tmp_path / "bad.csv"
    bad.write_text(HEADER + "run-002,1,0,,op-kim,2026-09-16T12:01:00Z\n"
                   + "run-404,1,0,,op-kim,2026-09-16T12:01:00Z\n")
    assert main(["labels", "import", str(bad), "--db", db.cli_url]) == 1
    assert capsys.readouterr().err.splitlines() == [
        f"rcjudge: error: {bad}: 1 error(s), nothing imported",
        "  line 3: run_id: unknown run 'run-404': not in the runs ledger"]
    assert main(["labels", "import", str(bad), "--db", db.cli_url, "--json"]) == 1
    assert json.loads(capsys.readouterr().out) == {"file": str(bad), "imported": 0, "errors": [
        {"line": 3, "field": "run_id", "message": "unknown run 'run-404': not in the runs ledger"}]}
    assert three_runs.counts()["operator_labels"] == 1


# --- evaluation_run export -------------------------------------------------------------------
def _export_world(ledger: Ledger) -> None:
    """Two tasks, two artifacts, two judge versions, two operator labels."""
    spec = [  # run, task, policy version, cycle, (attempt, success, class, conf a, conf s)
        ("r1", "tabletop.T1", "6.0.2", 10.0, (True, True, None, 0.95, 0.9)),
        ("r2", "tabletop.T1", "6.0.2", 12.0, (True, False, "grasp.slip", 0.9, 0.8)),
        ("r3", "tabletop.T2", "6.0.2", 8.0, (True, False, None, 0.7, 0.6)),
        ("r4", "tabletop.T2", "6.0.3", 9.0, (False, False, "grasp.drop", 0.55, 0.75)),
    ]
    for name, task, version, cycle, (att, suc, cls, ca, cs) in spec:
        run = make_run(name, task=task, cycle_sec=cycle, version=version)
        ledger.record(run, make_judgment(run, "rc-judge-v1", att, suc, cls, ca, cs))
    r1 = make_run("r1", task="tabletop.T1", cycle_sec=10.0)
    ledger.record_judgment(make_judgment(r1, "rc-judge-v2", True, False, "grasp.slip", 0.8, 0.7))
    ledger.add_labels([label("r2", True, True, None, 1),             # operator: a success
                       label("r3", True, False, "grasp.drop", 2)])   # operator names the class


def test_export_writes_the_hive_partition_with_operator_labels_winning(ledger, tmp_path):
    _export_world(ledger)
    s = export_evaluation_run(ledger, "rc-judge-v1", tmp_path / "eval")
    path = tmp_path / "eval" / "judge_version=rc-judge-v1" / "part-0.parquet"
    assert (s.path, s.rows, s.operator_rows) == (str(path), 4, 2)
    table = pq.read_table(path)
    assert table.column_names == [
        "task_id", "model_artifact", "episode_id", "success", "failure_reason", "cycle_sec",
        "attempt", "attempt_confidence", "success_confidence", "judge_version", "run_id",
        "label_source", "judge_attempt", "judge_success", "judge_failure_class",
        "failure_class", "counts_against_policy"]
    assert table.schema.field("success").type == pa.bool_()
    assert table.schema.field("counts_against_policy").type == pa.bool_()
    rows = [tuple(r.values()) for r in table.to_pylist()]
    assert rows == [  # grasp.drop is in no taxonomy: unknown, so it counts against the policy
        ("tabletop.T1", "policy-a@6.0.2", "r1", True, "", 10.0, True, 0.95, 0.9,
         "rc-judge-v1", "r1", "judge", True, True, None, None, False),
        ("tabletop.T1", "policy-a@6.0.2", "r2", True, "", 12.0, True, 0.9, 0.8,
         "rc-judge-v1", "r2", "operator", True, False, "grasp.slip", None, False),
        ("tabletop.T2", "policy-a@6.0.2", "r3", False, "grasp.drop", 8.0, True, 0.7, 0.6,
         "rc-judge-v1", "r3", "operator", True, False, None, "grasp.drop", True),
        ("tabletop.T2", "policy-a@6.0.3", "r4", False, "grasp.drop", 9.0, False, 0.55, 0.75,
         "rc-judge-v1", "r4", "judge", False, False, "grasp.drop", "grasp.drop", True),
    ]
    export_evaluation_run(ledger, "rc-judge-v2", tmp_path / "eval")
    both = read_evaluation_run(tmp_path / "eval")
    assert sorted(zip(both.column("judge_version").to_pylist(),
                      both.column("run_id").to_pylist(), strict=True)) == [
        ("rc-judge-v1", "r1"), ("rc-judge-v1", "r2"), ("rc-judge-v1", "r3"),
        ("rc-judge-v1", "r4"), ("rc-judge-v2", "r1")]
    assert read_evaluation_run(tmp_path / "eval", "rc-judge-v2").column(
        "failure_reason").to_pylist() == ["grasp.slip"]


def test_the_export_loads_in_the_verdict_engine_and_yields_cards(ledger, tmp_path):
    from verdict.engine import build_cards
    from verdict.tables import read_table

    _export_world(ledger)
    path = export_evaluation_run(ledger, "rc-judge-v1", tmp_path / "eval").path
    assert read_table(path, "evaluation_run").num_rows == 4
    task_spec = pa.table({"task_id": ["tabletop.T1", "tabletop.T2"],
                          "required_skill": ["pick_place", "pick_place"],
                          "target_success_rate": [0.8, 0.8],
                          "top_reason_share_limit": [0.6, 0.6],
                          "max_cycle_sec": [30.0, 30.0], "min_episode_count": [10, 10]})
    dataset_index = pa.table({"task_id": ["tabletop.T1", "tabletop.T2"],
                              "required_skill": ["pick_place", "pick_place"],
                              "episode_count": [120, 80], "capture_site": ["sf-03", "sf-03"],
                              "robot_hand_type": ["WujiHand2", "WujiHand2"]})
    cards = build_cards(path, task_spec, dataset_index, "policy-a@6.0.2")
    got = {c.task_id: (c.verdict, c.success_rate, c.failure_total, c.top_failure_reason,
                       c.cycle_sec_median) for c in cards}
    assert got == {
        "tabletop.T1": ("배포 후보", 1.0, 0, None, 11.0),
        "tabletop.T2": ("성공률 미달", 0.0, 1, "grasp.drop", 8.0),
    }


@pytest.fixture
def configs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """A copy of configs/ under ``RCJUDGE_CONFIGS`` whose taxonomy a test may edit."""
    folder = tmp_path / "configs"
    shutil.copytree(test_ledgers.REPO / "configs", folder)
    monkeypatch.setenv("RCJUDGE_CONFIGS", str(folder))
    load_taxonomy.cache_clear()
    yield folder
    load_taxonomy.cache_clear()


def promote(configs: Path, failure_class: str) -> None:
    """Flip ``failure_class`` to ``counts_against_policy: true`` in the copied taxonomy."""
    path = configs / "taxonomy.yaml"
    text = path.read_text(encoding="utf-8")
    old = f"  {failure_class}: {{counts_against_policy: false,"
    assert text.count(old) == 1
    path.write_text(text.replace(old, f"  {failure_class}: {{counts_against_policy: true,"),
                    encoding="utf-8")
    load_taxonomy.cache_clear()


#: run, judge (success, class), current operator label (success, class) or None, cycle_sec.
EXEMPT_WORLD = [
    ("e01", (True, None), None, 10.0),                                # success: never counts
    ("e02", (False, "grasp.slip"), None, 11.0),                       # policy class
    ("e03", (False, "env.object_missing"), None, 12.0),               # exempt env.*
    ("e04", (False, "env.object_missing"), None, 13.0),               # exempt env.*
    ("e05", (False, None), None, 14.0),                               # NULL class counts
    ("e06", (False, ""), None, 15.0),                                 # "" class counts
    ("e07", (False, "grasp.drop"), None, 16.0),                       # unknown class counts
    ("e08", (False, "grasp.slip"), (False, "operator.intervention"), 17.0),  # label: exempt
    ("e09", (False, "env.object_missing"), (False, None), 18.0),      # label, no class: counts
    ("e10", (False, "hardware.estop"), (False, "grasp.miss"), 19.0),  # label: policy class
    ("e11", (False, "env.lighting_failure"), (True, None), 20.0),     # label: a success
    ("e12", (False, "hardware.estop"), None, 21.0),                   # exempt hardware.*
]


def _exempt_world(ledger: Ledger) -> None:
    """Task tabletop.T3: the judgments store counts_against_policy as judged (exempt:
    False), which the export must not trust: it looks the class up again."""
    taxonomy = load_taxonomy()
    labels = []
    for i, (name, (suc, cls), lab, cycle) in enumerate(EXEMPT_WORLD):
        run = make_run(name, task="tabletop.T3", cycle_sec=cycle)
        judgment = make_judgment(run, "rc-judge-v1", True, suc, cls).model_copy(
            update={"counts_against_policy": not suc and taxonomy.counts_against_policy(cls)})
        ledger.record(run, judgment)
        if lab is not None:
            labels.append(label(name, True, lab[0], lab[1], i))
    ledger.add_labels(labels)


def _counts(ledger: Ledger, out: Path) -> list[tuple]:
    path = export_evaluation_run(ledger, "rc-judge-v1", out).path
    table = pq.read_table(path, columns=["run_id", "failure_reason", "failure_class",
                                         "counts_against_policy"])
    return [tuple(r.values()) for r in table.to_pylist()]


def _t3_card(path: str) -> tuple:
    from verdict.engine import build_cards

    spec = pa.table({"task_id": ["tabletop.T3"], "required_skill": ["pick_place"],
                     "target_success_rate": [0.8], "top_reason_share_limit": [0.6],
                     "max_cycle_sec": [30.0], "min_episode_count": [10]})
    ds_row = pa.table({"task_id": ["tabletop.T3"], "required_skill": ["pick_place"],
                       "episode_count": [120], "capture_site": ["sf-03"],
                       "robot_hand_type": ["WujiHand2"]})
    (card,) = build_cards(path, spec, ds_row, "policy-a@6.0.2")
    counted = {(e.field, e.agg): e.value for e in card.evidence if e.agg == "count"}
    return (card.verdict, card.success_rate, card.failure_total, card.top_failure_reason,
            card.top_failure_count, card.top_failure_share, card.cycle_sec_median,
            counted[("episode_id", "count")], counted[("success", "count")])


def test_export_looks_up_counts_against_policy_in_the_current_taxonomy(ledger, configs,
                                                                      tmp_path):
    _exempt_world(ledger)
    assert _counts(ledger, tmp_path / "eval") == [
        ("e01", "", None, False),
        ("e02", "grasp.slip", "grasp.slip", True),
        ("e03", "env.object_missing", "env.object_missing", False),
        ("e04", "env.object_missing", "env.object_missing", False),
        ("e05", "", None, True),
        ("e06", "", "", True),
        ("e07", "grasp.drop", "grasp.drop", True),
        ("e08", "operator.intervention", "operator.intervention", False),
        ("e09", "", None, True),
        ("e10", "grasp.miss", "grasp.miss", True),
        ("e11", "", None, False),
        ("e12", "hardware.estop", "hardware.estop", False),
    ]
    promote(configs, "env.object_missing")  # after judging: history follows the taxonomy
    promoted = _counts(ledger, tmp_path / "eval")
    assert [r for r in promoted if r[0] in ("e03", "e04")] == [
        ("e03", "env.object_missing", "env.object_missing", True),
        ("e04", "env.object_missing", "env.object_missing", True)]
    assert [r[3] for r in promoted if r[0] not in ("e03", "e04")] == [
        False, True, True, True, True, False, True, True, False, False]
    assert not ledger.get_judgment("e03", "rc-judge-v1").counts_against_policy  # as stored


def test_exempt_failures_leave_the_card_until_their_class_is_promoted(ledger, configs,
                                                                      tmp_path):
    _exempt_world(ledger)
    path = export_evaluation_run(ledger, "rc-judge-v1", tmp_path / "eval").path
    # counted: e01 e02 e05 e06 e07 e09 e10 e11 (2 successes, 6 failures, 3 of them with
    # no reason); grasp.drop/miss/slip tie at 1 and grasp.drop sorts first; 1/6 → 0.17;
    # cycles 10 11 14 15 16 18 19 20 → (15 + 16) / 2. Without the rule env.object_missing
    # (2 of 10 failures) would be the top reason and the rate 2/12 = 0.17.
    assert _t3_card(path) == ("성공률 미달", 0.25, 6, "grasp.drop", 1, 0.17, 15.5, 8, 2)
    promote(configs, "env.object_missing")
    path = export_evaluation_run(ledger, "rc-judge-v1", tmp_path / "eval").path
    # e03, e04 count now: 10 rows, 2 successes; env.object_missing 2 of 8 failures;
    # cycles 10 11 12 13 14 15 16 18 19 20 → (14 + 15) / 2.
    assert _t3_card(path) == ("성공률 미달", 0.2, 8, "env.object_missing", 2, 0.25, 14.5,
                              10, 2)


def test_export_of_an_unknown_version_names_the_known_ones(ledger, tmp_path):
    _export_world(ledger)
    with pytest.raises(LedgerError, match=(
            r"^--judge 'rc-judge-v9': no judgments of this version in the ledger "
            r"\(versions with judgments: rc-judge-v1, rc-judge-v2\)$")):
        export_evaluation_run(ledger, "rc-judge-v9", tmp_path / "eval")
    assert not (tmp_path / "eval").exists()


def test_export_and_db_commands(db, ledger, tmp_path, capsys):
    _export_world(ledger)
    out = tmp_path / "eval"
    assert main(["export", "evaluation-run", "--judge", "rc-judge-v1", "--out", str(out),
                 "--db", db.cli_url, "--json"]) == 0
    assert json.loads(capsys.readouterr().out) == {
        "path": str(out / "judge_version=rc-judge-v1" / "part-0.parquet"),
        "judge_version": "rc-judge-v1", "rows": 4, "operator_rows": 2}
    assert main(["export", "evaluation-run", "--judge", "nope", "--out", str(out),
                 "--db", db.cli_url]) == 2
    assert capsys.readouterr().err.startswith("rcjudge: error: --judge 'nope': no judgments")
    assert main(["db", "upgrade", "--db", db.cli_url, "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["revision"] == "0011"


def test_db_upgrade_creates_the_default_sqlite_file(monkeypatch, tmp_path, capsys):
    monkeypatch.delenv("RCJUDGE_DB", raising=False)
    monkeypatch.setenv("RCJUDGE_DATA", str(tmp_path / "data"))
    assert main(["db", "upgrade", "--revision", "0001"]) == 0
    db_file = tmp_path / "data" / "rcjudge.db"
    assert capsys.readouterr().out == f"sqlite:///{db_file}: at revision 0001\n"
    assert main(["db", "upgrade"]) == 0
    assert capsys.readouterr().out == f"sqlite:///{db_file}: at revision 0011\n"
    with Ledger.open() as led:
        assert led.counts() == {"runs": 0, "judgments": 0, "operator_labels": 0}
