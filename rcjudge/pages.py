"""File names of the per-run explain pages, the one thing ``judge/`` and ``verdict/`` share.

``rcjudge explain --out-dir DIR`` (``judge.explain``) writes ``DIR/<page_name(run_id)>`` and
the verdict screen (``verdict.screen.runs``) links a task's runs to the same names, so
neither package imports the other.
"""

from __future__ import annotations

from urllib.parse import quote


def page_name(run_id: str) -> str:
    """``synth-0003-0000`` -> ``synth-0003-0000.html``; other characters %-escaped (``/`` too)."""
    return quote(run_id, safe="-_.") + ".html"


def page_href(run_id: str) -> str:
    """The URL path segment of :func:`page_name` (its ``%`` escaped once more)."""
    return quote(page_name(run_id), safe="-_.")
