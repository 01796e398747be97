"""The rows a rate estimator reads: each judged run's cell, P, vote, label and π.

Where it sits: after the ledgers (judgments, current operator labels, sampling rounds,
what each version trained on), before the estimators (``judge.learn.rates``: judge-only,
labels-only, rectified). Interface::

    rate_rows(store, judge_version, outcome="success", by=("policy", "task"),
              *, trained_on=None) -> RateInputs

One :class:`RateRow` per run ``judge_version`` judged:

* ``cell``: the run's values of ``by`` — ``policy`` ``vendor/name@version``, ``task`` the
  task id, ``body`` ``arm/hand`` (as ``judge.learn.select`` names them), ``checkpoint``
  ``vendor/name@version#checkpoint``;
* ``p``: the judge's calibrated P(outcome = yes): the ensemble's P, read back from the
  stored vote and confidence (``judge.ensemble.vote.p_yes``: ``conf`` for a yes, ``1 −
  conf`` for a no; 1/2 where the hard vote and P disagree, the only case the stored
  confidence cannot tell — any fixed p keeps the rectified rate unbiased, only its width
  changes); ``vote``: the voted answer;
* ``pi``: for a labelled row (``y`` set), the run's inclusion probability over the
  sampling rounds usable for this version whose frame holds it, ``1 − Π_r (1 − π_r)``;
  None on every other row (``judge.learn.rates.RateRow``'s rule). The rectified rate covers
  only the runs inside such a frame (:attr:`RateInputs.covered`);
* ``y``: the run's current label of the outcome where it may rectify this version: the run
  was drawn by a usable round. Else None.

A round is *usable* for a version when none of the runs it drew is one the version (or an
ancestor) trained, validated or calibrated on (``judge.ledgers.seen``). A round whose draws
trained the version cannot rectify it: dropping just the trained draws would leave a sample
whose inclusion depends on the labelling order, so the whole round goes.

*Several rounds.* A run that stayed a candidate through rounds r₁ … r_k (not drawn, or
drawn but left unlabelled) had k independent chances: P(drawn) = 1 − Π(1 − π_r). This
takes each π_r as what the run would have had whatever the other runs' draws; a round's
scale c (the budget over the frame) moves a little with which runs earlier rounds took
out, so with many small rounds the figure is close rather than exact. A run drawn in r₁ is
labelled and leaves later frames: only the rounds it was a candidate of count.

What is left out, and why, is counted in :attr:`RateInputs.left_out`; where no label can
rectify the version, :attr:`RateInputs.no_valid_rectification` says so in one line (e.g.
"no valid rectification: all 32 labels trained this version"). Cross-fitting (train K
versions on K folds, rectify each fold with the version that did not see it: Zrnic &
Candès 2024) is not done: it needs K trainings and K judgings of every run, hours on a
GPU for real models, for one rate; label a new round instead (docs/train.md).
"""

from __future__ import annotations

import math
from collections import Counter, defaultdict
from collections.abc import Collection, Sequence
from dataclasses import dataclass

import sqlalchemy as sa

from judge.ensemble.vote import p_yes
from judge.errors import JudgeError
from judge.learn.rates import RateRow
from judge.ledgers import schema as S
from judge.ledgers.review import UNQUEUED
from judge.ledgers.rounds import read_frames
from judge.ledgers.seen import runs_of_bundles, seen_runs

OUTCOMES = ("success", "attempt")
KEYS = ("policy", "task", "body", "checkpoint")


class RateInputError(JudgeError, ValueError):
    """Rows that cannot be read: an unknown version, outcome or grouping key."""


@dataclass(frozen=True)
class LeftOut:
    """Labels or runs kept out of the rectified rate for one reason."""

    reason: str  # trained | round_trained | not_drawn | no_pi | outside_frames | ...
    count: int
    detail: str  # one human line


@dataclass(frozen=True)
class RateInputs:
    """The rows of one version's rate, and what was left out."""

    judge_version: str
    outcome: str
    by: tuple[str, ...]
    rows: tuple[RateRow, ...]
    left_out: tuple[LeftOut, ...]
    rounds: tuple[int, ...]  # the rounds usable for this version
    no_valid_rectification: str | None = None
    #: The runs the rectified rate covers: those inside a usable round's frame, less the
    #: drawn ones left unlabelled (a drawn run treated as undrawn would bias it). Read the
    #: labels-only and rectified readings from these; the judge-only one from ``rows``.
    covered: tuple[RateRow, ...] = ()


