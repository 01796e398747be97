"""Bundle roots: the only places the Judge API reads bundles from (issue 29 items 2, 3).

``rcjudge serve --bundle-root URI`` (repeatable) configures them: local folders (resolved,
symlinks followed) and URIs of the object stores in :data:`REMOTE` (``s3://bucket/prefix``).
:meth:`BundleRoots.admit` turns a caller's ``bundle_uri`` into the normalised URI the
server may open, or refuses it with one 422 whose text is the same for every refusal: it
never names a server path nor says whether one exists. fsspec chains (``::``), any other
protocol (``ftp://``, ``github://``, ``zip://``, ``http://``…), credentials, ports, queries
and fragments are refused before anything is opened, so no request makes the server
connect to an address the operator did not configure.
"""

from __future__ import annotations

import os
import posixpath
import re
from collections.abc import Iterable
from dataclasses import dataclass
from urllib.parse import urlsplit

from judge.api.errors import ApiError
from judge.errors import ConfigError

REMOTE = ("s3", "gs", "gcs", "az", "abfs")
REFUSED = ("bundle_uri: not a bundle under this server's bundle roots (a local path or "
           "object-store URI below a root the operator configured)")
_SCHEME = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]*)://")


@dataclass(frozen=True)
class _Root:
    scheme: str  # "" for a local folder
    bucket: str
    prefix: str  # normalised, no trailing "/" ("" = the whole bucket / "/" never allowed)

    def holds(self, scheme: str, bucket: str, path: str) -> bool:
        if (scheme, bucket) != (self.scheme, self.bucket):
            return False
        return path == self.prefix or path.startswith(self.prefix.rstrip("/") + "/")


def _split(uri: str) -> tuple[str, str, str] | None:
    """``(scheme, bucket, normalised path)`` of a URI or local path; None when refused."""
    if "::" in uri or any(ord(c) < 32 for c in uri):
        return None
    m = _SCHEME.match(uri)
    if m is None or m.group(1).lower() == "file":
        path = uri[len("file://"):] if m else uri
        if not os.path.isabs(path):
            return None
        return "", "", os.path.realpath(os.path.normpath(path))
    scheme = m.group(1).lower()
    if scheme not in REMOTE:
        return None
    parts = urlsplit(uri)
    if parts.query or parts.fragment or any(c in uri for c in "?#%\\") or \
            not re.fullmatch(r"[a-z0-9][a-z0-9._-]{1,221}", parts.netloc or ""):
        return None  # credentials, ports, odd hosts: never an address of the caller's
    raw = parts.path or "/"
    if any(seg == ".." for seg in raw.split("/")):
        return None
    return scheme, parts.netloc, posixpath.normpath(raw).rstrip("/") or "/"


class BundleRoots:
    """The configured roots; :meth:`admit` checks one caller-given bundle URI."""

    def __init__(self, roots: Iterable[str]) -> None:
        self.roots: list[_Root] = []
        for root in roots:
            split = _split(str(root))
            if split is None:
                raise ConfigError(f"--bundle-root {root!r}: expected an absolute local folder "
                                  f"or a URI of {', '.join(p + '://' for p in REMOTE)}")
            self.roots.append(_Root(*split))

    def __bool__(self) -> bool:
        return bool(self.roots)

    def admit(self, uri: str) -> str:
        """The normalised URI to open; 422 (:data:`REFUSED`) for anything outside the roots."""
        split = _split(uri)
        if split is None or not any(r.holds(*split) for r in self.roots):
            raise ApiError(422, REFUSED)
        scheme, bucket, path = split
        if not scheme and not os.path.isfile(os.path.join(path, "manifest.json")):
            raise ApiError(422, REFUSED)  # the same answer: no oracle of what is there
        return path if not scheme else f"{scheme}://{bucket}{path}"

    def hide(self, text: str) -> str:
        """``text`` with every local root's server path replaced by ``<bundle root>``."""
        for r in sorted(self.roots, key=lambda r: -len(r.prefix)):
            if not r.scheme and r.prefix not in ("", "/"):
                text = text.replace(r.prefix, "<bundle root>")
        return text
