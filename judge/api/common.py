"""What every part of the Judge API shares: the caller, a ready reply, times, canonical JSON.

The bottom of ``judge.api``'s imports: the service, its catalog and webhook parts and the
HTTP modules import from here, and this module imports none of them.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection


@dataclass(frozen=True)
class Caller:
    """The key a request was made with (after its checksum and hash matched)."""

    key_id: str
    name: str
    mode: str
    rights: tuple[str, ...]
    created_at: datetime
    dataset: str | None = None  # every judgment through the key lands there (a model label)


@dataclass(frozen=True)
class Reply:
    """An answer ready to send: status, headers, exact body bytes."""

    status: int
    body: bytes
    headers: dict[str, str] = field(default_factory=dict)


def now_utc() -> datetime:
    """The current time, timezone-aware UTC."""
    return datetime.now(UTC)


def iso(t: datetime | None) -> str | None:
    """``t`` as ISO 8601 UTC with a ``Z`` (None stays None)."""
    return None if t is None else t.astimezone(UTC).isoformat().replace("+00:00", "Z")


def canonical(doc: Any) -> bytes:
    """The JSON bytes answered and compared: sorted keys, no spaces, UTF-8."""
    return json.dumps(doc, sort_keys=True, separators=(",", ":"), ensure_ascii=False,
                      allow_nan=False).encode("utf-8")


def insert_ignore(conn: Connection, table: sa.Table, key: list[str]) -> Any:
    """``INSERT … ON CONFLICT (key) DO NOTHING`` in the connection's dialect."""
    from sqlalchemy.dialects import postgresql, sqlite

    insert = postgresql.insert if conn.dialect.name == "postgresql" else sqlite.insert
    return insert(table).on_conflict_do_nothing(index_elements=key)