def check_by(by: Sequence[str], outcome: str) -> tuple[str, ...]:
    """``by`` as a tuple, checked.

    Raises:
        RateInputError: an empty or repeated key, one not in :data:`KEYS`, an outcome not
            in :data:`OUTCOMES` (one line naming the option).
    """
    if outcome not in OUTCOMES:
        raise RateInputError(f"--outcome {outcome!r}: expected one of {', '.join(OUTCOMES)}")
    by = tuple(by)
    bad = [k for k in by if k not in KEYS]
    if not by or bad or len(set(by)) < len(by):
        raise RateInputError(f"--by {','.join(by)!r}: expected distinct keys among "
                             f"{', '.join(KEYS)}")
    return by


def _cell(row, by: tuple[str, ...]) -> tuple[str, ...] | None:
    policy = f"{row.policy_vendor}/{row.policy_name}@{row.policy_version}"
    values = {"policy": policy, "task": row.task, "body": f"{row.body_arm}/{row.body_hand}",
              "checkpoint": f"{policy}#{row.policy_checkpoint}"}
    cell = tuple(values[k] for k in by)
    return None if None in cell else cell  # blind: a tier-B run's task is unknown


def _judged(store, judge_version: str, outcome: str) -> list:
    j, r = S.judgments, S.runs
    task = r.c.public_task_id if store.blind else r.c.task_id
    stmt = (sa.select(j.c.run_id, j.c[outcome].label("vote"),
                      j.c[f"{outcome}_confidence"].label("conf"), task.label("task"),
                      r.c.policy_vendor, r.c.policy_name, r.c.policy_version,
                      r.c.policy_checkpoint, r.c.body_arm, r.c.body_hand)
            .join(r, r.c.run_id == j.c.run_id)
            .where(j.c.judge_version == judge_version, r.c.owner == store.owner)
            .order_by(j.c.run_id))
    with store.engine.connect() as conn:
        rows = conn.execute(stmt).all()
    if not rows:
        known = ", ".join(store.judge_versions()) or "none"
        raise RateInputError(f"--judge {judge_version!r}: no judgment of this version in the "
                             f"ledger (versions with judgments: {known})")
    return rows


def _strategies(store) -> dict[int, str]:
    """label id -> the strategy of its review row (labels from the queue only)."""
    rv = S.review_labels
    with store.engine.connect() as conn:
        return dict(conn.execute(sa.select(rv.c.label_id, rv.c.strategy)).all())


