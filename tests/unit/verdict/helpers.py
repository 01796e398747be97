"""Helpers of the verdict tests: small Arrow tables written by hand."""

from __future__ import annotations

from typing import Any

import pyarrow as pa

from verdict.tables import COLUMNS

ART = "RLDX-1-rc7"


def table(name: str, rows: list[dict[str, Any]]) -> pa.Table:
    """An Arrow table of ``name``'s columns from row dicts (missing keys are null)."""
    schema = pa.schema(list(COLUMNS[name].items()))
    return pa.Table.from_pylist([{k: r.get(k) for k in schema.names} for r in rows],
                                schema=schema)


def runs(task: str, outcomes: list[tuple[bool | None, str | None, float | None]],
         artifact: str = ART) -> list[dict[str, Any]]:
    """Evaluation rows of one task from ``(success, failure_reason, cycle_sec)``."""
    return [{"task_id": task, "model_artifact": artifact, "episode_id": f"{task}-{i}",
             "success": s, "failure_reason": r, "cycle_sec": c}
            for i, (s, r, c) in enumerate(outcomes)]


def spec_row(task: str, skill: str = "pick", target: float | None = 0.8,
             limit: float | None = 0.5, max_cycle: float | None = 12.0,
             min_ep: int | None = 100) -> dict[str, Any]:
    return {"task_id": task, "required_skill": skill, "target_success_rate": target,
            "top_reason_share_limit": limit, "max_cycle_sec": max_cycle,
            "min_episode_count": min_ep}


def ds_row(task: str, skill: str | None = "pick", count: int | None = 100,
           site: str | None = "안산", hand: str | None = "parallel_2f") -> dict[str, Any]:
    return {"task_id": task, "required_skill": skill, "episode_count": count,
            "capture_site": site, "robot_hand_type": hand}
