"""Issue 36 items 5 and 6: a bundle's files are regular files inside its folder.

A FIFO or a character device (``/dev/zero``) where a bundle's MCAP, manifest or attribution
should be used to hang ``rcjudge inspect`` (killed at 90 s), a batch and an API thread: only
regular files are read, checked before opening (``stat``) and again on the open descriptor
(opened ``O_NONBLOCK``: no wait on a FIFO even in a race). A symlink from inside a bundle to
a file outside used to be refused with that file's size and sha256: every path a bundle names
is resolved inside the bundle's folder before it is touched, and the refusal says nothing
about the target. Each case runs ``rcjudge inspect`` in a subprocess with a 20 s timeout (a
hang fails the test instead of stalling it), timed: each is refused well within 1 s here.
"""

from __future__ import annotations

import hashlib
import json
import os
import stat
import subprocess
import sys
import time
from pathlib import Path

import pytest

from judge.bundle.manifest import bundle_hash, write_manifest

EMPTY = hashlib.sha256(b"").hexdigest()
BOUND_S = 5.0  # generous for a loaded CI machine; each case takes well under 1 s here


def consistent(bundle: Path, name: str) -> None:
    """Rewrite the manifest as if ``name`` were an empty regular file (size 0, sha256 of
    nothing): what a hostile bundle claims for its FIFO or device."""
    m = json.loads((bundle / "manifest.json").read_text())
    for f in m["files"]:
        if f["path"] == name:
            f["sha256"], f["size"] = EMPTY, 0
    from judge.bundle.manifest import FileEntry

    m["bundle_hash"] = bundle_hash([FileEntry(**f) for f in m["files"]])
    (bundle / "manifest.json").write_text(json.dumps(m))


def inspect(path: Path) -> tuple[int, str, float]:
    """``rcjudge inspect PATH`` in a subprocess: (exit code, stderr, seconds)."""
    t0 = time.perf_counter()
    proc = subprocess.run([sys.executable, "-m", "rcjudge.cli", "inspect", str(path)],
                          capture_output=True, text=True, timeout=20)
    return proc.returncode, proc.stderr, time.perf_counter() - t0


def refused_fast(path: Path, line: str, what: str) -> None:
    code, err, seconds = inspect(path)
    print(f"\n{what}: refused in {seconds:.2f} s (bound {BOUND_S} s, the subprocess's start "
          "included)")
    assert (code, err) == (1, f"rcjudge: error: {line}\n")
    assert seconds < BOUND_S


@pytest.mark.parametrize("name", ["rollout.mcap", "attribution.json", "manifest.json"])
def test_a_fifo_in_a_bundle_is_refused_at_once(bundle_copy, name):
    (bundle_copy / name).unlink()
    if name != "manifest.json":
        consistent(bundle_copy, name)
    os.mkfifo(bundle_copy / name)
    refused_fast(bundle_copy, f"{bundle_copy}/{name}: not a regular file (a FIFO); a "
                 "bundle's files must be regular files", f"FIFO as {name}")


@pytest.mark.skipif(os.geteuid() != 0, reason="making a character device needs root (CI "
                    "runs as root)")
def test_a_device_in_a_bundle_is_refused_at_once(bundle_copy):
    mcap = bundle_copy / "rollout.mcap"
    mcap.unlink()
    consistent(bundle_copy, "rollout.mcap")
    os.mknod(mcap, stat.S_IFCHR | 0o644, os.makedev(1, 5))  # what /dev/zero is
    refused_fast(bundle_copy, f"{mcap}: not a regular file (a character device); a "
                 "bundle's files must be regular files", "character device as the MCAP")


def test_dev_zero_linked_from_a_bundle_is_refused_at_once(bundle_copy):
    mcap = bundle_copy / "rollout.mcap"
    mcap.unlink()
    consistent(bundle_copy, "rollout.mcap")
    os.symlink("/dev/zero", mcap)
    refused_fast(bundle_copy, f"{mcap}: resolves outside the bundle folder (a symlink); a "
                 "bundle's files must lie inside it", "/dev/zero linked as the MCAP")


def test_a_symlink_to_a_file_outside_says_nothing_about_it(bundle_copy, tmp_path):
    secret = tmp_path / "outside" / "secret.bin"
    secret.parent.mkdir()
    secret.write_bytes(b"s3cr3t" * 1000)
    digest, size = hashlib.sha256(secret.read_bytes()).hexdigest(), secret.stat().st_size
    mcap = bundle_copy / "rollout.mcap"
    mcap.unlink()
    os.symlink(secret, mcap)
    code, err, _ = inspect(bundle_copy)
    assert (code, err) == (1, f"rcjudge: error: {mcap}: resolves outside the bundle folder "
                           "(a symlink); a bundle's files must lie inside it\n")
    for leak in (digest, str(size), "secret", str(secret.parent)):
        assert leak not in err
    # the same with the manifest listing the outside file's true hash and size
    write_manifest(bundle_copy, ["attribution.json", "rollout.mcap"])
    assert inspect(bundle_copy)[:2] == (code, err)


def test_a_symlink_inside_the_bundle_is_read(bundle_copy):
    (bundle_copy / "data").mkdir()
    (bundle_copy / "rollout.mcap").rename(bundle_copy / "data" / "real.mcap")
    os.symlink("data/real.mcap", bundle_copy / "rollout.mcap")
    code, err, _ = inspect(bundle_copy)
    assert (code, err) == (0, "")


def test_the_bundle_folder_itself_may_be_a_symlink(bundle_copy, tmp_path):
    link = tmp_path / "linked-bundle"
    os.symlink(bundle_copy, link)
    assert inspect(link)[:2] == (0, "")


def test_a_file_growing_past_its_listed_size_is_not_hashed_forever(bundle_copy):
    """The size check comes before hashing, and hashing reads at most the listed size + 1
    bytes: a file that grew after the check is a mismatch, not an endless read."""
    import fsspec

    from judge.bundle.manifest import sha256_file

    path = str(bundle_copy / "rollout.mcap")
    full, size = sha256_file(fsspec.filesystem("file"), path)
    assert sha256_file(fsspec.filesystem("file"), path, limit=size) == (full, size)
    head = hashlib.sha256((bundle_copy / "rollout.mcap").read_bytes()[:101]).hexdigest()
    assert sha256_file(fsspec.filesystem("file"), path, limit=100) == (head, 101)