def rate_rows(store, judge_version: str, outcome: str = "success",
              by: Sequence[str] = ("policy", "task"), *,
              trained_on: Collection[str] | None = None) -> RateInputs:
    """The rows of ``judge_version``'s rate of ``outcome`` per cell of ``by`` (see the
    module docstring).

    ``trained_on``: bundle hashes the version trained on (its ``training.used_runs``, as
    ``judge.learn.evaluate.load_candidate`` reads it), for a version trained against another
    ledger, whose training this one does not record; added to what the ledger records.

    Raises:
        RateInputError: an unknown version, outcome or key.
    """
    by = check_by(by, outcome)
    judged = _judged(store, judge_version, outcome)
    seen = set(seen_runs(store, judge_version).runs)
    if trained_on:
        seen |= runs_of_bundles(store, trained_on)
    labels = store.current_labels()
    with store.engine.connect() as conn:
        rounds, frames = read_frames(conn)
    unusable = {rid for rid, f in frames if f.drawn and f.run_id in seen}
    usable = tuple(r for r in rounds if r not in unusable)
    pis: dict[str, list[float]] = defaultdict(list)  # run -> its π in each usable round
    drawn, drawn_unusable = set(), set()
    for rid, f in frames:
        if f.drawn:
            (drawn_unusable if rid in unusable else drawn).add(f.run_id)
        if rid not in unusable:
            pis[f.run_id].append(f.pi)
    counts: Counter = Counter()
    no_pi: Counter = Counter()
    strategies = _strategies(store)
    rows, covered = [], []
    judged_ids = set()
    for row in judged:
        cell = _cell(row, by)
        if cell is None:
            counts["tier_b"] += 1
            continue
        judged_ids.add(row.run_id)
        pi = round(inclusion(pis[row.run_id]), 12) if row.run_id in pis else None
        stored = labels.get(row.run_id)
        y = None
        if stored is None:
            counts["drawn_unlabelled"] += row.run_id in drawn
        elif row.run_id in seen:
            counts["trained"] += 1
        elif row.run_id in drawn:
            y = bool(getattr(stored.label, outcome))
        elif row.run_id in drawn_unusable:
            counts["round_trained"] += 1
        elif pi is not None:
            counts["not_drawn"] += 1
        else:
            counts["no_pi"] += 1
            no_pi[strategies.get(stored.label_id, UNQUEUED)] += 1
        counts["outside_frames"] += pi is None
        one = RateRow(row.run_id, cell, p_yes(bool(row.vote), float(row.conf)),
                      bool(row.vote), y, pi if y is not None else None)
        rows.append(one)
        if pi is not None and not (row.run_id in drawn and y is None):
            covered.append(one)
    counts["not_judged"] = len(set(labels) - {r.run_id for r in judged})
    rows.sort(key=lambda r: (r.cell, r.run_id))
    covered.sort(key=lambda r: (r.cell, r.run_id))
    return RateInputs(judge_version, outcome, by, tuple(rows),
                      _left_out(counts, no_pi, len(rows), judge_version), usable,
                      _no_rectification(rows, counts, labels, judged_ids), tuple(covered))


def _left_out(counts: Counter, no_pi: Counter, n: int, version: str) -> tuple[LeftOut, ...]:
    """One :class:`LeftOut` per reason with a count, in a fixed order."""
    by = ", ".join(f"{k} {v}" for k, v in sorted(no_pi.items(), key=lambda x: (-x[1], x[0])))
    lines = {
        "trained": "label(s) of runs this version (or its parent) trained, validated or "
                   "calibrated on: its errors there look small by construction",
        "round_trained": "label(s) drawn by a sampling round whose other draws trained this "
                         "version: the round's sample is no longer random for it",
        "not_drawn": "label(s) of runs in a sampling frame that no round drew (a deterministic "
                     "pick or an import): used as unlabelled runs",
        "no_pi": f"label(s) without a recorded inclusion probability ({by}): imported, or "
                 "picked by a deterministic strategy; `labels import --random-sample` records "
                 "a file the lab drew at random",
        "outside_frames": f"of {n} judged run(s) outside every sampling frame usable for "
                          f"{version}: in the judge-only rate, not covered by the rectified one",
        "drawn_unlabelled": "run(s) drawn by a usable round with no label yet: label them (a "
                            "drawn run left unlabelled biases the rectified rate)",
        "tier_b": "tier-B run(s) whose task this ledger may not read (blind)",
        "not_judged": "label(s) of runs this version did not judge",
    }
    return tuple(LeftOut(k, counts[k], f"{counts[k]} {line}")
                 for k, line in lines.items() if counts[k])


def _no_rectification(rows: Sequence[RateRow], counts: Counter, labels: dict,
                      judged: set[str]) -> str | None:
    """The line saying why no label can rectify the version, or None when one can."""
    if any(r.y is not None for r in rows):
        return None
    n = len(judged & set(labels))
    if n == 0:
        return "no valid rectification: no label of a run this version judged"
    if counts["trained"] == n:
        return f"no valid rectification: all {n} labels trained this version"
    parts = [f"{counts[k]} {what}" for k, what in (
        ("trained", "trained it"), ("round_trained", "from rounds that trained it"),
        ("not_drawn", "not drawn"), ("no_pi", "without a recorded pi")) if counts[k]]
    return (f"no valid rectification: none of the {n} labels of runs this version judged was "
            f"drawn by a sampling round it did not train on ({', '.join(parts)})")


def inclusion(pis: Sequence[float]) -> float:
    """1 − Π (1 − π_r): the chance a run is drawn by at least one of its rounds."""
    return 1.0 - math.prod(1.0 - p for p in pis)
