"""Where bundles live: an fsspec URI to its filesystem, before intake reads anything.

fsspec answers an unknown protocol with ``ValueError("Protocol not known: …")`` and
a protocol whose package is missing (``s3://`` without ``s3fs``) with a bare
``ImportError``; :func:`url_to_fs` turns both into one-line project errors naming the
URI, the protocol and the package to install.
"""

from __future__ import annotations

import fsspec
import fsspec.core
from fsspec.registry import known_implementations

from judge.errors import BundleError, JudgeError


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
