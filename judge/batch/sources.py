"""Batch sources: a folder of bundles, a glob, or a list file of bundle URIs."""

from __future__ import annotations

import posixpath

from judge.bundle.filesystems import url_to_fs
from judge.bundle.manifest import MANIFEST
from judge.errors import JudgeError


class SourceError(JudgeError, ValueError):
    """A batch source names nothing usable."""


def run_id_of(uri: str) -> str:
    """The run id a bundle gets in the ledgers: its folder name."""
    return posixpath.basename(uri.rstrip("/"))


def resolve_sources(source: str) -> list[str]:
    """Bundle URIs, sorted, from a bundle folder, a folder of bundles, a glob or a list file.

    A list file (``.txt`` / ``.list``) holds one URI per line; blank lines and lines
    starting with ``#`` are skipped.
    """
    fs, path = url_to_fs(source, SourceError)
    proto = source.split("://")[0] + "://" if "://" in source else ""

    def uri(p: str) -> str:
        return proto + p if proto else p

    if any(c in path for c in "*?["):
        found = [p for p in fs.glob(path) if fs.exists(posixpath.join(p, MANIFEST))]
    elif fs.isfile(path):
        with fs.open(path, "r") as f:
            lines = [ln.strip() for ln in f.read().splitlines()]
        found = [ln for ln in lines if ln and not ln.startswith("#")]
        if not found:
            raise SourceError(f"{source}: the list file names no bundle")
        return found
    elif fs.isdir(path):
        if fs.exists(posixpath.join(path, MANIFEST)):
            found = [path]
        else:
            found = [posixpath.dirname(p) for p in fs.glob(posixpath.join(path, "*", MANIFEST))]
    else:
        raise SourceError(f"{source}: no such folder, glob match or list file")
    if not found:
        raise SourceError(f"{source}: no bundle (a folder with {MANIFEST}) found")
    return [uri(p) for p in sorted(found)]
