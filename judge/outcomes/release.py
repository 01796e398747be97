"""Splits, release slices and the LeRobot sidecar: after the labels, the last stage.

* :func:`split` assigns ``evaluation_membership`` **by leakage group**: sequences that
  share a value of any ``--by`` key are one component (union-find), whole components go
  to ``held_out_eval`` (seeded shuffle) until the held-out share reaches ``held_out``;
  the rest is ``train``. No group value of the held-out cohort can appear in train.
  Each changed sequence gets a new label version equal to the current one but for the
  membership (``labeled_by`` ``split``); unlabelled sequences are left out and counted.
* :func:`release` lists a slice: ``train`` (membership ``train`` only: ``held_out_eval``
  never enters a training release), ``held_out_eval``, or ``recovery`` (the failure and
  recovery lane: ``mistake_and_recovery`` or ``intervention``, never ``unsafe``).
* :func:`export_sidecar` writes ``meta/avala_sequence_outcomes.jsonl`` beside a LeRobot
  v3.0 / v2.1 dataset: one line per stored episode, joined to the dataset's sequences by
  the ``env.dataset`` + ``env.episode_index`` that ``rcjudge import lerobot`` recorded.
"""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

import sqlalchemy as sa

from judge.ledgers import schema as S
from judge.outcomes.labels import LEAKAGE_KEYS, WRITABLE
from judge.outcomes.store import OutcomeError, OutcomeStore

SLICES = ("train", "held_out_eval", "recovery")
RECOVERY_LANE = ("mistake_and_recovery", "intervention")
SIDECAR = "avala_sequence_outcomes.jsonl"
SIDECAR_KEYS = ("episode_index", "avala_sequence_uid", "outcome", "outcome_version",
                "progress", "quality", "speed", "subtasks", "hand_actions", "mistake_type",
                "recovery_type", "failure_stage", "autonomy_level", "model_version",
                "evaluation_membership", "leakage_groups", "outcome_source",
                "outcome_source_metadata", "outcome_confidence")


def _components(labels: dict[str, dict[str, Any]], by: list[str]) -> list[list[str]]:
    parent = {uid: uid for uid in labels}

    def find(x: str) -> str:
        while parent[x] != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    owner: dict[tuple[str, str], str] = {}
    for uid in sorted(labels):
        for key in by:
            value = labels[uid]["leakage_groups"].get(key)
            if value is None:
                continue
            if (key, value) in owner:
                parent[find(uid)] = find(owner[(key, value)])
            else:
                owner[(key, value)] = uid
    groups: dict[str, list[str]] = {}
    for uid in sorted(labels):
        groups.setdefault(find(uid), []).append(uid)
    return sorted(groups.values())


def split(store: OutcomeStore, dataset: str, by: list[str], held_out: float,
          seed: int = 0) -> dict[str, Any]:
    """Assign train / held_out_eval by leakage group; a summary of what was assigned."""
    bad = [k for k in by if k not in LEAKAGE_KEYS]
    if not by or bad:
        raise OutcomeError(f"--by {','.join(by)}: unknown key(s) {', '.join(bad) or '(none)'}; "
                           f"known: {', '.join(LEAKAGE_KEYS)}")
    if not 0 < held_out < 1:
        raise OutcomeError(f"--held-out {held_out}: must be between 0 and 1 (a share)")
    ds = store.dataset(dataset)
    labels = store.current_labels(ds)
    comps = _components(labels, by)
    random.Random(seed).shuffle(comps)
    target = held_out * len(labels)
    held: set[str] = set()
    for comp in comps:
        if len(held) >= target:
            break
        held.update(comp)
    changed = 0
    for uid, label in sorted(labels.items()):
        membership = "held_out_eval" if uid in held else "train"
        if label["evaluation_membership"] == membership:
            continue
        doc = {k: label[k] for k in WRITABLE}
        doc["evaluation_membership"] = membership
        store.put_label(dataset, uid, doc, labeled_by="split")
        changed += 1
    unlabelled = len(store.sequences(ds)) - len(labels)
    return {"dataset": ds.name, "by": by, "seed": seed, "groups": len(comps),
            "held_out_eval": len(held), "train": len(labels) - len(held),
            "versions_written": changed, "unlabelled_skipped": unlabelled}


