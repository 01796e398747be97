"""The 14 checks' report that travels with a cards file: ``cards.checks.json`` beside it.

The checks recompute every card from the three tables (``verdict.reference``), so a
screen given only ``cards.json`` could not run them. ``rcjudge verdict build --out
cards.json`` writes the report it ran on those cards next to them, with the SHA-256 of the
cards file as written; a screen given the cards without the tables (``rcjudge serve
--cards``, ``rcjudge verdict screen --cards``) shows that report when the cards are still
those bytes, and otherwise shows every check as not run, saying why. So the same cards
show the same check states however the screen is made.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

from rcjudge import strict_json
from verdict.errors import VerdictInputError


def checks_path(cards: str | Path) -> Path:
    """``cards.json`` -> ``cards.checks.json`` (any other name: ``NAME.checks.json``)."""
    p = Path(cards)
    stem = p.name[:-len(".json")] if p.name.endswith(".json") else p.name
    return p.with_name(stem + ".checks.json")


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def write_checks(cards: str | Path, report: dict[str, Any]) -> Path:
    """Write ``report`` (:meth:`verdict.checks.Report.to_dict`) beside the cards file."""
    out = checks_path(cards)
    doc = {"cards": Path(cards).name, "cards_sha256": _sha256(Path(cards)), "report": report}
    out.write_text(json.dumps(doc, ensure_ascii=False, indent=1) + "\n", encoding="utf-8")
    return out


def read_checks(cards: str | Path) -> tuple[dict[str, Any] | None, str]:
    """(the report, "") when the file beside ``cards`` was written for these very bytes,
    else (None, why the checks were not run).

    Raises:
        VerdictInputError: the file is there but is not a report this module wrote.
    """
    path = checks_path(cards)
    if not path.is_file():
        return None, (f"no tables given and no {path.name} beside the cards: give "
                      "--evaluation-run, --task-spec and --dataset-index to run the checks")
    try:
        doc = strict_json.load_file(path)
    except (OSError, strict_json.StrictJsonError) as exc:
        raise VerdictInputError(f"{path}: {exc}") from None
    if (not isinstance(doc, dict) or not isinstance(doc.get("cards_sha256"), str)
            or not isinstance(doc.get("report"), dict)
            or not isinstance(doc["report"].get("cards"), list)):
        raise VerdictInputError(f"{path}: not a checks file (expected cards_sha256 and report, "
                                "as rcjudge verdict build --out writes)")
    if doc["cards_sha256"] != _sha256(Path(cards)):
        return None, (f"{Path(cards).name} changed after its checks were run ({path.name}): "
                      "give the three tables to run them again")
    return doc["report"], ""
