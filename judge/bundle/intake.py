"""Intake: the first stage. Verify a bundle's files and attribution before anything runs.

``intake(uri)`` streams every listed file through sha256, checks sizes and the
bundle hash, locates the MCAP file and sidecar cameras, and validates the 11
attribution fields (from the request when one is given, else from the bundle's
``attribution.json``). Nothing downstream runs on a bundle that did not pass.
"""

from __future__ import annotations

import posixpath
from dataclasses import dataclass
from typing import Any

import fsspec
from pydantic import ValidationError

from judge.api.protocol import Attribution
from judge.bundle.boundary import reading
from judge.bundle.filesystems import file_size, open_file, url_to_fs
from judge.bundle.manifest import Manifest, bundle_hash, read_manifest, sha256_stream
from judge.config import attribution_fields
from judge.errors import (
    AttributionError,
    BundleError,
    HashMismatchError,
    ManifestError,
)
from rcjudge import strict_json
from rcjudge.errors import describe_validation

ATTRIBUTION_FILE = "attribution.json"
#: Bytes of ``attribution.json``: the API's body limit for the same fields (``judge.api.routes.
#: MAX_BODY``); a real one is under 1 KiB.
MAX_ATTRIBUTION = 64 * 1024
SIDECAR_DIR = "cameras"


@dataclass(frozen=True)
class VerifiedBundle:
    """A bundle that passed intake: verified files, located streams, its attribution."""

    uri: str
    fs: fsspec.AbstractFileSystem
    root: str
    manifest: Manifest
    attribution: Attribution
    mcap_path: str  # full path inside ``fs``
    sidecars: dict[str, str]  # camera name -> full path of its .mp4

    @property
    def bundle_hash(self) -> str:
        return self.manifest.bundle_hash


def missing_attribution(data: Any, fields: tuple[str, ...] | None = None) -> list[str]:
    """Every required dotted field that is absent, null, or empty ("" / {} / [])."""
    missing = []
    for dotted in fields or attribution_fields():
        node: Any = data
        for part in dotted.split("."):
            node = node.get(part) if isinstance(node, dict) else None
        if node is None or (isinstance(node, str | dict | list) and len(node) == 0):
            missing.append(dotted)
        elif isinstance(node, str) and not node.strip():
            missing.append(dotted)
    return missing


def json_type(value: Any) -> str:
    """The JSON name of a parsed value's type (``[1]`` -> ``"array"``)."""
    for kind, name in ((bool, "boolean"), (dict, "object"), (list, "array"), (str, "string"),
                       (int | float, "number")):
        if isinstance(value, kind):
            return name
    return "null"


def validate_attribution(data: Any, source: str = "request") -> Attribution:
    """Refuse a run missing any required field, naming all of them; then check types."""
    if not isinstance(data, dict):
        fields = list(attribution_fields())
        raise AttributionError(fields, source, f"{source}: not an object (a JSON "
                               f"{json_type(data)}); expected an object with the "
                               f"{len(fields)} attribution fields")
    if missing := missing_attribution(data):
        raise AttributionError(missing, source)
    fields = {k: v for k, v in data.items() if k in Attribution.model_fields}
    try:
        return Attribution.model_validate(fields)
    except ValidationError as exc:
        raise BundleError(f"{source}: invalid attribution: {describe_validation(exc)}") from None


def verify_files(fs: fsspec.AbstractFileSystem, root: str, manifest: Manifest) -> None:
    """Check every listed file's size, then its sha256, then the bundle hash. Each file is
    checked to be a regular file inside ``root`` before anything is read of it
    (:func:`judge.bundle.filesystems.open_file`), and hashed only up to its listed size."""
    for entry in manifest.files:
        path = posixpath.join(root, entry.path)
        try:
            size = file_size(fs, root, path)
        except FileNotFoundError:
            raise HashMismatchError(f"{path}: listed in manifest.json but missing") from None
        if size != entry.size:
            raise HashMismatchError(
                f"{path}: size {size} bytes, manifest.json says {entry.size}"
            )
        with open_file(fs, root, path) as f:
            digest, read = sha256_stream(f, entry.size)
        if read != entry.size:
            raise HashMismatchError(f"{path}: changed while it was read ({read} bytes read, "
                                    f"manifest.json says {entry.size})")
        if digest != entry.sha256:
            raise HashMismatchError(
                f"{path}: sha256 mismatch: file has {digest}, manifest.json says {entry.sha256}"
            )
    expected = bundle_hash(manifest.files)
    if expected != manifest.bundle_hash:
        raise HashMismatchError(
            f"{posixpath.join(root, 'manifest.json')}: bundle_hash mismatch: files give "
            f"{expected}, manifest.json says {manifest.bundle_hash}"
        )


def _locate_streams(root: str, manifest: Manifest) -> tuple[str, dict[str, str]]:
    mcaps = [f.path for f in manifest.files if f.path.endswith(".mcap")]
    if len(mcaps) != 1:
        raise ManifestError(
            f"{posixpath.join(root, 'manifest.json')}: expected exactly one .mcap file, "
            f"found {len(mcaps)} ({', '.join(mcaps) or 'none'})"
        )
    sidecars = {
        posixpath.splitext(posixpath.basename(f.path))[0]: posixpath.join(root, f.path)
        for f in manifest.files
        if posixpath.dirname(f.path) == SIDECAR_DIR and f.path.endswith(".mp4")
    }
    return posixpath.join(root, mcaps[0]), sidecars


def intake(uri: str, request: dict[str, Any] | None = None) -> VerifiedBundle:
    """Verify the bundle at ``uri`` and its attribution.

    Args:
        uri: bundle folder, a local path or any fsspec URI (``memory://…``, ``s3://…``).
        request: the API request body; its attribution fields are used instead of
            the bundle's ``attribution.json`` when given.

    Raises:
        ManifestError, HashMismatchError, AttributionError: naming the file or fields.
        BundleError: the URI's protocol is unknown or its package is not installed.
        BundleReadError: a file cannot be read (filesystem or storage backend error, a
            symlink loop, credentials), naming the file and the cause.
    """
    with reading(uri):
        return _intake(uri, request)


def _intake(uri: str, request: dict[str, Any] | None) -> VerifiedBundle:
    fs, root = url_to_fs(uri)
    root = root.rstrip("/")
    manifest = read_manifest(fs, root)
    if request is not None:
        attribution = validate_attribution(request, "request")
    else:
        if manifest.file(ATTRIBUTION_FILE) is None:
            raise ManifestError(
                f"{posixpath.join(root, 'manifest.json')}: lists no {ATTRIBUTION_FILE} "
                "and no request was given"
            )
    verify_files(fs, root, manifest)
    if request is None:
        path = posixpath.join(root, ATTRIBUTION_FILE)
        try:
            with open_file(fs, root, path) as f:
                data = strict_json.load_stream(f, max_bytes=MAX_ATTRIBUTION)
        except strict_json.StrictJsonError as exc:
            raise ManifestError(f"{path}: {exc.described()}") from None
        attribution = validate_attribution(data, path)
    mcap_path, sidecars = _locate_streams(root, manifest)
    return VerifiedBundle(uri=uri, fs=fs, root=root, manifest=manifest,
                          attribution=attribution, mcap_path=mcap_path, sidecars=sidecars)
