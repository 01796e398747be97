"""`rcjudge batch` refuses bad flags before anything starts (no Ray, no ledger rows)."""

from __future__ import annotations

import pytest
import yaml

from rcjudge.cli import main

FAKE = {"name": "fake-errors", "models": [
    {"name": n, "backend": "fake", "options": {"script": {"attempt": 0.9, "success": 0.8}}}
    for n in "abc"]}


def fake_version(tmp_path):
    path = tmp_path / "fake-errors.yaml"
    path.write_text(yaml.safe_dump(FAKE))
    return path


@pytest.fixture
def batch_args(make_bundles, tmp_path):
    """A folder of two bundles, a fake judge version and a ledger URL (``--db``)."""
    folder = make_bundles(2, seed=11, width=96, height=64, fps=5)[0].parent
    db = tmp_path / "ledger.db"
    return ["batch", str(folder), "--judge", str(fake_version(tmp_path)),
            "--db", f"sqlite:///{db}"], db


def nothing_started(db) -> bool:
    import ray

    return not db.exists() and not ray.is_initialized()


@pytest.mark.parametrize("where", ["parent is a file", "grandparent is a file", "a folder"])
def test_unwritable_report_is_refused_before_the_batch(batch_args, tmp_path, capsys, where):
    args, db = batch_args
    blocker = tmp_path / "not-a-folder"
    blocker.write_text("x")
    report, expected = {
        "parent is a file": (blocker / "report.json",
                             f"cannot be written: {blocker} is a file, not a folder"),
        "grandparent is a file": (blocker / "reports" / "report.json",
                                  f"cannot be written: {blocker} is a file, not a folder"),
        "a folder": (tmp_path, "is a folder; expected the path of a JSON file to write"),
    }[where]
    assert main([*args, "--report", str(report)]) == 2
    assert capsys.readouterr().err == f"rcjudge: error: --report {report}: {expected}\n"
    assert nothing_started(db)


@pytest.mark.parametrize("n", ["0", "-3"])
def test_max_in_flight_below_one_is_refused(batch_args, capsys, n):
    args, db = batch_args
    assert main([*args, "--max-in-flight", n]) == 2
    assert capsys.readouterr().err == (f"rcjudge: error: --max-in-flight {n}: expected at "
                                       "least 1 (bundles between submission and ledger write)\n")
    assert nothing_started(db)


def test_run_batch_refuses_max_in_flight_zero(make_bundles, tmp_path):
    from judge.batch.run import BatchError, run_batch
    from judge.ensemble.version import JudgeVersion
    from judge.errors import JudgeError
    from judge.ledgers.store import Ledger

    uris = [str(p) for p in make_bundles(2, seed=11, width=96, height=64, fps=5)]
    with Ledger.open(f"sqlite:///{tmp_path / 'l.db'}") as ledger:
        with pytest.raises(BatchError, match=r"^max_in_flight 0: expected at least 1 "
                                             r"\(bundles between submission and ledger "
                                             r"write\)$") as err:
            run_batch(uris, JudgeVersion.model_validate(FAKE), ledger, max_in_flight=0)
        assert isinstance(err.value, JudgeError) and isinstance(err.value, ValueError)
        assert ledger.counts() == {"runs": 0, "judgments": 0, "operator_labels": 0}
        assert ledger.failures() == []
    import ray

    assert not ray.is_initialized()


@pytest.fixture
def mixed_folder(make_bundles, tmp_path):
    """Two bundles beside an empty folder, a folder without manifest.json, a file, a dotfile."""
    import shutil

    folder = tmp_path / "runs"
    folder.mkdir()
    for p in make_bundles(2, seed=11, width=96, height=64, fps=5):
        shutil.copytree(p, folder / p.name)
    (folder / "empty").mkdir()
    (folder / "loose").mkdir()
    (folder / "loose" / "notes.txt").write_text("not a bundle\n")
    (folder / "stray.txt").write_text("x\n")
    (folder / ".DS_Store").write_bytes(b"\0")
    no_manifest = "manifest.json: manifest.json not found (is this a bundle folder?)"
    return folder, {
        str(folder / "empty"): f"{folder / 'empty'}/{no_manifest}",
        str(folder / "loose"): f"{folder / 'loose'}/{no_manifest}",
        str(folder / "stray.txt"): f"{folder / 'stray.txt'}: is a file, not a bundle folder "
                                   "(a folder holding manifest.json)",
    }


