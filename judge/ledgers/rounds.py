"""Sampling rounds: which runs a round could draw, with what probability, and which it drew.

Beside the review queue's labels (``judge.ledgers.review``, migration 0011). A rectified
rate (``judge.learn.rate_inputs``) may use a label only where the run was drawn at random
with a known inclusion probability π; these tables are that record:

* ``sampling_rounds``: one row per round — a version's Poisson draw over its candidates
  (``judge.learn.draw``: ``rcjudge review next --strategy sample|sample-uniform``), or a
  label file a lab asserts was a uniform random sample (``rcjudge labels import
  --random-sample``, strategy ``asserted``, no version);
* ``sampling_frames``: every candidate of the round, drawn or not, with its π and the P
  it came from: the runs a rectified rate covers.

A round is recorded once: its ``round_key`` (sha256 of the version, strategy, budget,
floor, seed and every candidate with its π) is unique, so the same command on an unchanged
ledger gives back the round already recorded instead of a second, dependent draw.

An asserted round's frame is every run in the ledger whose labels, if any, all come from
the file; its draws are the file's runs, each with π = n / N (n runs of N). A run of the
file that had another label before is refused: a random sample is drawn from unlabelled
runs.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from judge.ledgers import schema as S
from judge.ledgers.errors import LedgerError
from judge.ledgers.records import Label
from judge.ledgers.store import _insert_ignore

#: Strategies of the queue that draw a round (``judge.learn.draw``), and of an assertion.
SAMPLING_STRATEGIES: tuple[str, ...] = ("sample", "sample-uniform")
ASSERTED = "asserted"


@dataclass(frozen=True)
class FrameRow:
    """One candidate of a round."""

    run_id: str
    pi: float  # its inclusion probability, 0 < pi <= 1
    p: float | None  # the P(success) pi came from (None: asserted)
    drawn: bool


@dataclass(frozen=True)
class Round:
    """A recorded round; ``new`` says whether this call wrote it."""

    round_id: int
    judge_version: str | None  # None: asserted by the lab
    strategy: str
    budget: float  # the expected number of draws, sum of pi
    floor: float | None
    seed: int | None
    candidates: int
    drawn: int
    options: dict[str, Any] = field(default_factory=dict)
    new: bool = True


def frame_digest(run_ids: Sequence[str]) -> str:
    """sha256 of the sorted run ids of a frame (what salts a round's draws)."""
    return hashlib.sha256("".join(f"{r}\n" for r in sorted(run_ids)).encode()).hexdigest()


def round_key(judge_version: str | None, strategy: str, budget: float, floor: float | None,
              seed: int | None, frame: Sequence[FrameRow]) -> str:
    """The identity of a round: its settings and every candidate with its π and draw."""
    doc = [judge_version, strategy, repr(float(budget)), floor, seed,
           sorted((f.run_id, repr(f.pi), f.drawn) for f in frame)]
    return hashlib.sha256(json.dumps(doc).encode()).hexdigest()


def record_round(conn: Connection, *, judge_version: str | None, strategy: str,
                 budget: float, floor: float | None, seed: int | None,
                 frame: Sequence[FrameRow], options: Mapping[str, Any]) -> Round:
    """Write a round and its frame inside the caller's transaction; the round already
    recorded with the same key is given back (``new`` False) and nothing is written."""
    key = round_key(judge_version, strategy, budget, floor, seed, frame)
    drawn = sum(f.drawn for f in frame)
    values = {"round_key": key, "judge_version": judge_version, "strategy": strategy,
              "budget": float(budget), "floor": floor, "seed": seed,
              "candidates": len(frame), "drawn": drawn, "options": dict(options),
              "created_at": datetime.now(UTC)}
    got = conn.execute(_insert_ignore(conn.dialect.name, "sampling_rounds"), values).first()
    if got is None:
        t = S.sampling_rounds
        rid = conn.execute(sa.select(t.c.round_id).where(t.c.round_key == key)).scalar_one()
        return _round(rid, values, new=False)
    if frame:
        conn.execute(sa.insert(S.sampling_frames), [
            {"round_id": got[0], "run_id": f.run_id, "pi": f.pi, "p": f.p, "drawn": f.drawn}
            for f in frame])
    return _round(got[0], values, new=True)


def _round(round_id: int, v: Mapping[str, Any], new: bool) -> Round:
    return Round(round_id, v["judge_version"], v["strategy"], v["budget"], v["floor"],
                 v["seed"], v["candidates"], v["drawn"], dict(v["options"]), new)


def asserted_round(conn: Connection, labels: Sequence[Label], source: str,
                   owner: str = S.LOCAL_OWNER) -> Round:
    """Record a label file as a uniform random sample (``labels import --random-sample``):
    frame = every run whose labels, if any, are all among ``labels``; drawn = their runs,
    π = n / N. Call inside the transaction that writes ``labels``, before or after them.
    Only ``owner``'s runs and labels are read (the frame is that owner's runs).

    Raises:
        LedgerError: a run of the file had a label from elsewhere (naming the first), or
            the file names no run.
    """
    if not labels:
        raise LedgerError(f"--random-sample {source}: the file holds no label; nothing to "
                          "record as a sample")
    lab = S.operator_labels
    mine = {(lb.run_id, lb.labeled_by, lb.labeled_at) for lb in labels}
    runs = S.runs
    stored = conn.execute(sa.select(lab.c.run_id, lab.c.labeled_by, lab.c.labeled_at)
                          .join(runs, runs.c.run_id == lab.c.run_id)
                          .where(runs.c.owner == owner)).all()
    elsewhere = {r.run_id: r for r in stored if (r.run_id, r.labeled_by, r.labeled_at)
                 not in mine}
    drawn = sorted({lb.run_id for lb in labels})
    if clash := [r for r in drawn if r in elsewhere]:
        first = elsewhere[clash[0]]
        raise LedgerError(
            f"--random-sample {source}: run {clash[0]!r} already had a label (by "
            f"{first.labeled_by}, {first.labeled_at.isoformat()}) before this file; a random "
            f"sample is drawn from unlabelled runs ({len(clash)} such run(s)): import the file "
            "without --random-sample")
    owned = conn.execute(sa.select(runs.c.run_id).where(runs.c.owner == owner)).scalars().all()
    frame_ids = sorted(r for r in owned if r not in elsewhere)
    pi = len(drawn) / len(frame_ids)
    chosen = set(drawn)
    frame = [FrameRow(r, pi, None, r in chosen) for r in frame_ids]
    return record_round(conn, judge_version=None, strategy=ASSERTED, budget=float(len(drawn)),
                        floor=None, seed=None, frame=frame, options={"source": source})


def check_draw(conn: Connection, run_id: str, judge_version: str, round_id: int,
               pi: float) -> None:
    """Refuse a review row claiming a draw the ledger does not hold: the run must be a
    drawn candidate of round ``round_id`` of ``judge_version``, with that π (to 1e-9).

    Raises:
        LedgerError: one line naming the run, the round and what differs.
    """
    r, f = S.sampling_rounds, S.sampling_frames
    row = conn.execute(sa.select(r.c.judge_version, f.c.pi, f.c.drawn)
                       .join(f, (f.c.round_id == r.c.round_id) & (f.c.run_id == run_id))
                       .where(r.c.round_id == round_id)).first()
    what = f"label of run {run_id!r}: sampling round {round_id}"
    if row is None:
        raise LedgerError(f"{what} does not hold this run (no such round, or not a candidate)")
    if row.judge_version != judge_version:
        raise LedgerError(f"{what} was drawn by {row.judge_version!r}, not {judge_version!r}")
    if not row.drawn:
        raise LedgerError(f"{what} did not draw this run")
    if abs(row.pi - pi) > 1e-9:
        raise LedgerError(f"{what} drew it with pi {row.pi!r}, not {pi!r}")


def read_frames(conn: Connection) -> tuple[dict[int, Round], list[tuple[int, FrameRow]]]:
    """Every recorded round, and every (round id, candidate), by round then run."""
    r, f = S.sampling_rounds, S.sampling_frames
    rounds = {row.round_id: _round(row.round_id, row._mapping, new=False)
              for row in conn.execute(sa.select(r).order_by(r.c.round_id))}
    rows = conn.execute(sa.select(f).order_by(f.c.round_id, f.c.run_id)).all()
    return rounds, [(row.round_id, FrameRow(row.run_id, row.pi, row.p, bool(row.drawn)))
                    for row in rows]
