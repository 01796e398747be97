"""Sampling rounds of the review queue: labels drawn at random, so a rate can be rectified.

Where it sits: beside :mod:`judge.learn.select` (same candidates: the unlabelled runs of
a version outside train's test part, a dataset's ``held_out_eval`` and the lab's own test
runs), before the labels come back (``labels import --picks``) and the rates layer
(:mod:`judge.learn.rate_inputs`) weights each by 1/π. A deterministic top-N pick is not a
sample and cannot correct a rate; a round can.

Interface::

    sampling_round(store, judge_version, *, n=20, strategy="sample", floor=0.5, seed=0,
                   split_seed=0, test_fraction=0.2, test_runs=()) -> (Round, list[Pick])
    open_picks(store, judge_version, strategy) -> list[Pick]   # drawn, not labelled yet

Each candidate i is drawn independently (Poisson sampling) with probability

    π_i = min(1, c · u_i),   u_i = (1 − floor) · w_i / mean(w) + floor,   w_i = √(p_i (1 − p_i))

where p_i is the version's P(success) of the run (:func:`judge.ensemble.vote.p_yes`) and c
is set so that Σ π_i = n (the label budget; every π is 1 when n ≥ N). √(p(1−p)) is the
standard deviation of a calibrated judge's error on the run, the optimal weight of active
inference (Zrnic & Candès 2024); the floor mixes in a uniform share, so no run is
impossible (π_i ≥ floor · n / N) and a judge that is wrong where it is sure still gets
caught. ``sample-uniform`` is floor 1: π = n / N for every run. The number drawn is random,
n on average.

A run's draw: sha256 of the seed, the frame's digest and the run id, as a uniform number
in [0, 1); drawn when below π. The same seed on the same candidates draws the same runs
and is recorded once (``judge.ledgers.rounds``); another frame (new labels, new
judgments) salts another draw, so two rounds are independent.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Collection, Sequence

from judge.ensemble.vote import p_yes
from judge.learn.select import Pick, SelectError, candidates
from judge.ledgers.rounds import SAMPLING_STRATEGIES, FrameRow, Round, frame_digest, record_round

#: The floor of ``sample`` unless given: half the budget spread evenly. The rectified
#: interval's coverage was measured for draws whose π is at least half the uniform n / N
#: (docs/rates.md; at 0.2 × uniform a judge missing half the successes covered 0.69).
DEFAULT_FLOOR = 0.5


class NothingToDraw(SelectError):
    """Every run of the version is labelled or held out: a round has no candidate."""


def inclusion_probabilities(ps: Sequence[float], n: float, floor: float) -> list[float]:
    """π of each run from its P(yes) (see the module docstring), in the order given.

    Raises:
        SelectError: ``n`` below 1, ``floor`` outside (0, 1].
    """
    if not n >= 1:
        raise SelectError(f"--n {n}: expected at least 1")
    if not 0.0 < floor <= 1.0:
        raise SelectError(f"--floor {floor}: expected a share in (0, 1] (1: uniform)")
    count = len(ps)
    if count == 0:
        return []
    if n >= count:
        return [1.0] * count
    w = [math.sqrt(max(p * (1.0 - p), 0.0)) for p in ps]
    mean = sum(w) / count
    u = [(1.0 - floor) * x / mean + floor if mean > 0 else 1.0 for x in w]
    capped: set[int] = set()
    while True:  # raise c until the runs left below 1 carry the rest of the budget
        rest = [i for i in range(count) if i not in capped]
        c = (n - len(capped)) / sum(u[i] for i in rest)
        over = {i for i in rest if c * u[i] >= 1.0}
        if not over:
            return [1.0 if i in capped else c * u[i] for i in range(count)]
        capped |= over


def draw_number(seed: int, digest: str, run_id: str) -> float:
    """A uniform number in [0, 1) from sha256 of the seed, the frame's digest and the run."""
    key = f"sample:{seed}:{digest}:{run_id}".encode()
    return int(hashlib.sha256(key).hexdigest()[:13], 16) / 16**13


def draw(run_ids: Sequence[str], ps: Sequence[float], pis: Sequence[float],
         seed: int) -> list[FrameRow]:
    """Every candidate with its π and whether it is drawn (pure)."""
    digest = frame_digest(run_ids)
    return [FrameRow(rid, pi, p, draw_number(seed, digest, rid) < pi)
            for rid, p, pi in zip(run_ids, ps, pis, strict=True)]


