"""After a round: did the collection plan run where and with which hand the cards said?

``recapture_check(cards, plan)`` compares every card that names a recapture
site/hand with the plan's row for that task (``task_id``, ``capture_site``,
``robot_hand_type``; CSV). Plan rows for tasks the cards did not send back to
capture are listed too.
"""

from __future__ import annotations

import csv
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from verdict.errors import VerdictInputError

PLAN_COLUMNS = ("task_id", "capture_site", "robot_hand_type")


@dataclass(frozen=True)
class RecaptureRow:
    """One task's comparison; ``status`` is match, site differs, hand differs,
    site and hand differ, not in plan, or not named by a card."""

    task_id: str
    status: str
    card_site: str | None
    card_hand: str | None
    plan_site: str | None
    plan_hand: str | None


def read_plan(path: str | Path) -> dict[str, dict[str, str]]:
    """The plan CSV keyed by task_id (every missing column named at once)."""
    path = Path(path)
    if not path.is_file():
        raise VerdictInputError(f"plan {path} does not exist")
    with path.open(encoding="utf-8", newline="") as fh:
        reader = csv.DictReader(fh)
        missing = [c for c in PLAN_COLUMNS if c not in (reader.fieldnames or ())]
        if missing:
            raise VerdictInputError(f"plan {path}: missing column(s): {', '.join(missing)}")
        return {row["task_id"]: row for row in reader}


def recapture_check(cards: list[dict[str, Any]], plan: dict[str, dict[str, str]]
                    ) -> list[RecaptureRow]:
    """Compare the cards' recapture site and hand with the plan actually run."""
    rows, named = [], set()
    for card in cards:
        site, hand = card.get("recapture_site"), card.get("recapture_hand")
        if site is None and hand is None:
            continue
        named.add(card["task_id"])
        ran = plan.get(card["task_id"])
        if ran is None:
            rows.append(RecaptureRow(card["task_id"], "not in plan", site, hand, None, None))
            continue
        p_site, p_hand = ran["capture_site"] or None, ran["robot_hand_type"] or None
        diff = [name for name, a, b in (("site", site, p_site), ("hand", hand, p_hand)) if a != b]
        status = "match" if not diff else " and ".join(diff) + (" differ" if len(diff) > 1
                                                                 else " differs")
        rows.append(RecaptureRow(card["task_id"], status, site, hand, p_site, p_hand))
    for task_id, ran in plan.items():
        if task_id not in named:
            rows.append(RecaptureRow(task_id, "not named by a card", None, None,
                                     ran["capture_site"] or None, ran["robot_hand_type"] or None))
    return rows


def format_rows(rows: list[RecaptureRow]) -> str:
    """Plain-text table of :func:`recapture_check`'s rows with a count per status."""
    lines = [f"{r.task_id}: {r.status} (card {r.card_site}/{r.card_hand}, "
             f"plan {r.plan_site}/{r.plan_hand})" for r in rows]
    counts: dict[str, int] = {}
    for r in rows:
        counts[r.status] = counts.get(r.status, 0) + 1
    lines.append(", ".join(f"{k}: {v}" for k, v in counts.items()) or "no recapture named")
    return "\n".join(lines)
