"""Judged runs into a dataset: a sequence per bundle and a ``source: model`` label each.

After the ledgers (a batch or a single judgment wrote the run and its judgment), the
judged bundles are put into the dataset and every judgment writes a model label
(:func:`judge.outcomes.mapping.label_from_judgment`). Writing again for the same judge
version and fingerprint is a no-op (even after a person wrote a newer version), so a
resumed batch adds no versions and never overrules a person. A bundle is the ledger's
owner's run of it (another owner's run of the same bytes is never read). A blind ledger
(the Judge API's, ``judge.api.labelling``) reads no closed column: the task is its public
id.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import sqlalchemy as sa

from judge.ledgers import schema as S
from judge.ledgers.store import Ledger, run_columns
from judge.outcomes.mapping import expert_times, label_from_judgment
from judge.outcomes.store import NotFound, OutcomeError, OutcomeStore


@dataclass
class Labelled:
    """What :func:`label_judged` did: uids added, labels written, ones already current."""

    dataset: str
    sequences: list[str] = field(default_factory=list)
    written: int = 0
    unchanged: int = 0


def label_judged(ledger: Ledger, dataset: str, bundle_hashes: list[str],
                 judge_version: str, *, key_id: str | None = None,
                 expert: dict[str, float] | None = None) -> Labelled:
    """Add each judged bundle's sequence to ``dataset`` and write its model label."""
    store = OutcomeStore(ledger.engine)
    expert = expert_times() if expert is None else expert
    out = Labelled(dataset)
    for bundle_hash in bundle_hashes:
        with ledger.engine.connect() as conn:
            row = conn.execute(sa.select(*run_columns(ledger.blind)).where(
                S.runs.c.bundle_hash == bundle_hash, S.runs.c.owner == ledger.owner)).first()
        judgment = row and ledger.get_judgment(row.run_id, judge_version)
        if judgment is None:
            raise OutcomeError(f"bundle {bundle_hash[:12]}…: not judged by {judge_version!r}; "
                               "judge it first")
        uid = store.add_sequence(dataset, bundle_hash, row.bundle_uri, row.duration_s,
                                 key_id=key_id)
        out.sequences.append(uid)
        doc = label_from_judgment(judgment, policy=f"{row.policy_name}@{row.policy_version}",
                                  cycle_sec=row.cycle_sec,
                                  expert_time_s=expert.get(row.public_task_id if ledger.blind
                                                           else row.task_id))
        try:
            history = store.history(dataset, uid, key_id=key_id)
        except NotFound:
            history = []
        if any(h["source"] == "model" and h["source_metadata"] == doc["source_metadata"]
               for h in history):  # this judgment already wrote its label (maybe overruled)
            out.unchanged += 1
            continue
        store.put_label(dataset, uid, doc, key_id=key_id, labeled_by=f"judge:{judge_version}")
        out.written += 1
    return out
