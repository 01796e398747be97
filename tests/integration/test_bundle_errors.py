"""Bad input at the bundle edge: a file that is not MCAP, a file given as a bundle, a URI
whose protocol fsspec does not know or cannot load. Each is one line and exit 2."""

from __future__ import annotations

import importlib.util
import random

import fsspec
import pytest
from fsspec.registry import known_implementations

from judge.batch.sources import SourceError, resolve_sources
from judge.bundle.decode import load_streams
from judge.bundle.intake import intake
from judge.bundle.manifest import write_manifest
from judge.errors import BundleError, JudgeError, ManifestError, McapError
from rcjudge.cli import main

MAGIC = "89 4d 43 41 50 30 0d 0a"


def replace_mcap(bundle, data: bytes) -> str:
    """Swap the bundle's MCAP for ``data`` and re-hash, so intake passes; returns its path."""
    (bundle / "rollout.mcap").write_bytes(data)
    write_manifest(bundle, ["attribution.json", "rollout.mcap"])
    return str(bundle / "rollout.mcap")


def test_random_bytes_are_not_an_mcap_file(bundle_copy, capsys):
    data = random.Random(0).randbytes(5000)
    mcap = replace_mcap(bundle_copy, data)
    bundle = intake(str(bundle_copy))  # sha256 and size match: intake passes
    expected = (f"{mcap}: not an MCAP file: it starts with bytes {data[:8].hex(' ')}, "
                f"expected the MCAP magic {MAGIC}")
    with pytest.raises(McapError) as err:
        load_streams(bundle)
    assert str(err.value) == expected
    assert isinstance(err.value, ValueError)
    assert main(["inspect", str(bundle_copy)]) == 1
    assert capsys.readouterr().err == f"rcjudge: error: {expected}\n"


def test_file_shorter_than_the_magic(bundle_copy, capsys):
    mcap = replace_mcap(bundle_copy, b"\x89MC")
    assert main(["inspect", str(bundle_copy)]) == 1
    assert capsys.readouterr().err == (f"rcjudge: error: {mcap}: not an MCAP file: 3 bytes, "
                                       "shorter than the 8-byte MCAP magic\n")


def test_truncated_mcap_is_named(bundle_copy, capsys):
    data = (bundle_copy / "rollout.mcap").read_bytes()
    mcap = replace_mcap(bundle_copy, data[: len(data) // 2])
    assert main(["inspect", str(bundle_copy)]) == 1
    err = capsys.readouterr().err
    assert err.startswith(f"rcjudge: error: {mcap}: truncated or corrupt MCAP (summary "
                          "unreadable: ")
    assert err.count("\n") == 1


def test_a_file_is_not_a_bundle_folder(bundle_copy, capsys):
    mcap = str(bundle_copy / "rollout.mcap")
    expected = f"{mcap}: is a file, not a bundle folder (a folder holding manifest.json)"
    with pytest.raises(ManifestError) as err:
        intake(mcap)
    assert str(err.value) == expected
    assert main(["inspect", mcap]) == 1
    assert capsys.readouterr().err == f"rcjudge: error: {expected}\n"


def test_unknown_protocol(capsys):
    known = ", ".join(sorted(set(known_implementations) | set(fsspec.registry)))
    expected = f"nope://x: unknown protocol 'nope' (fsspec knows: {known})"
    with pytest.raises(BundleError) as err:
        intake("nope://x")
    assert str(err.value) == expected
    with pytest.raises(SourceError) as err:
        resolve_sources("nope://x")
    assert str(err.value) == expected
    assert main(["inspect", "nope://x"]) == 1
    assert capsys.readouterr().err == f"rcjudge: error: {expected}\n"
    assert main(["batch", "nope://x", "--judge", "tiny"]) == 1
    assert capsys.readouterr().err == f"rcjudge: error: {expected}\n"


def test_protocol_whose_package_is_missing_names_the_package(monkeypatch, capsys):
    # a protocol fsspec knows, whose implementation lives in a package that is not installed
    monkeypatch.setitem(known_implementations, "rcjtest", {
        "class": "rcjudge_absent_fs.AbsentFileSystem", "err": "Install rcjudge_absent_fs"})
    expected = ("rcjtest://bucket/run-1: protocol 'rcjtest' needs the package "
                "rcjudge_absent_fs, which is not installed (pip install rcjudge_absent_fs)")
    with pytest.raises(BundleError) as err:
        intake("rcjtest://bucket/run-1")
    assert str(err.value) == expected
    with pytest.raises(SourceError) as err:
        resolve_sources("rcjtest://bucket/run-1")
    assert str(err.value) == expected and isinstance(err.value, JudgeError)
    assert main(["inspect", "simplecache::rcjtest://bucket/run-1"]) == 1
    assert capsys.readouterr().err == ("rcjudge: error: simplecache::rcjtest://bucket/run-1: "
                                       "protocol 'rcjtest' needs the package rcjudge_absent_fs, "
                                       "which is not installed (pip install rcjudge_absent_fs)\n")


@pytest.mark.skipif(importlib.util.find_spec("s3fs") is not None,
                    reason="s3fs is installed here; the test is of its absence")
def test_s3_without_s3fs(capsys):
    assert main(["inspect", "s3://bucket/run-1"]) == 1
    assert capsys.readouterr().err == ("rcjudge: error: s3://bucket/run-1: protocol 's3' needs "
                                       "the package s3fs, which is not installed "
                                       "(pip install s3fs)\n")
