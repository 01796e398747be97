"""The one JSON reader for everything rcjudge accepts from outside (issue 36 item 9).

Request bodies, a bundle's ``manifest.json`` and ``attribution.json``, label files, queue and
card files, LeRobot metadata, attestation lines: each is read by :func:`loads` (or
:func:`load_file`), never by a bare ``json.loads``, so every one of them holds to the same
rules:

- **UTF-8 only**: no byte-order mark, no UTF-16/32 (a NUL byte), no invalid byte;
- **no NaN / Infinity**, no number past :data:`MAX_DIGITS` characters, no float out of range,
  **no integer outside the 64-bit signed range** (every integer column is SQLite/PostgreSQL
  ``INTEGER``/``BIGINT``: 10**30 would not fit);
- **no duplicate key** in an object (the last one winning would change what was said);
- **depth and size limits**: at most :data:`MAX_DEPTH` levels, at most ``max_bytes`` bytes;
- **storable text** (:func:`unstorable`, also the rule of :mod:`judge.outcomes.text`): no NUL,
  no lone surrogate.

A refusal is one :class:`StrictJsonError` naming the field (``policy.name``, ``files[2].size``)
where there is one, and never echoing a long value back. ``syntax`` tells a document that is
no acceptable JSON at all (an API answers 400) from one whose field holds a value no column
can take (422).
"""

from __future__ import annotations

import json
import os
import re
from typing import IO, Any

from rcjudge.errors import RcjudgeError, one_line

MAX_DEPTH = 32
MAX_DIGITS = 100  # characters of one number's text
INT_MIN, INT_MAX = -(2**63), 2**63 - 1
DEFAULT_MAX_BYTES = 16 * 2**20
_UNSTORABLE = re.compile("[\x00\ud800-\udfff]")
_ESCAPED = re.compile(r"\\u(?:0000|[dD][89a-fA-F][0-9a-fA-F]{2})")  # \u0000, \ud800…\udfff


class StrictJsonError(RcjudgeError, ValueError):
    """A JSON document refused by the strict reader: ``field`` (dotted, or None) and why."""

    def __init__(self, reason: str, field: str | None = None, syntax: bool = True) -> None:
        self.reason, self.field, self.syntax = reason, field, syntax
        super().__init__(f"{field}: {reason}" if field else reason)

    def described(self) -> str:
        """The message after a file's name: ``not valid JSON: …`` for a document that is no
        acceptable JSON, the field and reason alone for a value no field may hold."""
        return f"not valid JSON: {self}" if self.syntax else str(self)


class _Bad:
    """A value the parser met that no field may hold; the walk names its field."""

    __slots__ = ("reason", "syntax")

    def __init__(self, reason: str, syntax: bool = True) -> None:
        self.reason, self.syntax = reason, syntax


class _Duplicated(dict):
    """An object that named one key twice (``key``: the first repeated one)."""

    key: str = ""


class _Parser:
    """The hooks of one parse; ``suspect`` turns True when one of them met a bad value or a
    repeated key (the walk that names its field runs only then)."""

    def __init__(self) -> None:
        self.suspect = False

    def bad(self, reason: str, syntax: bool = True) -> _Bad:
        self.suspect = True
        return _Bad(reason, syntax)

    def pairs(self, pairs: list[tuple[str, Any]]) -> dict[str, Any]:
        out = dict(pairs)
        if len(out) == len(pairs):
            return out
        self.suspect = True
        seen: set[str] = set()
        dup = _Duplicated(out)
        dup.key = next(k for k, _ in pairs if k in seen or seen.add(k))
        return dup

    def int(self, text: str) -> Any:
        digits = text.lstrip("-")
        if len(digits) > 19:  # past 2**63 without converting a 4,000-digit string
            return self.bad(f"integer of {len(digits)} digits is outside the 64-bit range "
                            f"[{INT_MIN}, {INT_MAX}]", syntax=False)
        value = int(text)
        if not INT_MIN <= value <= INT_MAX:
            return self.bad(f"integer {value} is outside the 64-bit range "
                            f"[{INT_MIN}, {INT_MAX}]", syntax=False)
        return value

    def float(self, text: str) -> Any:
        if len(text) > MAX_DIGITS:
            return self.bad(f"a number of {len(text)} characters (at most {MAX_DIGITS})")
        value = float(text)
        if value in (float("inf"), float("-inf")):
            return self.bad(f"number {text} is out of range (not a finite double)")
        return value

    def constant(self, name: str) -> Any:
        return self.bad(f"{name} is not JSON (numbers must be finite)")


def _too_deep(doc: Any, max_depth: int) -> bool:
    """Whether ``doc`` nests deeper than ``max_depth`` (containers only are visited)."""
    stack = [(doc, 1)] if isinstance(doc, dict | list) else []
    while stack:
        node, depth = stack.pop()
        if depth > max_depth:
            return True
        children = node.values() if isinstance(node, dict) else node
        stack.extend((c, depth + 1) for c in children if type(c) in (dict, list))
    return False


def _join(path: str, key: str) -> str:
    return f"{path}.{key}" if path else key