def release(store: OutcomeStore, dataset: str, slice_: str) -> list[dict[str, Any]]:
    """The current labels of one release slice, by sequence uid."""
    if slice_ not in SLICES:
        raise OutcomeError(f"slice {slice_!r}: expected one of {', '.join(SLICES)}")
    labels = store.current_labels(store.dataset(dataset))
    if slice_ == "recovery":
        keep = [v for v in labels.values() if v["outcome"] in RECOVERY_LANE]
    else:
        keep = [v for v in labels.values() if v["evaluation_membership"] == slice_]
    return sorted(keep, key=lambda v: v["sequence_uid"])


def sidecar_line(episode_index: int, sequence_uid: str | None,
                 label: dict[str, Any] | None) -> dict[str, Any]:
    """One line of the sidecar: the spec's keys, nulls instead of empty strings."""
    if label is None:
        return {"episode_index": episode_index, "avala_sequence_uid": sequence_uid,
                "outcome": None}

    def blank(v: str) -> str | None:
        return v or None

    return {"episode_index": episode_index, "avala_sequence_uid": sequence_uid,
            "outcome": label["outcome"], "outcome_version": label["version"],
            "progress": label["progress"], "quality": label["quality"],
            "speed": label["speed"], "subtasks": label["subtasks"],
            "hand_actions": label["hand_actions"],
            **{k: blank(label[k]) for k in ("mistake_type", "recovery_type", "failure_stage",
                                            "autonomy_level", "model_version",
                                            "evaluation_membership")},
            "leakage_groups": label["leakage_groups"], "outcome_source": label["source"],
            "outcome_source_metadata": label["source_metadata"],
            "outcome_confidence": label["confidence"]}


def _episode_indices(root: Path) -> tuple[list[int], dict]:
    from judge.bundle.lerobot import _episodes, _read_json

    info = _read_json(root / "meta" / "info.json")
    return sorted(_episodes(root, info, [])), info


def export_sidecar(store: OutcomeStore, dataset: str, root: str | Path,
                   repo_id: str | None = None) -> dict[str, Any]:
    """Write ``meta/avala_sequence_outcomes.jsonl`` for every stored episode of ``root``."""
    root = Path(root)
    episodes, info = _episode_indices(root)
    repo = repo_id or str(info.get("repo_id") or root.name)
    ds = store.dataset(dataset)
    labels = store.current_labels(ds)
    by_episode: dict[int, str] = {}
    with store.engine.connect() as conn:
        rows = conn.execute(sa.select(S.sequences.c.sequence_uid, S.runs.c.env).join(
            S.runs, (S.runs.c.bundle_hash == S.sequences.c.bundle_hash)
            & (S.runs.c.owner == S.LOCAL_OWNER)).where(
            S.sequences.c.dataset_id == ds.dataset_id)).all()
    for uid, env in rows:
        env = env or {}
        if env.get("dataset") == repo and isinstance(env.get("episode_index"), int):
            by_episode[env["episode_index"]] = uid
    lines = [sidecar_line(ep, by_episode.get(ep), labels.get(by_episode.get(ep, "")))
             for ep in episodes]
    path = root / "meta" / SIDECAR
    tmp = path.with_suffix(".jsonl.tmp")
    tmp.write_text("".join(json.dumps(line, ensure_ascii=False) + "\n" for line in lines),
                   encoding="utf-8")
    tmp.replace(path)  # never half-written
    return {"path": str(path), "episodes": len(lines),
            "labelled": sum(1 for line in lines if line["outcome"] is not None),
            "without_sequence": sum(1 for line in lines if line["avala_sequence_uid"] is None)}

