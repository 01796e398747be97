"""API keys of the Judge API: format, checksum, hashing and rights. Pure functions, no I/O.

A key reads ``rck_<mode>_<30 random base62 chars><6 base62 chars of CRC32>``, mode
``live`` or ``test``. The checksum lets a typo (or a string that is not a key at all) be
refused before any database read. Only ``sha256(key)`` is stored: a key is shown once,
when created, and can never be read back. The public ``key_id`` (``key_`` + the first 12
random chars) names a key in listings, usage and ``charged_to``.
"""

from __future__ import annotations

import hashlib
import secrets
import zlib
from dataclasses import dataclass

ALPHABET = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
MODES = ("live", "test")
_RANDOM_LEN, _CHECK_LEN = 30, 6

#: Every right a key can be granted, and what it opens (docs/api.md lists the endpoints).
RIGHTS: dict[str, str] = {
    "judgments:write": "submit runs for judging (POST /v1/judgments)",
    "judgments:read": "read judgments and judging jobs",
    "runs:read": "read recorded runs",
    "labels:write": "write operator labels",
    "labels:read": "read operator labels and the calibration set",
    "taxonomy:read": "read the failure taxonomy and judge versions",
    "rejudge:write": "start re-judge jobs",
    "rejudge:read": "read re-judge jobs",
    "usage:read": "read the calling key's usage",
    "coefficients:read": "read the public coefficients table",
    "attestations:read": "read attestations",
    "webhooks:write": "create, delete, rotate and test webhook endpoints",
    "webhooks:read": "list webhook endpoints and their deliveries",
    "datasets:read": "read datasets, sequences and outcome labels the key may read",
    "datasets:write": "create datasets; write outcome labels where the key may edit",
}


def _base62(n: int, width: int) -> str:
    out = []
    for _ in range(width):
        n, r = divmod(n, 62)
        out.append(ALPHABET[r])
    return "".join(reversed(out))


def checksum(body: str) -> str:
    """Six base62 characters of the CRC32 of ``body`` (the key without its checksum)."""
    return _base62(zlib.crc32(body.encode("ascii")), _CHECK_LEN)


@dataclass(frozen=True)
class ParsedKey:
    """A key whose shape and checksum are right (not yet looked up)."""

    mode: str
    key_id: str
    secret_hash: str


def new_key(mode: str) -> str:
    """A fresh key of ``mode`` (``live`` / ``test``)."""
    if mode not in MODES:
        raise ValueError(f"mode {mode!r}: expected one of {', '.join(MODES)}")
    body = f"rck_{mode}_" + "".join(secrets.choice(ALPHABET) for _ in range(_RANDOM_LEN))
    return body + checksum(body)


def hash_key(key: str) -> str:
    """What is stored of a key: its sha256, hex (a key has ~178 random bits: no salt needed)."""
    return hashlib.sha256(key.encode("ascii")).hexdigest()


def parse_key(key: str) -> ParsedKey | None:
    """The key's mode, id and hash when its shape and checksum are right, else None."""
    for mode in MODES:
        prefix = f"rck_{mode}_"
        if key.startswith(prefix):
            rest = key[len(prefix):]
            if len(rest) != _RANDOM_LEN + _CHECK_LEN or any(c not in ALPHABET for c in rest):
                return None
            body = key[:-_CHECK_LEN]
            if checksum(body) != key[-_CHECK_LEN:]:
                return None
            return ParsedKey(mode=mode, key_id="key_" + rest[:12], secret_hash=hash_key(key))
    return None


def check_rights(rights: list[str]) -> list[str]:
    """``rights`` sorted and de-duplicated; raises ValueError naming every unknown one."""
    unknown = sorted(set(rights) - set(RIGHTS))
    if unknown:
        raise ValueError(f"unknown right(s): {', '.join(unknown)}; known: "
                         f"{', '.join(sorted(RIGHTS))}")
    return sorted(set(rights))