def _name(key: str) -> str:
    """A key as a field name: control characters escaped, long keys cut (never echoed whole)."""
    text = repr(key) if unstorable(key) else one_line(key)
    return text if len(text) <= 64 else text[:61] + "..."


def unstorable(text: str) -> str | None:
    """Why ``text`` may not be stored (a lone surrogate, which JSON can spell as ``\\ud800``,
    or a NUL: PostgreSQL text holds neither), or None when it may."""
    bad = _UNSTORABLE.search(text)
    if bad is None:
        return None
    code, i = ord(bad.group()), bad.start()
    if code == 0:
        return f"contains a NUL character at character {i}"
    return (f"contains a lone surrogate U+{code:04X} at character {i} "
            "(text must be valid Unicode scalar values)")


def _walk(doc: Any, max_depth: int) -> None:
    """Raise for the first bad value, repeated key, deep nesting or unstorable text."""
    stack: list[tuple[Any, str, int]] = [(doc, "", 1)]
    while stack:
        node, where, depth = stack.pop()
        if isinstance(node, _Bad):
            raise StrictJsonError(node.reason, where or None, node.syntax)
        if isinstance(node, str):
            if why := unstorable(node):
                raise StrictJsonError(why, where or None, syntax=False)
        elif isinstance(node, dict | list):
            if depth > max_depth:
                raise StrictJsonError(f"nested deeper than {max_depth} levels")
            if isinstance(node, _Duplicated):
                raise StrictJsonError("given twice in one object (which one counts is not "
                                      "defined)", _join(where, _name(node.key)))
            if isinstance(node, list):
                stack.extend((v, f"{where}[{i}]", depth + 1)
                             for i, v in reversed(list(enumerate(node))))
                continue
            items = []
            for key, value in node.items():
                if why := unstorable(key):
                    raise StrictJsonError(f"key {why}", _join(where, _name(key)),
                                          syntax=False)
                items.append((value, _join(where, _name(key)), depth + 1))
            stack.extend(reversed(items))


def decode(raw: bytes) -> str:
    """``raw`` as text when it is UTF-8 without a byte-order mark; StrictJsonError else."""
    if raw.startswith(b"\xef\xbb\xbf"):
        raise StrictJsonError("a UTF-8 byte-order mark at the start: send UTF-8 without one")
    if raw.startswith((b"\xff\xfe", b"\xfe\xff")) or b"\x00" in raw:
        raise StrictJsonError("UTF-16 or UTF-32, not UTF-8 (it holds NUL bytes or a UTF-16 "
                              "byte-order mark): send UTF-8")
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise StrictJsonError(f"invalid UTF-8 at byte {exc.start}") from None


def loads(raw: bytes | str, *, max_bytes: int = DEFAULT_MAX_BYTES,
          max_depth: int = MAX_DEPTH) -> Any:
    """One JSON document under the rules above.

    Raises:
        StrictJsonError: naming the field where there is one; ``syntax`` False for a
            well-formed document with a value no field may hold (an integer past 64 bits,
            unstorable text).
    """
    size = len(raw.encode("utf-8", "surrogatepass") if isinstance(raw, str) else raw)
    if size > max_bytes:
        raise StrictJsonError(f"{size} bytes, over the {max_bytes}-byte limit", syntax=False)
    text = raw if isinstance(raw, str) else decode(raw)
    if text.startswith("\ufeff"):
        raise StrictJsonError("a byte-order mark at the start: send UTF-8 without one")
    parser = _Parser()
    try:
        doc = json.loads(text, parse_int=parser.int, parse_float=parser.float,
                         parse_constant=parser.constant, object_pairs_hook=parser.pairs)
    except RecursionError:
        raise StrictJsonError(f"nested deeper than {max_depth} levels") from None
    except json.JSONDecodeError as exc:
        raise StrictJsonError(f"{exc.msg} (line {exc.lineno}, column {exc.colno})") from None
    # the walk naming the field is slow (Python over every node): only where something may
    # be wrong: a hook met a bad value, the text spells a NUL or a surrogate, or it nests deep
    if parser.suspect or _ESCAPED.search(text) or _UNSTORABLE.search(text) \
            or _too_deep(doc, max_depth):
        _walk(doc, max_depth)
    return doc


def load_stream(f: IO[bytes], *, max_bytes: int = DEFAULT_MAX_BYTES,
                max_depth: int = MAX_DEPTH) -> Any:
    """:func:`loads` of an open binary file, reading at most ``max_bytes`` + 1 bytes: a larger
    one is refused without reading the rest."""
    raw = f.read(max_bytes + 1)
    if len(raw) > max_bytes:
        raise StrictJsonError(f"more than {max_bytes} bytes (the limit)", syntax=False)
    return loads(raw, max_bytes=max_bytes, max_depth=max_depth)


def load_file(path: str | os.PathLike[str], *, max_bytes: int = DEFAULT_MAX_BYTES,
              max_depth: int = MAX_DEPTH) -> Any:
    """:func:`load_stream` of a local file given on a command line.

    Raises:
        StrictJsonError: as :func:`loads`.
        OSError: the file cannot be opened or read (not found, denied, a folder).
    """
    with open(path, "rb") as f:
        return load_stream(f, max_bytes=max_bytes, max_depth=max_depth)
