"""Judgments through a key configured with a dataset: the run's sequence and model label.

The Judge API's request and response are fixed by its spec, so the dataset is a property
of the **key** (``rcjudge keys create … --dataset OWNER/SLUG``, table
``api_key_datasets``): every judgment made through it puts the judged run into that
dataset (in the key's mode database) and writes its ``source: model`` label, exactly as
``rcjudge batch --dataset`` does (:func:`judge.outcomes.record.label_judged`): the same
judgment again — a replay, a resubmission — writes no new version and never overrules a
person. The key's edit right on the dataset is checked before anything is judged (403,
nothing written). A tier-B run is refused (422) by such a key: datasets are readable by
other keys, and tier-B runs stay out of everything another key can read.
"""

from __future__ import annotations

from typing import Any

import sqlalchemy as sa

from judge.api.errors import ApiError
from judge.ledgers import schema as S
from judge.ledgers.store import Ledger
from judge.outcomes.store import Forbidden, NotFound, OutcomeError, OutcomeStore


def check_dataset_key(ledger: Ledger, caller: Any, request: Any) -> None:
    """Before judging: the key may edit its dataset, and the run is not tier B."""
    if request.task.tier == "B":
        raise ApiError(422, f"task.tier: key {caller.key_id} puts every judged run into "
                       f"dataset {caller.dataset}; tier-B runs stay out of datasets (use a "
                       "key without a dataset)", param="task.tier")
    try:
        OutcomeStore(ledger.engine).dataset(caller.dataset, caller.key_id, edit=True)
    except (NotFound, Forbidden) as exc:
        raise ApiError(403, f"key {caller.key_id} labels into its dataset {caller.dataset}, "
                       f"which it may not edit now ({exc})") from None


def label_judgment(ledger: Ledger, caller: Any, run_id: str, judge_version: str) -> str:
    """Put the judged run into the key's dataset and write its model label; the uid."""
    from judge.outcomes.record import label_judged

    with ledger.engine.connect() as conn:
        bundle_hash = conn.execute(sa.select(S.runs.c.bundle_hash).where(
            S.runs.c.run_id == run_id)).scalar_one()
    try:
        done = label_judged(ledger, caller.dataset, [bundle_hash], judge_version,
                            key_id=caller.key_id)
    except (Forbidden, NotFound) as exc:  # the grant went between the check and now
        raise ApiError(403, f"key {caller.key_id}: dataset {caller.dataset}: {exc}") from None
    except OutcomeError as exc:
        raise ApiError(422, f"dataset {caller.dataset}: {exc}") from None
    return done.sequences[0]
