"""The one boundary for input errors (judge/bundle/boundary.py): a zero-length sidecar, a
symlink loop, a storage backend's own error (zip's BadZipFile, like botocore's
NoCredentialsError: not an OSError) are each the bundle's one line, never a traceback,
and cost only that bundle. Plus the small input items of issue 28."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from judge.batch.sources import SourceError, resolve_sources
from judge.bundle.boundary import BundleReadError
from judge.bundle.intake import intake
from judge.bundle.manifest import claimed_bundle_hash, write_manifest
from judge.errors import AttributionError, BundleError
from rcjudge.cli import main
from tests.integration.test_judge_cli_errors import version_file

LOOP = os.strerror(40)  # "Too many levels of symbolic links"


def zero_sidecar(bundle: Path) -> Path:
    """A bundle whose manifest lists a 0-byte ``cameras/extra.mp4`` (hashes match)."""
    (bundle / "cameras").mkdir()
    (bundle / "cameras" / "extra.mp4").write_bytes(b"")
    write_manifest(bundle, ["attribution.json", "rollout.mcap", "cameras/extra.mp4"])
    return bundle / "cameras" / "extra.mp4"


def loop_bundle(tmp_path: Path) -> Path:
    d = tmp_path / "loop_a"
    d.mkdir()
    os.symlink(d / "manifest.json", d / "manifest.json")
    return d


def bad_zip(tmp_path: Path) -> str:
    path = tmp_path / "bad.zip"
    path.write_bytes(b"PK\x03\x04 this is not a zip archive")
    return f"zip://run-1::{path}"


def batch_cli(source: Path, tmp_path: Path) -> tuple[subprocess.CompletedProcess, str]:
    """``rcjudge batch SOURCE --json`` with the fake judge version into a fresh ledger:
    (the finished process, the ledger URL)."""
    from tests.integration.test_batch_errors import fake_version

    url = f"sqlite:///{tmp_path / 'ledger.db'}"
    proc = subprocess.run([sys.executable, "-m", "rcjudge.cli", "batch", str(source),
                           "--judge", str(fake_version(tmp_path)), "--db", url, "--json"],
                          capture_output=True, text=True, timeout=600,
                          env={**os.environ, "RAY_AUTH_MODE": "disabled"})
    return proc, url


def test_zero_length_sidecar_is_one_line(bundle_copy, capsys):
    mp4 = zero_sidecar(bundle_copy)
    assert main(["inspect", str(bundle_copy)]) == 1  # a refused input (rcjudge --help)
    err = capsys.readouterr().err
    assert err.startswith(f"rcjudge: error: {mp4}: not a readable video file (")
    assert err.count("\n") == 1 and "Traceback" not in err


def test_symlink_loop_manifest_is_one_line(tmp_path, capsys):
    d = loop_bundle(tmp_path)
    with pytest.raises(BundleReadError):
        intake(str(d))
    assert main(["inspect", str(d)]) == 1  # a refused input (rcjudge --help)
    assert capsys.readouterr().err == f"rcjudge: error: {d}/manifest.json: {LOOP}\n"


def test_backend_error_is_the_bundles_own(tmp_path, capsys):
    uri = bad_zip(tmp_path)
    assert claimed_bundle_hash(uri) is None  # the batch's up-front hash pass does not crash
    with pytest.raises(BundleError) as err:
        intake(uri)
    assert str(err.value) == f"{uri}: BadZipFile: File is not a zip file"
    assert main(["inspect", uri]) == 1  # a refused input (rcjudge --help)
    assert capsys.readouterr().err == f"rcjudge: error: {uri}: BadZipFile: File is not a zip file\n"


def test_judge_a_b_c_judges_the_good_one(make_bundles, tmp_path, capsys):
    good = make_bundles(3, seed=13, width=96, height=64, fps=5)[0]
    zero = tmp_path / "zero"
    shutil.copytree(good, zero)
    mp4 = zero_sidecar(zero)
    loop = loop_bundle(tmp_path)
    uri = bad_zip(tmp_path)
    code = main(["judge", "--judge", version_file(tmp_path, "fake-v1"), "--json",
                 str(zero), str(loop), uri, str(good)])
    out = capsys.readouterr()
    assert code == 1
    lines = out.err.splitlines()
    assert len(lines) == 3 and "Traceback" not in out.err
    assert lines[0].startswith(f"rcjudge: error: {zero}: {mp4}: not a readable video file (")
    assert lines[1] == f"rcjudge: error: {loop}: {loop}/manifest.json: {LOOP}"
    assert lines[2] == f"rcjudge: error: {uri}: BadZipFile: File is not a zip file"
    assert '"bundle_hash"' in out.out and out.out.count('"bundle_hash"') == 1


def test_attribution_array_is_not_an_object(bundle_copy, capsys):
    (bundle_copy / "attribution.json").write_text("[1,2,3]")
    write_manifest(bundle_copy, ["attribution.json", "rollout.mcap"])
    path = bundle_copy / "attribution.json"
    with pytest.raises(AttributionError) as err:
        intake(str(bundle_copy))
    assert str(err.value) == (f"{path}: not an object (a JSON array); expected an object "
                              "with the 11 attribution fields")


def test_list_file_entries_resolve_against_its_folder(make_bundles, tmp_path, monkeypatch):
    good = make_bundles(3, seed=13, width=96, height=64, fps=5)
    lists = tmp_path / "lists"
    lists.mkdir()
    for b in good[:2]:
        os.symlink(b, lists / b.name)
    (lists / "runs.txt").write_text(f"{good[0].name}\n# comment\n{good[1].name}\n{good[2]}\n")
    monkeypatch.chdir(tmp_path)
    assert resolve_sources(str(lists / "runs.txt")) == [
        str(lists / good[0].name), str(lists / good[1].name), str(good[2])]


def test_symlink_loop_source_is_named(tmp_path):
    loop = tmp_path / "loop"
    os.symlink(loop, loop)
    with pytest.raises(SourceError) as err:
        resolve_sources(str(loop))
    assert str(err.value) == f"{loop}: {LOOP}"


def test_inspect_json_into_a_closed_pipe(bundle_copy):
    cmd = f"{sys.executable} -m rcjudge.cli inspect --json {bundle_copy} | head -c 10"
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
    r = subprocess.run(["bash", "-c", cmd], capture_output=True, text=True, env=env,
                       timeout=120)
    assert r.stdout == "{\n  \"bundl"
    assert r.stderr == ""


def test_exit_codes_documented_in_help(capsys):
    with pytest.raises(SystemExit):
        main(["--help"])
    out = capsys.readouterr().out
    assert "exit codes (every command):" in out
    assert "  1    an input was refused, or some inputs failed" in out
    assert "  2    usage or setup error" in out


def test_bundle_create_with_a_bad_input_exits_1(bundle_copy, tmp_path, capsys):
    notes = tmp_path / "notes.mp4"
    notes.write_text("not a video\n")
    args = ["bundle", "create", "--signals", str(tmp_path / "none.csv"),
            "--attribution", str(bundle_copy / "attribution.json"), "--out", str(tmp_path / "o")]
    for cam in ("left", "right", "wrist"):
        args += ["--video", f"{cam}={notes}"]
    assert main(args) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("rcjudge: error: ")
    assert not (tmp_path / "o").exists()
    assert main(["bundle", "create", "--video", "x", "--signals", "s", "--attribution", "a",
                 "--out", str(tmp_path / "o")]) == 2  # usage: --video needs NAME=PATH


def test_inspect_shows_resolution_and_aligns_long_camera_names(bundle_copy, capsys):
    from judge.bundle.inspect import format_report, inspect_bundle

    report = inspect_bundle(str(bundle_copy))
    assert {n: (c["width"], c["height"]) for n, c in report["cameras"].items()} == {
        "front": (96, 64), "side": (96, 64), "top": (96, 64)}
    report["cameras"]["overhead_wide_left"] = report["cameras"].pop("side")
    lines = [ln for ln in format_report(report).splitlines() if " frames " in ln]
    assert len(lines) == 3
    assert len({ln.index(" frames ") for ln in lines}) == 1  # one column, however long a name
    assert all("96x64" in ln for ln in lines)


@pytest.mark.ray
@pytest.mark.slow
def test_batch_records_each_bad_input_and_judges_the_good(make_bundles, tmp_path):
    """A storage backend's own error in the up-front hash pass (zip's BadZipFile, as
    botocore's NoCredentialsError for s3://) is that bundle's failure; the batch exits 1."""
    import json

    from judge.ledgers.store import Ledger

    good = make_bundles(2, seed=11, width=96, height=64, fps=5)
    zero = tmp_path / "zero"
    shutil.copytree(good[0], zero)
    mp4 = zero_sidecar(zero)
    loop = loop_bundle(tmp_path)
    uri = bad_zip(tmp_path)
    listing = tmp_path / "runs.txt"
    listing.write_text("\n".join([str(good[0]), uri, str(zero), str(loop), str(good[1])]))
    proc, url = batch_cli(listing, tmp_path)
    assert proc.returncode == 1, proc.stderr[-2000:]
    s = json.loads(proc.stdout)
    assert (s["total"], s["judged"], s["failed"]) == (5, 2, 3)
    failures = {f["uri"]: (f["error"], f["message"]) for f in s["failures"]}
    assert failures[uri] == ("BundleReadError", f"{uri}: BadZipFile: File is not a zip file")
    assert failures[str(loop)] == ("BundleReadError", f"{loop}/manifest.json: {LOOP}")
    error, message = failures[str(zero)]
    assert error == "VideoError" and message.startswith(f"{mp4}: not a readable video file (")
    with Ledger.open(url) as ledger:
        assert ledger.judged_run_ids("fake-errors") == {g.name for g in good}


def test_a_list_file_naming_one_bundle_10000_times_names_it_once(make_bundles, tmp_path):
    """Issue 36 item 8: every spelling of one path, 10,000 lines: one URI to verify (before:
    10,000, each verified in turn, 9,892 in 570 s)."""
    good = make_bundles(2, seed=13, width=96, height=64, fps=5)
    lists = tmp_path / "lists"
    lists.mkdir()
    os.symlink(good[0], lists / "b")
    spellings = ["b", "./b", "b/", "b//", f"{lists}/b", f"{lists}/./b/", "x/../b"]
    lines = [spellings[i % len(spellings)] for i in range(10_000)] + [str(good[1]), "b"]
    (lists / "runs.txt").write_text("\n".join(lines) + "\n")
    assert resolve_sources(str(lists / "runs.txt")) == [str(lists / "b"), str(good[1])]


@pytest.mark.ray
def test_a_batch_over_10000_lines_of_one_bundle_verifies_it_once(make_bundles, tmp_path):
    good = make_bundles(2, seed=13, width=96, height=64, fps=5)
    listing = tmp_path / "runs.txt"
    listing.write_text(f"{good[0]}\n" * 10_000)
    proc, _ = batch_cli(listing, tmp_path)
    assert proc.returncode == 0, proc.stderr[-2000:]
    s = json.loads(proc.stdout)
    print(f"\n10,000 lines of one bundle: total {s['total']}, judged {s['judged']}, judging "
          f"{s['seconds']} s")
    assert (s["total"], s["judged"], s["skipped"], s["failed"]) == (1, 1, 0, 0)
