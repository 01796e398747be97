"""Where bundles live: an fsspec URI to its filesystem, and the one way a bundle's files are
opened (:func:`open_file`: regular files inside the bundle's folder only, never waited on).

fsspec answers an unknown protocol with ``ValueError("Protocol not known: …")`` and
a protocol whose package is missing (``s3://`` without ``s3fs``) with a bare
``ImportError``; :func:`url_to_fs` turns both into one-line project errors naming the
URI, the protocol and the package to install.
"""

from __future__ import annotations

import errno
import os
import stat
from collections.abc import Iterator
from contextlib import contextmanager
from typing import IO, NoReturn

import fsspec
import fsspec.core
from fsspec.registry import known_implementations

from judge.errors import BundleError, BundleFileError, JudgeError


def protocols(uri: str) -> list[str]:
    """The protocols a URI names, outermost first (``simplecache::s3://b/x`` -> both)."""
    parts = uri.split("::")
    return [p.split("://", 1)[0] if "://" in p else p
            for i, p in enumerate(parts) if "://" in p or i < len(parts) - 1]


def url_to_fs(uri: str, error: type[JudgeError] = BundleError
              ) -> tuple[fsspec.AbstractFileSystem, str]:
    """``fsspec.core.url_to_fs(uri)``, with a missing or unknown protocol raised as ``error``.

    Raises:
        error: naming the URI and the protocol; for a protocol whose filesystem package
            is not installed, the package to install.
    """
    for proto in protocols(uri):
        if proto not in known_implementations and proto not in fsspec.registry:
            known = ", ".join(sorted(set(known_implementations) | set(fsspec.registry)))
            raise error(f"{uri}: unknown protocol {proto!r} (fsspec knows: {known})")
        try:
            fsspec.get_filesystem_class(proto)
        except ImportError as exc:
            missing = getattr(exc.__cause__, "name", None) or getattr(exc, "name", None)
            if missing:
                raise error(f"{uri}: protocol {proto!r} needs the package {missing}, which is "
                            f"not installed (pip install {missing})") from None
            raise error(f"{uri}: protocol {proto!r} cannot be used: {exc}") from None
    return fsspec.core.url_to_fs(uri)


def _local(fs: fsspec.AbstractFileSystem) -> bool:
    from fsspec.implementations.local import LocalFileSystem

    return isinstance(fs, LocalFileSystem)


def _kind(mode: int) -> str:
    for test, name in ((stat.S_ISFIFO, "a FIFO"), (stat.S_ISCHR, "a character device"),
                       (stat.S_ISBLK, "a block device"), (stat.S_ISSOCK, "a socket")):
        if test(mode):
            return name
    return "not a plain file"


def _refuse(path: str, kind: str) -> NoReturn:
    if kind in ("a directory", "directory"):  # as open() would say it
        raise IsADirectoryError(errno.EISDIR, os.strerror(errno.EISDIR), path)
    raise BundleFileError(f"{path}: not a regular file ({kind}); a bundle's files must be "
                          "regular files")


def _inside(root: str, path: str) -> None:
    """Refuse a local ``path`` that resolves (symlinks followed) outside the folder ``root``;
    the refusal names the path only, never where it leads."""
    real_root = os.path.realpath(root)
    real = os.path.realpath(path)
    if not real.startswith(real_root.rstrip("/") + "/"):
        raise BundleFileError(f"{path}: resolves outside the bundle folder (a symlink); a "
                              "bundle's files must lie inside it")


def _check_mode(path: str, mode: int) -> None:
    if stat.S_ISDIR(mode):
        _refuse(path, "a directory")
    if not stat.S_ISREG(mode):
        _refuse(path, _kind(mode))


def file_size(fs: fsspec.AbstractFileSystem, root: str, path: str) -> int:
    """The size of ``path``, a regular file inside the bundle folder ``root``; nothing is opened.

    Raises:
        BundleFileError: ``path`` resolves outside ``root`` or is a FIFO, a device, a socket.
        IsADirectoryError, FileNotFoundError, OSError: as ``stat`` says (a symlink loop).
    """
    if _local(fs):
        _inside(root, path)
        st = os.stat(path)
        _check_mode(path, st.st_mode)
        return st.st_size
    info = fs.info(path)
    if info.get("type") != "file":
        _refuse(path, str(info.get("type") or "not a plain file"))
    return int(info.get("size") or 0)


@contextmanager
def open_file(fs: fsspec.AbstractFileSystem, root: str, path: str) -> Iterator[IO[bytes]]:
    """Open a file of the bundle at ``root`` for reading, never waiting on it: the path is
    resolved inside ``root`` and checked to be a regular file before it is opened (``stat``),
    and, locally, opened with ``O_NONBLOCK`` and checked again on the descriptor (a FIFO
    swapped in between is refused, not waited on). The one way bundle files are opened.

    Raises:
        as :func:`file_size`.
    """
    if not _local(fs):
        file_size(fs, root, path)
        with fs.open(path, "rb") as f:
            yield f
        return
    file_size(fs, root, path)
    with open(path, "rb", opener=_no_wait) as f:  # its name stays the path (PyAV shows it)
        _check_mode(path, os.fstat(f.fileno()).st_mode)
        yield f


def _no_wait(path: str, flags: int) -> int:
    """``open``'s opener: O_NONBLOCK (a FIFO opens at once, without a writer) and O_NOCTTY
    (a terminal never becomes ours); O_NONBLOCK does nothing to a regular file's reads."""
    return os.open(path, flags | os.O_NONBLOCK | os.O_NOCTTY)
