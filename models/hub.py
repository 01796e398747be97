"""Fetching one checkpoint from the Hugging Face hub at a pinned commit (``rcjudge models fetch``).

Where it sits: before any model loads. A judge version names each model's ``repo`` and
``revision`` (a 40-hex commit); :func:`fetch_checkpoint` lists that commit's files
(``GET {endpoint}/api/models/{repo}/tree/{revision}?recursive=True``), keeps every local
file whose size and hash already match the hub's (the LFS sha256, else the git blob sha1),
and downloads the rest with ``huggingface_hub.hf_hub_download`` (``HEAD``/``GET
{endpoint}/{repo}/resolve/{revision}/{file}``) into the folder itself. So a re-run fetches
only what is missing or damaged, even where huggingface_hub's own ``local_dir`` metadata
would trust a truncated file: a damaged file and its metadata are removed first and the
download is not forced (with ``force_download=True`` huggingface_hub 2.4 turns every error
of the ``HEAD`` — a gated file's 401/403, a 5xx — into a plain ``ValueError("Force download
failed due to the above error.")``, ``file_download._raise_on_head_call_error``; without it
those errors arrive as themselves, a 5xx after huggingface_hub's 5 retries). A connection
cut mid-file is resumed by huggingface_hub itself (``http_get``: a ``Range`` request from the
last whole 10 MiB chunk written, until 5 tries in a row receive nothing).

Each file is hashed once, as it is checked, through the fingerprint's digest cache
(``judge.ensemble.fingerprint._DigestCache`` is passed in as ``digest``): the fingerprint of
the fetched folder then reads those digests instead of hashing 45 GB again. The commit and
every file's sha256 are recorded in ``<folder>/.cache/rcjudge/fetched.json``; ``.cache/``
(this record and huggingface_hub's metadata) is not part of the fingerprint.

``HF_ENDPOINT`` (read at each call), ``HF_TOKEN`` and ``HF_HUB_OFFLINE`` are honoured.
huggingface_hub is imported inside the functions (it comes with transformers).
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path

from models.base import ModelError

MANIFEST = Path(".cache") / "rcjudge" / "fetched.json"
_SMALL = 16 << 20  # git-blob sha1 is computed only for non-LFS files (small text files)


class FetchError(ModelError):
    """A checkpoint cannot be fetched: offline, unknown repo or revision, gated, hub down."""


@dataclass(frozen=True)
class HubFile:
    """One file of a commit, as the hub's tree listing gives it."""

    path: str
    size: int
    blob_sha1: str
    sha256: str | None  # LFS files only


@dataclass
class FetchReport:
    """What one fetch did to one folder."""

    repo: str
    revision: str
    folder: str
    files: int = 0
    fetched: list[str] = field(default_factory=list)
    kept: list[str] = field(default_factory=list)
    bytes_fetched: int = 0
    extra: list[str] = field(default_factory=list)  # local files not in the commit, left alone

    def as_dict(self) -> dict:
        return asdict(self)


def _endpoint() -> str | None:
    return os.environ.get("HF_ENDPOINT") or None


def _offline() -> bool:
    return os.environ.get("HF_HUB_OFFLINE", "").strip().lower() in {"1", "on", "yes", "true"}


def _hub_errors() -> tuple[type[BaseException], ...]:
    """What the hub and its transport raise (turned into one line by :func:`_reason`)."""
    import httpx2
    from huggingface_hub import errors

    return (httpx2.TransportError, errors.HfHubHTTPError, errors.OfflineModeIsEnabled,
            errors.LocalEntryNotFoundError)


def _site() -> str:
    return (_endpoint() or "https://huggingface.co").rstrip("/")


def _reason(exc: BaseException, repo: str) -> str:
    """The one-line reason for a hub error (``LocalEntryNotFoundError``, huggingface_hub's
    "cannot reach the hub and no local copy", is read as the error it was raised from)."""
    import httpx2
    from huggingface_hub import errors

    if isinstance(exc, errors.LocalEntryNotFoundError) and exc.__cause__ is not None:
        exc = exc.__cause__
    if isinstance(exc, errors.OfflineModeIsEnabled):
        return "offline (HF_HUB_OFFLINE is set); nothing can be fetched"
    if isinstance(exc, errors.GatedRepoError):
        if exc.response is not None and exc.response.status_code == 403:
            return ("gated repository, and the account of the token set (HF_TOKEN) is not on "
                    f"its authorized list: accept its licence at {_site()}/{repo} with that "
                    "account")
        return (f"gated repository: accept its licence at {_site()}/{repo} and set HF_TOKEN "
                "(or `hf auth login`)")
    if isinstance(exc, errors.RevisionNotFoundError):
        return "revision not found in the repository"
    if isinstance(exc, errors.RepositoryNotFoundError):
        return "repository not found (or private, and no token with access is set)"
    if isinstance(exc, errors.RemoteEntryNotFoundError):
        return f"a listed file is missing on the hub: {exc}".splitlines()[0]
    if isinstance(exc, httpx2.ConnectError | errors.LocalEntryNotFoundError):
        return f"hub unreachable at {_site()} ({type(exc).__name__})"
    if isinstance(exc, httpx2.TransportError):  # cut or timed out once connected
        return (f"the connection to {_site()} dropped mid-transfer ({type(exc).__name__}), "
                "also on huggingface_hub's retries; run the fetch again (files already "
                "complete are kept)")
    status = getattr(getattr(exc, "response", None), "status_code", None)
    if status is not None and status >= 500:
        return (f"the hub answered HTTP {status}, also on huggingface_hub's retries; try "
                "again later (files already complete are kept)")
    return f"the hub answered HTTP {status or '?'}"


