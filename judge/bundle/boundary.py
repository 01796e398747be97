"""The one boundary for input errors: reading a bundle's files, before anything is judged.

Every read of a bundle (``intake``, ``load_streams``, a sidecar ``.mp4``, the LeRobot
and ROS bag importers) runs inside :func:`reading`. There, an error the *input* caused becomes the
bundle's own one-line :class:`BundleReadError` naming the file and the cause:

- ``OSError`` of any kind (a zero-length file PyAV cannot map, a symlink loop, permission
  denied, a storage backend's connection error), ``EOFError`` and ``UnicodeDecodeError``;
- any exception raised from inside a library that reads inputs (:data:`INPUT_LIBRARIES`:
  fsspec and its backends with their credential errors, e.g. botocore's
  ``NoCredentialsError``; PyAV, mcap, protobuf, zstandard, lz4, pyarrow, YAML, JSON,
  zipfile). "From inside" is the exception's class module or the frame that raised it.

Anything else (an ``AttributeError`` in our own code) is a bug and keeps its traceback.
This is the only place under ``judge/`` that inspects broad exceptions of input reading.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from judge.errors import BundleError
from rcjudge.errors import RcjudgeError

INPUT_LIBRARIES = frozenset({
    "fsspec", "s3fs", "botocore", "aiobotocore", "boto3", "aiohttp", "gcsfs", "google",
    "adlfs", "azure", "huggingface_hub", "requests", "urllib3", "av", "mcap", "zstandard",
    "lz4", "pyarrow", "yaml", "json", "zipfile", "tarfile", "gzip", "struct", "_struct",
    "rosbags", "ruamel", "sqlite3", "apsw", "backports",  # ROS bags (judge.bundle.rosbag)
})


class BundleReadError(BundleError):
    """A bundle's file cannot be read: filesystem, storage backend, codec or parser."""


def _root(module: str | None) -> str:
    return (module or "").split(".", 1)[0]


def from_input_library(exc: BaseException) -> bool:
    """True when ``exc``'s class, or the innermost frame that raised it, is an input library's."""
    if _root(type(exc).__module__) in INPUT_LIBRARIES:
        return True
    tb = exc.__traceback__
    while tb is not None and tb.tb_next is not None:
        tb = tb.tb_next
    return tb is not None and _root(tb.tb_frame.f_globals.get("__name__")) in INPUT_LIBRARIES


def describe(exc: BaseException) -> str:
    """The cause in one line: an OSError's strerror, else ``Type: message`` (first line)."""
    if isinstance(exc, OSError) and exc.strerror:
        return exc.strerror
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0]}" if text else type(exc).__name__


def as_input_error(exc: BaseException, where: str, error: type[RcjudgeError] = BundleReadError,
                   what: str = "{}") -> RcjudgeError | None:
    """The one-line bundle error for ``exc`` read at ``where``, or None when it is not one."""
    if isinstance(exc, RcjudgeError):
        return None
    if not isinstance(exc, OSError | EOFError | UnicodeDecodeError | RecursionError) \
            and not from_input_library(exc):
        return None
    name = getattr(exc, "filename", None) if isinstance(exc, OSError) else None
    return error(f"{name or where}: {what.format(describe(exc))}")


@contextmanager
def reading(where: str, error: type[RcjudgeError] = BundleReadError,
            what: str = "{}") -> Iterator[None]:
    """Run a read of ``where`` (a file or bundle URI); input errors leave as ``error``.

    Args:
        where: the file (or bundle) named when the exception names none itself.
        error: the error class raised (a :class:`BundleError` such as ``McapError``).
        what: the message, ``{}`` standing for the cause (``"corrupt MCAP data ({})"``).
    """
    try:
        yield
    except Exception as exc:  # the one boundary: input errors out, bugs through
        converted = as_input_error(exc, where, error, what)
        if converted is None:
            raise
        raise converted from None

