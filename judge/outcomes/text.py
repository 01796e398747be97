"""Text rules for every string that is stored (issue 29): pure, no I/O.

Stored strings must be Unicode scalar values that encode as UTF-8 (no lone surrogates,
which JSON can spell as ``\\ud800``) and hold no NUL. :func:`check_text` refuses one
string naming its field; :func:`first_bad` finds the first bad string or key in a parsed
JSON document (the API's body guard refuses it with 422); :func:`scrub` serves a row
stored before these rules: bad characters replaced by U+FFFD, the fields named.
"""

from __future__ import annotations

from typing import Any

from rcjudge.strict_json import unstorable

REPLACEMENT = "\ufffd"


def problem(text: str) -> str | None:
    """Why ``text`` may not be stored, or None when it may (the strict JSON reader's rule,
    :func:`rcjudge.strict_json.unstorable`)."""
    return unstorable(text)


def _join(path: str, part: str) -> str:
    return f"{path}.{part}" if path else part


def _key_name(key: str) -> str:
    return repr(key) if problem(key) else key


def first_bad(doc: Any, path: str = "") -> tuple[str, str] | None:
    """``(field, reason)`` of the first string or object key that may not be stored."""
    stack: list[tuple[Any, str]] = [(doc, path)]
    while stack:
        node, where = stack.pop()
        if isinstance(node, str):
            why = problem(node)
            if why:
                return where or "body", why
        elif isinstance(node, dict):
            items = []
            for key, value in node.items():
                why = problem(key) if isinstance(key, str) else None
                if why:
                    return _join(where, _key_name(key)), f"key {why}"
                items.append((value, _join(where, str(key))))
            stack.extend(reversed(items))
        elif isinstance(node, list):
            stack.extend(reversed([(v, f"{where}[{i}]") for i, v in enumerate(node)]))
    return None


def _clean(text: str) -> str:
    return "".join(REPLACEMENT if problem(ch) else ch for ch in text)


def scrub(doc: Any, path: str = "") -> tuple[Any, list[str]]:
    """``doc`` with every bad string or key cleaned, and the fields that were (sorted)."""
    fields: list[str] = []

    def walk(node: Any, where: str) -> Any:
        if isinstance(node, str):
            if problem(node):
                fields.append(where)
                return _clean(node)
            return node
        if isinstance(node, dict):
            out = {}
            for key, value in node.items():
                name = _join(where, _key_name(key) if isinstance(key, str) else str(key))
                if isinstance(key, str) and problem(key):
                    fields.append(name)
                    key = _clean(key)
                out[key] = walk(value, name)
            return out
        if isinstance(node, list):
            return [walk(v, f"{where}[{i}]") for i, v in enumerate(node)]
        return node

    return walk(doc, path), sorted(set(fields))