def remote_files(repo: str, revision: str) -> list[HubFile]:
    """Every file of ``repo`` at commit ``revision`` (the hub's recursive tree listing)."""
    from huggingface_hub import HfApi
    from huggingface_hub.hf_api import RepoFile

    api = HfApi(endpoint=_endpoint())
    return [HubFile(path=f.path, size=f.size, blob_sha1=f.blob_id,
                    sha256=f.lfs.sha256 if f.lfs is not None else None)
            for f in api.list_repo_tree(repo, revision=revision, recursive=True)
            if isinstance(f, RepoFile)]


def _git_blob_sha1(path: Path) -> str:
    data = path.read_bytes()
    return hashlib.sha1(b"blob %d\0" % len(data) + data, usedforsecurity=False).hexdigest()


def intact(local: Path, f: HubFile, digest: Callable[[Path], str]) -> bool:
    """``local`` holds exactly the hub's ``f``: same size, same LFS sha256 (else blob sha1)."""
    if not local.is_file() or local.stat().st_size != f.size:
        return False
    if f.sha256 is not None:
        return digest(local) == f.sha256
    return f.size <= _SMALL and _git_blob_sha1(local) == f.blob_sha1


def _download(repo: str, revision: str, f: HubFile, folder: Path) -> None:
    """``f`` into ``folder``: a damaged copy and huggingface_hub's record of it removed
    first, so that the download is not forced (see the module docstring)."""
    from huggingface_hub import hf_hub_download

    (folder / f.path).unlink(missing_ok=True)
    (folder / ".cache" / "huggingface" / "download" / f"{f.path}.metadata").unlink(
        missing_ok=True)
    hf_hub_download(repo, f.path, revision=revision, local_dir=folder, endpoint=_endpoint())


def fetch_checkpoint(repo: str, revision: str, folder: Path, digest: Callable[[Path], str],
                     label: str, progress: bool = True) -> FetchReport:
    """Make ``folder`` hold ``repo`` at ``revision``, fetching only what is missing or damaged.

    Args:
        repo: hub repository (owner/name).
        revision: the commit, 40 hex digits.
        folder: the checkpoint folder (created if missing).
        digest: sha256 of a file (the fingerprint's cache, so each file is hashed once).
        label: what the error line names first, e.g. ``model 'qwen'``.
        progress: show huggingface_hub's progress bars and its warnings (a hub that is
            down is retried 5 times over ~23 s before the error).

    Raises:
        FetchError: one line ``LABEL: REPO@REVISION: REASON``.
    """
    from huggingface_hub.utils import disable_progress_bars, enable_progress_bars, logging

    where = f"{label}: {repo}@{revision}"
    if _offline():
        raise FetchError(f"{where}: offline (HF_HUB_OFFLINE is set); nothing can be fetched")
    report = FetchReport(repo=repo, revision=revision, folder=str(folder))
    (enable_progress_bars if progress else disable_progress_bars)()
    if not progress:  # --json: the retries' warnings would break the one-line error
        logging.set_verbosity_error()
    try:
        files = remote_files(repo, revision)
    except _hub_errors() as exc:  # the hub boundary: each hub/transport error is one line
        raise FetchError(f"{where}: {_reason(exc, repo)}") from exc
    folder.mkdir(parents=True, exist_ok=True)
    for f in files:
        local = folder / f.path
        if intact(local, f, digest):
            report.kept.append(f.path)
            continue
        try:
            _download(repo, revision, f, folder)
        except _hub_errors() as exc:  # the hub boundary, per file: named in the line
            raise FetchError(f"{where}: {f.path}: {_reason(exc, repo)}") from exc
        if not intact(local, f, digest):
            raise FetchError(f"{where}: {f.path}: the downloaded file does not match the "
                             f"hub's size {f.size} and hash")
        report.fetched.append(f.path)
        report.bytes_fetched += f.size
    report.files = len(files)
    listed = {f.path for f in files}
    report.extra = sorted(p.relative_to(folder).as_posix() for p in folder.rglob("*")
                          if p.is_file() and p.relative_to(folder).parts[0] != ".cache"
                          and p.relative_to(folder).as_posix() not in listed)
    _write_manifest(folder, repo, revision, {f.path: digest(folder / f.path) for f in files})
    return report


def _write_manifest(folder: Path, repo: str, revision: str, sha256: dict[str, str]) -> None:
    path = folder / MANIFEST
    path.parent.mkdir(parents=True, exist_ok=True)
    record = {"repo": repo, "revision": revision,
              "files": {p: {"size": (folder / p).stat().st_size, "sha256": h}
                        for p, h in sorted(sha256.items())}}
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(record, indent=1) + "\n")
    os.replace(tmp, path)


def read_manifest(folder: Path) -> dict | None:
    """The record of the last complete fetch into ``folder``, or None."""
    try:
        return json.loads((folder / MANIFEST).read_text())
    except (OSError, ValueError):
        return None


def missing_files(folder: Path, manifest: dict) -> list[str]:
    """Files of the recorded fetch that are absent or of another size now (cheap: no hashing)."""
    out = []
    for p, rec in manifest["files"].items():
        local = folder / p
        if not local.is_file() or local.stat().st_size != rec["size"]:
            out.append(p)
    return out