def picks_of(frame: Sequence[FrameRow], round_: Round) -> list[Pick]:
    """The drawn runs as picks: π descending, then run id; the score is π."""
    drawn = sorted((f for f in frame if f.drawn), key=lambda f: (-f.pi, f.run_id))
    return [Pick(f.run_id, i, round(f.pi, 12), round_.strategy,
                 f"drawn with pi {f.pi:.3f} (P(success) {f.p:.2f}; round {round_.round_id})",
                 round_.round_id, f.pi)
            for i, f in enumerate(drawn, start=1)]


def open_picks(store, judge_version: str, strategy: str) -> list[Pick]:
    """The runs ``store``'s rounds of ``judge_version`` and ``strategy`` drew that have no
    label yet, as picks (oldest round first; in a round π descending, then run id): what a
    labeller still owes the rounds already drawn (a drawn run left unlabelled biases the
    rate), before any new round is drawn (the review page)."""
    import sqlalchemy as sa

    from judge.ledgers import schema as S

    r, f, lab = S.sampling_rounds, S.sampling_frames, S.operator_labels
    labelled = sa.exists().where(lab.c.run_id == f.c.run_id).label("labelled")
    stmt = (sa.select(r.c.round_id, r.c.strategy, f.c.run_id, f.c.pi, f.c.p, labelled)
            .join(f, f.c.round_id == r.c.round_id)
            .where(r.c.judge_version == judge_version, r.c.strategy == strategy,
                   f.c.drawn.is_(True), store.mine(f.c.run_id)))
    with store.engine.connect() as conn:
        rows = sorted(conn.execute(stmt).all(), key=lambda x: (x.round_id, -x.pi, x.run_id))
    out, rank = [], {}
    for row in rows:  # ranked as the round ranked its draws (picks_of), labelled ones too
        rank[row.round_id] = rank.get(row.round_id, 0) + 1
        if row.labelled:
            continue
        p = "?" if row.p is None else f"{row.p:.2f}"
        out.append(Pick(row.run_id, rank[row.round_id], round(row.pi, 12), row.strategy,
                        f"drawn with pi {row.pi:.3f} (P(success) {p}; round {row.round_id})",
                        row.round_id, row.pi))
    return out


def sampling_round(store, judge_version: str, *, n: int = 20, strategy: str = "sample",
                   floor: float = DEFAULT_FLOOR, seed: int = 0, split_seed: int = 0,
                   test_fraction: float = 0.2,
                   test_runs: Collection[str] = ()) -> tuple[Round, list[Pick]]:
    """Draw (or find, when already recorded) a round over ``judge_version``'s candidates.

    Raises:
        SelectError: unknown version or strategy, ``n`` < 1, a floor outside (0, 1], a test
            fraction outside [0, 1), or no candidate left.
    """
    if strategy not in SAMPLING_STRATEGIES:
        raise SelectError(f"--strategy {strategy!r}: expected one of "
                          f"{', '.join(SAMPLING_STRATEGIES)}")
    if not 0.0 <= test_fraction < 1.0:
        raise SelectError(f"--test-fraction {test_fraction}: expected a share in [0, 1)")
    floor = 1.0 if strategy == "sample-uniform" else floor
    cands, _ = candidates(store, judge_version, split_seed=split_seed,
                          test_fraction=test_fraction, test_runs=test_runs)
    ps = [p_yes(bool(c.success), c.success_confidence) for c in cands]
    pis = inclusion_probabilities(ps, n, floor)  # checks n and floor, also with no candidate
    if not cands:
        raise NothingToDraw(f"no unlabelled run of {judge_version} outside the test part: "
                            "nothing to draw")
    frame = draw([c.run_id for c in cands], ps, pis, seed)
    options = {"split_seed": split_seed, "test_fraction": test_fraction,
               "test_runs": len(test_runs)}
    with store.transaction() as tx:
        round_ = record_round(tx.conn, judge_version=judge_version, strategy=strategy,
                              budget=float(min(n, len(cands))), floor=floor, seed=seed,
                              frame=frame, options=options)
    return round_, picks_of(frame, round_)
