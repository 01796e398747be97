"""One exit-code rule for every command (``rcjudge --help``'s epilog, docs/cli.md): one row
per leaf command, each run as a user runs it (``python -m rcjudge.cli`` in a subprocess)
with a refused input (exit 1) or a usage/setup error (exit 2), its stderr one line naming
the thing; and a test that fails when a registered leaf command has no row."""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
from pathlib import Path

import pytest

from rcjudge.cli import build_parser

ROOT = Path(__file__).resolve().parents[2]

#: leaf command -> (argv after the command, exit code, what stderr's one line names).
#: ``{d}`` is a scratch folder holding ``empty/`` (no bundle), ``bad.json`` (not JSON),
#: ``bad.csv`` (a label file with a bad row); ``{d}/none.db`` does not exist.
ROWS: dict[str, tuple[list[str], int, str]] = {
    "inspect": (["{d}/empty"], 1, "manifest.json not found"),
    "bundle create": (["--video", "a={d}/a.mp4", "--signals", "{d}/s.csv", "--attribution",
                       "{d}/a.json", "--out", "{d}/o"], 2, "--video: expected 3 cameras"),
    "import lerobot": (["{d}/empty", "--out", "{d}/o", "--mapping", "{d}/bad.json"], 1,
                       "info.json: file not found"),
    "import rosbag": (["{d}/bad.mcap", "--list"], 1, "bad.mcap"),
    "judge": (["{d}/empty", "--judge", "tiny"], 1, "manifest.json not found"),
    "batch": (["{d}/empty", "--judge", "tiny", "--db", "{d}/b.db"], 1,
              "empty: no bundle (a folder with manifest.json) found"),
    "rejudge": (["--from", "tiny", "--to", "tiny", "--db", "{d}/none.db"], 2,
                "none.db: no ledger there"),
    "explain": (["nope", "--out", "{d}/x.html", "--db", "{d}/none.db"], 2,
                "none.db: no ledger there"),
    "review next": (["--judge", "tiny", "--db", "{d}/none.db"], 2, "none.db: no ledger there"),
    "review stats": (["--db", "{d}/none.db"], 2, "none.db: no ledger there"),
    "calibrate": (["--judge", "tiny", "--out", "c1", "--config", "{d}/c1.yaml", "--db",
                   "{d}/none.db"], 2, "none.db: no ledger there"),
    "train": (["--from", "nope-v0", "--out", "x", "--db", "{d}/none.db"], 2,
              "unknown judge version 'nope-v0'"),
    "average": (["--versions", "nope-v0,tiny", "--out", "x", "--db", "{d}/none.db"], 2,
                "unknown judge version 'nope-v0'"),
    "eval": (["--judge", "tiny", "--db", "{d}/none.db"], 2, "none.db: no ledger there"),
    "labels import": (["{d}/bad.csv", "--db", "{d}/l.db"], 1, "bad.csv"),  # + a line a row
    "rates": (["--judge", "tiny", "--db", "{d}/none.db"], 2, "none.db: no ledger there"),
    "compare": (["p", "q", "--judge", "tiny", "--db", "{d}/none.db"], 2,
                "none.db: no ledger there"),
    "verdict build": (["--cards", "{d}/bad.json", "--html", "{d}/p.html"], 1, "bad.json"),
    "verdict check": (["{d}/bad.json", "--evaluation-run", "{d}/e.csv", "--task-spec",
                       "{d}/t.csv", "--dataset-index", "{d}/i.csv"], 1, "bad.json"),
    "verdict grade": (["--gold", "{d}/empty", "--out", "{d}/g.json"], 1, "empty"),
    "verdict recapture-check": (["{d}/bad.json", "--plan", "{d}/p.csv"], 1, "bad.json"),
    "export evaluation-run": (["--judge", "tiny", "--out", "{d}/o", "--db", "{d}/none.db"], 2,
                              "none.db: no ledger there"),
    "export lerobot": (["{d}/empty", "--dataset", "a/b", "--db", "{d}/none.db"], 2,
                       "--include-outcomes"),
    "serve": (["--only", "nope"], 2, "--only 'nope'"),
    "keys create": (["--name", "k", "--rights", "nope", "--db", "{d}/k.db"], 2, "--rights"),
    "keys list": (["--bogus"], 2, "unrecognized arguments: --bogus"),
    "keys revoke": (["nope", "--db", "{d}/k.db"], 2, "nope"),
    "api tier-b": (["T", "--key", "nope", "--db", "{d}/k.db"], 2, "--key"),
    "datasets create": (["no-slash", "--db", "{d}/k.db"], 2, "no-slash"),
    "datasets list": (["--db", "mysql://h/x"], 2, "unsupported database 'mysql'"),
    "datasets add": (["a/b", "{d}/empty", "--db", "{d}/k.db"], 2, "a/b"),
    "datasets grant": (["a/b", "nope", "read", "--db", "{d}/k.db"], 2, "a/b"),
    "sequence-outcomes set": (["a", "b", "u", "--outcome", "success", "--db", "{d}/k.db"], 2,
                              "a/b"),
    "sequence-outcomes get": (["a", "b", "u", "--db", "{d}/k.db"], 2, "a/b"),
    "sequence-outcomes history": (["a", "b", "u", "--db", "{d}/k.db"], 2, "a/b"),
    "sequence-outcomes list": (["a", "b", "--db", "{d}/k.db"], 2, "a/b"),
    "split": (["--dataset", "a/b", "--by", "nope", "--held-out", "0.2", "--db", "{d}/k.db"], 2,
              "nope"),
    "release": (["--dataset", "a/b", "--slice", "train", "--db", "{d}/k.db"], 2, "a/b"),
    "mcp": (["--bogus"], 2, "unrecognized arguments: --bogus"),
    "acceptance check": (["a/b", "--db", "{d}/k.db"], 2, "a/b"),
    "acceptance review": (["a/b", "u", "--verdict", "accept", "--by", "me", "--db",
                           "{d}/k.db"], 2, "a/b"),
    "acceptance report": (["a/b", "--db", "{d}/k.db"], 2, "a/b"),
    "attestations import": (["{d}/bad.json", "--db", "{d}/k.db"], 1, "bad.json"),
    "doctor": (["--judge", "nope-v0"], 2, "unknown judge version 'nope-v0'"),
    "models build-tiny": (["--profile", "nope"], 2, "invalid choice: 'nope'"),
    "models list": (["--bogus"], 2, "unrecognized arguments: --bogus"),
    "models fetch": (["nope-v0"], 2, "unknown judge version 'nope-v0'"),
    "tasks add": (["bad id", "do it"], 2, "bad id"),
    "tasks list": (["--bogus"], 2, "unrecognized arguments: --bogus"),
    "judges list": (["--bogus"], 2, "unrecognized arguments: --bogus"),
    "judges show": (["nope-v0"], 2, "unknown judge version 'nope-v0'"),
    "db upgrade": (["--db", "mysql://h/x"], 2, "unsupported database 'mysql'"),
    "db check": (["--db", "{d}/none.db"], 2, "none.db: no ledger there"),
    "bench call": ([], 2, "required: --judge, --bundles"),
    "bench batch": ([], 2, "required: --judge, --bundles"),
    "synth": ([], 2, "required: --out"),
    "sim": ([], 2, "required: --out"),
    "truth-labels": (["{d}/missing", "--out", "{d}/t.csv"], 1, "missing"),
}


