"""Why a review queue is empty, counted: the line the page shows instead of a run.

Where it sits: beside the queue (``judge.learn.select``), over the same store (a one-owner
ledger, or an API key's :class:`judge.review.reach.Reach`). A queue is empty for one of
five reasons, checked in this order, each with its counts:

* ``no-runs``: the store holds no run (a key: it judged none through the API and holds an
  edit grant on no dataset with runs);
* ``not-judged``: the version judged none of the runs there;
* ``all-labelled``: every run the version judged there has a label;
* ``held-out``: the unlabelled ones are all held out from labelling (the test part ``rcjudge
  train`` keeps, a dataset's ``held_out_eval`` split, tier-B runs a blind store cannot
  place);
* ``seen``: the rest were all shown on this page already (labelled, skipped or waiting).
"""

from __future__ import annotations

from dataclasses import dataclass

import sqlalchemy as sa

from judge.ledgers import schema as S


@dataclass(frozen=True)
class QueueState:
    """Counts of one version's queue over one store."""

    visible: int  # runs in the store
    judged: int  # of them, judged by the version
    labelled: int  # of those, with a label
    candidates: int  # unlabelled and not held out: what the queue ranks
    excluded: int  # candidates the page has shown already
    versions: tuple[str, ...] = ()  # versions that judged runs of the store


def queue_state(store, judge_version: str, exclude: set[str]) -> QueueState:
    """The counts of ``judge_version``'s queue over ``store`` (``exclude``: the page's)."""
    from judge.learn.select import candidates

    r, j, lab = S.runs, S.judgments, S.operator_labels
    judged = (sa.select(j.c.run_id).where(j.c.judge_version == judge_version,
                                          store.mine(j.c.run_id)))
    with store.engine.connect() as conn:
        visible = conn.execute(sa.select(sa.func.count()).select_from(r)
                               .where(store.mine(r.c.run_id))).scalar_one()
        n_judged = conn.execute(sa.select(sa.func.count()).select_from(
            judged.subquery())).scalar_one()
        labelled = conn.execute(sa.select(sa.func.count(sa.distinct(lab.c.run_id)))
                                .where(lab.c.run_id.in_(judged))).scalar_one()
    if not n_judged:
        return QueueState(visible, 0, 0, 0, 0, tuple(store.judge_versions()))
    cands, _ = candidates(store, judge_version)
    return QueueState(visible, n_judged, labelled, len(cands),
                      sum(c.run_id in exclude for c in cands))


def empty_reason(state: QueueState, judge_version: str, *, key: bool,
                 read_only: list[str] | tuple[str, ...] = ()) -> tuple[str, str]:
    """(reason code, one line) of an empty queue (module docstring); ``key``: the store is
    an API key's reach (else one ledger); ``read_only``: datasets the key may only read."""
    sees = "this key sees" if key else "in this ledger"
    v, s = judge_version, state
    if not s.visible:
        if not key:
            return "no-runs", "The queue is empty: this ledger holds no runs yet."
        line = ("The queue is empty: no runs are visible to this key. It has judged none "
                "through the API and holds an edit grant on no dataset with runs")
        if read_only:
            line += (f"; it may only read {', '.join(read_only)} (a read grant shows a "
                     "dataset's outcomes, not its queue: labelling is a write)")
        return "no-runs", line + (". To label a team's runs, the operator grants the key: "
                                  "rcjudge datasets grant DATASET KEY_ID edit.")
    if not s.judged:
        did = (f"versions that did: {', '.join(s.versions)}" if s.versions
               else "no version has judged them")
        return "not-judged", (f"The queue is empty: {v} judged none of the {s.visible} runs "
                              f"{sees} ({did}).")
    if s.labelled == s.judged:
        return "all-labelled", (f"The queue is empty: all {s.judged} runs {v} judged "
                                f"{sees} have a label.")
    held = s.judged - s.labelled - s.candidates
    if not s.candidates:
        return "held-out", (
            f"The queue is empty: of the {s.judged} runs {v} judged {sees}, {s.labelled} "
            f"have a label and the other {held} are held out from labelling (the test part "
            "rcjudge train keeps, a dataset's held_out_eval split, tier-B runs).")
    return "seen", (f"The queue is empty for this page: the {s.candidates} unlabelled runs "
                    f"{v} judged {sees} were all shown here already (labelled, skipped or "
                    f"waiting to be saved); {s.labelled} have a label"
                    + (f", {held} are held out" if held else "")
                    + ". Reload the page to see the skipped ones again.")
