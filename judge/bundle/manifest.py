"""Bundle manifest v1: the file list with sha256 and size, and the bundle hash.

A bundle is a folder (local path or fsspec URI) holding ``manifest.json`` and the
files it lists. The bundle hash is defined in ``docs/bundle-format.md``::

    bundle_hash = sha256( "".join(f"{path}:{sha256}\\n" for files sorted by path) )

This module reads, writes and hashes manifests; it never judges anything.
"""

from __future__ import annotations

import hashlib
import posixpath
from pathlib import Path
from typing import IO, Any, Literal

import fsspec
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from judge.bundle.boundary import reading
from judge.bundle.filesystems import open_file, url_to_fs
from judge.errors import JudgeError, ManifestError, NotABundleError
from rcjudge import strict_json
from rcjudge.errors import describe_validation

MANIFEST = "manifest.json"
FORMAT = "rcjudge.bundle"
FORMAT_VERSION = 1
_BLOCK = 1 << 20
MAX_MANIFEST = 1 << 20  # bytes of manifest.json (one file list: a few hundred bytes a file)


class FileEntry(BaseModel):
    """One file of the bundle."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    path: str = Field(description="Relative POSIX path inside the bundle folder.")
    sha256: str = Field(pattern=r"^[0-9a-f]{64}$", description="Lower-case hex sha256.")
    size: int = Field(ge=0, description="Size in bytes.")

    @field_validator("path")
    @classmethod
    def _relative(cls, v: str) -> str:
        norm = posixpath.normpath(v)
        if not v or v.startswith("/") or norm != v or norm.startswith("..") or v == MANIFEST:
            raise ValueError(f"must be a normalised relative path inside the bundle, got {v!r}")
        return v


class Manifest(BaseModel):
    """``manifest.json`` of bundle format v1."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    format: Literal["rcjudge.bundle"] = FORMAT
    format_version: Literal[1] = FORMAT_VERSION
    files: tuple[FileEntry, ...] = Field(min_length=1)
    bundle_hash: str = Field(pattern=r"^[0-9a-f]{64}$")

    @field_validator("files")
    @classmethod
    def _unique(cls, v: tuple[FileEntry, ...]) -> tuple[FileEntry, ...]:
        seen: set[str] = set()
        for f in v:
            if f.path in seen:
                raise ValueError(f"file {f.path!r} is listed twice")
            seen.add(f.path)
        return v

    def file(self, path: str) -> FileEntry | None:
        return next((f for f in self.files if f.path == path), None)


def bundle_hash(files: list[FileEntry] | tuple[FileEntry, ...]) -> str:
    """sha256 over the sorted ``path:sha256`` lines (one ``\\n`` after each)."""
    lines = "".join(f"{f.path}:{f.sha256}\n" for f in sorted(files, key=lambda f: f.path))
    return hashlib.sha256(lines.encode("utf-8")).hexdigest()


def sha256_stream(f: IO[bytes], limit: int | None = None) -> tuple[str, int]:
    """Stream an open file through sha256 in 1 MiB blocks: (hex digest, bytes read). With
    ``limit``, at most ``limit + 1`` bytes are read: a file longer than it says is caught
    without reading it to its end (a file growing forever is not hashed forever)."""
    h = hashlib.sha256()
    size = 0
    buf = bytearray(_BLOCK)
    view = memoryview(buf)
    while limit is None or size <= limit:
        want = _BLOCK if limit is None else min(_BLOCK, limit + 1 - size)
        n = f.readinto(view[:want]) if hasattr(f, "readinto") else None
        if n is None:  # a file object without readinto (some fsspec backends)
            block = f.read(want)
            n = len(block)
            h.update(block)
        else:
            h.update(view[:n])
        if not n:
            break
        size += n
    return h.hexdigest(), size


def sha256_file(fs: fsspec.AbstractFileSystem, path: str,
                limit: int | None = None) -> tuple[str, int]:
    """sha256 of a file the caller names (``write_manifest``: files being made into a bundle);
    a bundle's own files are hashed by intake through :func:`judge.bundle.filesystems.
    open_file`. ``limit``: as :func:`sha256_stream`."""
    if getattr(fs, "protocol", None) in ("file", ("file", "local")):
        with open(path, "rb", buffering=0) as f:
            return sha256_stream(f, limit)
    with fs.open(path, "rb") as f:
        return sha256_stream(f, limit)


def read_manifest(fs: fsspec.AbstractFileSystem, root: str) -> Manifest:
    """Parse ``manifest.json`` under ``root``; any problem is a :class:`ManifestError`.

    Read through :func:`judge.bundle.filesystems.open_file` (a regular file inside the
    folder, never waited on) and :mod:`rcjudge.strict_json`, at most :data:`MAX_MANIFEST`
    bytes. A file, or a folder without ``manifest.json``, is a :class:`NotABundleError`.
    """
    path = posixpath.join(root, MANIFEST)
    try:
        with open_file(fs, root, path) as f:
            raw: Any = strict_json.load_stream(f, max_bytes=MAX_MANIFEST)
    except (FileNotFoundError, NotADirectoryError):
        if fs.isfile(root):
            raise NotABundleError(f"{root}: is a file, not a bundle folder (a folder holding "
                                  f"{MANIFEST})") from None
        error = NotABundleError if fs.isdir(root) else ManifestError  # else: no such path
        raise error(f"{path}: manifest.json not found (is this a bundle folder?)") from None
    except strict_json.StrictJsonError as exc:
        raise ManifestError(f"{path}: {exc.described()}") from None
    try:
        return Manifest.model_validate(raw)
    except ValidationError as exc:
        raise ManifestError(f"{path}: {describe_validation(exc)}") from None


def claimed_bundle_hash(uri: str) -> str | None:
    """The bundle hash ``manifest.json`` at ``uri`` claims (unverified), or None if unreadable.

    Cheap (one small file): how a resumed batch recognises bundles it already judged.
    Intake still verifies every file of a bundle that is judged.
    """
    try:
        with reading(uri):  # a storage backend's own error (credentials) is the bundle's
            fs, root = url_to_fs(uri)
            return read_manifest(fs, root.rstrip("/")).bundle_hash
    except (JudgeError, OSError, ValueError, ImportError):
        return None


def write_manifest(root: str | Path, paths: list[str]) -> Manifest:
    """Hash the listed local files under ``root`` and write ``manifest.json``."""
    fs = fsspec.filesystem("file")
    entries = []
    for p in sorted(paths):
        digest, size = sha256_file(fs, str(Path(root) / p))
        entries.append(FileEntry(path=p, sha256=digest, size=size))
    manifest = Manifest(files=tuple(entries), bundle_hash=bundle_hash(entries))
    tmp = Path(root) / (MANIFEST + ".tmp")
    tmp.write_text(manifest.model_dump_json(indent=2) + "\n", encoding="utf-8")
    tmp.replace(Path(root) / MANIFEST)
    return manifest