def leaf_commands(parser: argparse.ArgumentParser, prefix: tuple[str, ...] = ()) -> list[str]:
    """Every command ``--help`` shows that runs (has no subcommands of its own)."""
    sub = next((a for a in parser._actions if isinstance(a, argparse._SubParsersAction)), None)
    if sub is None:
        return [" ".join(prefix)]
    return [leaf for a in sub._choices_actions
            for leaf in leaf_commands(sub.choices[a.dest], (*prefix, a.dest))]


def test_every_leaf_command_has_a_row():
    assert sorted(leaf_commands(build_parser())) == sorted(ROWS)


@pytest.fixture
def scratch(tmp_path) -> Path:
    d = tmp_path
    (d / "empty").mkdir()
    (d / "bad.json").write_text("{not json")
    (d / "bad.mcap").write_bytes(b"not a bag")
    (d / "bad.csv").write_text("run_id,attempt,success,failure_class,labeled_by,labeled_at\n"
                               "r1,maybe,true,,me,2026-01-01T00:00:00Z\n")
    return d


@pytest.mark.parametrize("command", sorted(ROWS))
def test_exit_code_and_one_line(command, scratch):
    argv, code, names = ROWS[command]
    env = {k: v for k, v in os.environ.items() if k not in ("RCJUDGE_DB", "RAY_ADDRESS")}
    env["RCJUDGE_HOME"] = str(scratch / "home")
    proc = subprocess.run([sys.executable, "-m", "rcjudge.cli", *command.split(),
                           *[a.format(d=scratch) for a in argv]], capture_output=True,
                          text=True, cwd=ROOT, env=env, timeout=120)
    lines = 2 if command == "labels import" else 1  # a label file: its summary, a line a row
    assert (proc.returncode, proc.stderr.count("\n")) == (code, lines), proc.stderr
    assert proc.stderr.startswith("rcjudge: error: ") and names in proc.stderr, proc.stderr
    assert not (scratch / "none.db").exists()


#: A source that names nothing is a refused input, as ``inspect`` and ``judge`` refuse it:
#: ``batch`` exits 1 for it too (a folder without bundles, a path that does not exist, an
#: unknown protocol).
SOURCES = {
    "no such path": (["{d}/nothing-here"], 1, "nothing-here: no such folder, glob match"),
    "unknown protocol": (["nope://x"], 1, "nope://x: unknown protocol 'nope'"),
}


@pytest.mark.parametrize("case", sorted(SOURCES))
def test_batch_sources_follow_the_rule(case, scratch):
    argv, code, names = SOURCES[case]
    env = {k: v for k, v in os.environ.items() if k not in ("RCJUDGE_DB", "RAY_ADDRESS")}
    env["RCJUDGE_HOME"] = str(scratch / "home")
    proc = subprocess.run([sys.executable, "-m", "rcjudge.cli", "batch",
                           *[a.format(d=scratch) for a in argv], "--judge", "tiny",
                           "--db", str(scratch / "b.db")], capture_output=True, text=True,
                          cwd=ROOT, env=env, timeout=120)
    assert (proc.returncode, proc.stderr.count("\n")) == (code, 1), proc.stderr
    assert proc.stderr.startswith("rcjudge: error: ") and names in proc.stderr, proc.stderr