def _side_files(folder) -> list[str]:
    """A converter's side files beside each bundle (``<bundle>.json``, ``<bundle>.mp4``)."""
    names = []
    for b in ("synth-0011-0000", "synth-0011-0001"):
        (folder / f"{b}.json").write_text("{}\n")
        (folder / f"{b}.mp4").write_bytes(b"\0")
        names += [f"{b}.json", f"{b}.mp4"]
    return names


def test_a_folder_scan_takes_the_bundles_and_names_what_it_passed_over(mixed_folder):
    """Issue 38 item 6: a folder (or glob) holding bundles and other entries yields the
    bundles; what it passed over is named in one line. A list file keeps every entry: the
    user named each one."""
    from judge.batch.sources import resolve_sources

    folder, _ = mixed_folder
    side = _side_files(folder)
    bundles = [str(folder / "synth-0011-0000"), str(folder / "synth-0011-0001")]
    assert resolve_sources(str(folder)) == bundles
    from judge.batch.sources import find_sources

    passed = sorted(["empty", "loose", "stray.txt", *side])
    for source in (str(folder), str(folder / "*")):
        found = find_sources(source)
        assert found.uris == bundles
        assert found.passed_over == [str(folder / n) for n in passed]
        assert found.note() == (f"{source}: passed over 7 entries without manifest.json (5 "
                                "files, 2 folders): empty, loose, stray.txt, "
                                "synth-0011-0000.json, synth-0011-0000.mp4, …")
    assert find_sources(str(folder / "synth-0011-0000")).passed_over == []
    assert resolve_sources(str(folder / "synth-0011-0000")) == bundles[:1]
    listing = folder.parent / "runs.txt"
    listing.write_text("runs/stray.txt\nruns/synth-0011-0000\n")
    assert resolve_sources(str(listing)) == [str(folder / "stray.txt"), bundles[0]]


def test_a_folder_of_no_bundles_is_refused_naming_its_entries(mixed_folder):
    import shutil

    from judge.batch.sources import SourceError, resolve_sources

    folder, _ = mixed_folder
    for name in ("synth-0011-0000", "synth-0011-0001"):
        shutil.rmtree(folder / name)
    with pytest.raises(SourceError) as err:
        resolve_sources(str(folder))
    assert str(err.value) == (f"{folder}: no bundle (a folder with manifest.json) found; "
                              "not bundles: empty, loose, stray.txt")


@pytest.mark.ray
@pytest.mark.slow
def test_batch_over_a_folder_with_side_files_judges_its_bundles_and_fails_nothing(
        mixed_folder, tmp_path):
    """Issue 38 item 6: it reported every side file as a failed bundle and exited 1."""
    import json
    import os
    import subprocess
    import sys

    from judge.cli import format_summary
    from judge.ledgers.store import Ledger

    folder, _ = mixed_folder
    side = _side_files(folder)
    url = f"sqlite:///{tmp_path / 'ledger.db'}"
    proc = subprocess.run([sys.executable, "-m", "rcjudge.cli", "batch", str(folder),
                           "--judge", str(fake_version(tmp_path)), "--db", url, "--json"],
                          capture_output=True, text=True, timeout=300,
                          env={**os.environ, "RAY_AUTH_MODE": "disabled"})
    assert proc.returncode == 0, proc.stderr
    s = json.loads(proc.stdout)
    assert (s["total"], s["judged"], s["skipped"], s["failed"]) == (2, 2, 0, 0)
    assert s["passed_over"] == [str(folder / n) for n in sorted(["empty", "loose",
                                                                  "stray.txt", *side])]
    notes = [ln for ln in proc.stderr.splitlines() if "passed over" in ln]
    assert notes == [f"rcjudge: note: {folder}: passed over 7 entries without manifest.json "
                     "(5 files, 2 folders): empty, loose, stray.txt, synth-0011-0000.json, "
                     "synth-0011-0000.mp4, …"]
    assert format_summary(s).splitlines()[0] == (
        "judge fake-errors: 2 judged, 0 skipped (already judged), 0 failed of 2")
    with Ledger.open(url) as ledger:
        assert ledger.failures("fake-errors") == []
        assert ledger.judged_run_ids("fake-errors") == {"synth-0011-0000", "synth-0011-0001"}
