"""`rcjudge datasets …` and `rcjudge sequence-outcomes …` on a real bundle and SQLite."""

from __future__ import annotations

import json

from rcjudge.cli import main


def run(capsys, *args):
    code = main(list(args))
    out = capsys.readouterr()
    return code, out.out, out.err


def test_datasets_and_labels_from_the_cli(make_bundles, tmp_path, capsys):
    bundle = make_bundles(1, seed=5, width=96, height=64, fps=5)[0]
    db = f"sqlite:///{tmp_path / 'l.db'}"
    assert run(capsys, "datasets", "create", "lab/cli", "--db", db)[1] == "created lab/cli\n"
    code, out, err = run(capsys, "datasets", "create", "lab/cli", "--db", db)
    assert (code, err) == (2, "rcjudge: error: dataset lab/cli: already exists\n")
    code, out, _ = run(capsys, "datasets", "add", "lab/cli", str(bundle), "--db", db, "--json")
    added = json.loads(out)[0]
    manifest = json.loads((bundle / "manifest.json").read_text())
    assert added["sequence_uid"] == "seq_" + manifest["bundle_hash"][:32]
    length = added["length_s"]
    assert 0 < length < 60
    uid = added["sequence_uid"]
    subtasks = tmp_path / "subtasks.json"
    subtasks.write_text(json.dumps([{"label": "all", "start_ts": 0, "end_ts": length + 2}]))
    code, _, err = run(capsys, "sequence-outcomes", "set", "lab", "cli", uid, "--outcome",
                       "failure", "--subtasks-file", str(subtasks), "--db", db)
    assert (code, err) == (2, f"rcjudge: error: subtasks[0].end_ts: must be <= the sequence "
                              f"length {length:g} s + 1 s = {length + 1:g} (got "
                              f"{length + 2:g})\n")
    code, out, err = run(capsys, "sequence-outcomes", "set", "lab", "cli", uid, "--outcome",
                         "failure", "--leakage-group", "location=loc_1", "--leakage-group",
                         "operator=op_2", "--source-metadata", '{"importer": "x"}',
                         "--labeled-by", "op-kim", "--db", db, "--json")
    assert code == 0, err
    label = json.loads(out)
    assert (label["version"], label["leakage_groups"], label["source_metadata"],
            label["labeled_by"]) == (1, {"location": "loc_1", "operator": "op_2"},
                                     {"importer": "x"}, "op-kim")
    code, _, err = run(capsys, "sequence-outcomes", "set", "lab", "cli", uid, "--outcome",
                       "failure", "--leakage-group", "site", "--db", db)
    assert err == ("rcjudge: error: --leakage-group 'site': expected KEY=ID with KEY one of "
                   "location, object, mechanism, operator, environment_family\n")
    run(capsys, "sequence-outcomes", "set", "lab", "cli", uid, "--outcome", "aborted",
        "--db", db)
    code, out, _ = run(capsys, "sequence-outcomes", "history", "lab", "cli", uid, "--db", db,
                       "--json")
    assert [(v["version"], v["outcome"]) for v in json.loads(out)] == [(2, "aborted"),
                                                                      (1, "failure")]
    code, out, _ = run(capsys, "sequence-outcomes", "list", "lab", "cli", "--outcome",
                       "aborted", "--db", db, "--json")
    assert [r["sequence_uid"] for r in json.loads(out)["results"]] == [uid]
    code, _, err = run(capsys, "sequence-outcomes", "list", "lab", "cli", "--outcome", "nope",
                       "--db", db)
    assert (code, err.split(";")[0]) == (2, "rcjudge: error: outcome: unknown value(s) 'nope'")
    code, _, err = run(capsys, "datasets", "add", "lab/none", str(bundle), "--db", db)
    assert (code, err) == (2, "rcjudge: error: dataset lab/none: not found\n")
    code, out, _ = run(capsys, "datasets", "list", "--db", db, "--json")
    assert [(d["dataset"], d["sequences"]) for d in json.loads(out)] == [("lab/cli", 1)]
