"""The review queue's selection: which unlabelled runs people should label next.

Where it sits: after the ledgers (it reads one judge version's judgments and the operator
labels), before the labels it asks for go back in (``rcjudge review``'s page, ``labels
import``) and ``rcjudge train`` learns from them.

Interface::

    next_runs(store, judge_version, *, n=20, strategy="committee", seed=0,
              split_seed=0, test_fraction=0.2, test_runs=()) -> list[Pick]

``store`` is a :class:`judge.ledgers.store.Ledger`. Each :class:`Pick` has the ledger's
``run_id``, its ``rank`` (1 = label first), its ``score`` under the strategy, the
``strategy`` and one human line, ``reason``. Candidates are the runs ``judge_version``
judged that have no operator label (a label answers every question of a run at once) and
that ``rcjudge train --split-seed S --test-fraction F`` would not put in its test part
(the same seed-group hash, :func:`judge.learn.train.assign_part`), nor a dataset's split
(``rcjudge split``) holds out (its bundle is a sequence whose current outcome label is
``held_out_eval``), nor one the lab names as its own test set (``test_runs``,
:func:`read_test_runs`): picking test runs by what the judge finds hard would bias the test
part ``rcjudge eval`` scores on. Only the store's runs and labels are read (a ledger: its
owner's; an API key's review page: its own and those of the datasets it may edit,
``judge.review.reach``): no run outside them moves a pick's rank or score. A dataset's split
counts for a run when the run's owner may edit the dataset. Read through a blind ledger
(the Judge API's), a tier-B run's task is unknown, so its seed group is too, and it is
never a candidate.

Strategies (``docs/judge-quality.md``, "The review queue"):

* ``committee``: disagreement of the three models. For attempt and success, the mean KL
  divergence of each model's calibrated P(yes) to the consensus (their mean), in units of
  ln 2 so that a question scores in [0, 1]; for the failure class, the vote entropy of the
  classes named by the models that named one, in units of ln 3. The score is the sum of
  the three. Mean KL rather than vote entropy for the yes/no questions: three hard votes
  give only two values (3–0 or 2–1), so most runs would tie; the probabilities say how
  far apart the models are. The classes are hard votes, so entropy is all they allow.
* ``uncertainty``: 1 − the lower of the two confidences the judgment reports (a
  confidence is P(answer is right), never below 1/2, so the score is in [0, 1/2]).
* ``random``: a uniform number from sha256 of ``seed`` and the run id: the same seed
  gives the same order, and a run's place does not move when other runs arrive.
* ``coverage``: tasks, policies and bodies with few labels first. A run scores the mean
  of 1 / (1 + labels) over its task, its policy (vendor/name@version) and its body
  (arm/hand); picked greedily, each pick counting as a label of its strata, so the picks
  spread over them. Among equal scores the committee score decides.

Ties (equal scores, to 12 decimals) go to the run id that sorts first.
"""

from __future__ import annotations

import csv
import hashlib
import io
import json
import math
from collections import Counter
from collections.abc import Collection, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path

import sqlalchemy as sa
from pydantic import ValidationError

from judge.errors import JudgeError
from judge.learn.train import TrainConfig, assign_part, seed_group
from judge.ledgers import schema as S
from judge.ledgers.review import STRATEGIES, Review
from rcjudge import strict_json

_LN2, _LN3 = math.log(2.0), math.log(3.0)


class SelectError(JudgeError, ValueError):
    """A queue that cannot be built: unknown version or strategy, a bad count."""


@dataclass(frozen=True)
class Pick:
    """One run the queue asks a person to label."""

    run_id: str  # the ledger's run id
    rank: int  # 1 = label first
    score: float
    strategy: str  # one of STRATEGIES, or a sampling round's (judge.learn.draw)
    reason: str  # one human line
    round_id: int | None = None  # the sampling round that drew it (sampling strategies)
    pi: float | None = None  # its inclusion probability there


def pick_json(pick: Pick) -> dict:
    """A pick as ``rcjudge review next --json`` prints it (a round's two fields only on the
    picks of a sampling round)."""
    out = asdict(pick)
    if pick.round_id is None:
        del out["round_id"], out["pi"]
    return out


@dataclass(frozen=True)
class Candidate:
    """An unlabelled run as the queue scores it: what the version said, and its strata."""

    run_id: str
    task: str
    policy: str  # vendor/name@version
    body: str  # arm/hand
    p_attempt: tuple[float, ...]  # each model's calibrated P(yes)
    p_success: tuple[float, ...]
    classes: tuple[str | None, ...]  # each model's failure class (None: none named)
    attempt_confidence: float
    success_confidence: float
    success: bool | None = None  # the voted success (None: not read)


def read_picks(path: str | Path, option: str = "--picks") -> tuple[str | None, list[dict]]:
    """The judge version and the picks of a queue file (the JSON ``rcjudge review next
    --json`` prints), in its order; each pick is checked to have a run id, named once.

    Raises:
        SelectError: the file is missing or not that JSON, a pick without a run id, a run
            id named twice (one line naming ``option``, the file and the pick).
    """
    path = Path(path)
    if not path.is_file():
        raise SelectError(f"{option} {path}: file not found")
    try:
        doc = strict_json.load_file(path)
    except strict_json.StrictJsonError as exc:
        raise SelectError(f"{option} {path}: {exc.described()}") from None
    if not isinstance(doc, dict) or not isinstance(doc.get("picks"), list):
        raise SelectError(f"{option} {path}: expected the JSON of `rcjudge review next --json` "
                          '(an object with a "picks" list)')
    seen: dict[str, int] = {}
    for i, entry in enumerate(doc["picks"]):
        run_id = entry.get("run_id") if isinstance(entry, dict) else None
        if not isinstance(run_id, str) or not run_id:
            raise SelectError(f"{option} {path}: picks[{i}].run_id: expected a run id, got "
                              f"{run_id!r}")
        if run_id in seen:
            raise SelectError(f"{option} {path}: picks[{i}].run_id {run_id!r} repeats "
                              f"picks[{seen[run_id]}]")
        seen[run_id] = i
    version = doc.get("judge_version")
    return (version if isinstance(version, str) and version else None), doc["picks"]


def picked_reviews(path: str | Path, option: str = "--picks") -> dict[str, Review]:
    """run id -> the ``review_labels`` row of each pick in a queue file, so that labels
    made outside the page for those runs (``labels import --picks``) say which queue
    picked them.

    Raises:
        SelectError: as :func:`read_picks`; also a file without its ``judge_version``, or a
            pick whose rank, score, strategy or reason is missing or wrong (named).
    """
    version, picks = read_picks(path, option)
    if version is None:
        raise SelectError(f"{option} {path}: judge_version: expected the version whose queue "
                          "picked the runs")
    out: dict[str, Review] = {}
    for i, p in enumerate(picks):
        try:
            out[p["run_id"]] = Review(judge_version=version, strategy=p.get("strategy"),
                                      rank=p.get("rank"), score=p.get("score"),
                                      reason=p.get("reason"), round_id=p.get("round_id"),
                                      pi=p.get("pi"))
        except ValidationError as exc:
            err = exc.errors()[0]
            field = ".".join(str(x) for x in err["loc"]) or "round_id"
            raise SelectError(f"{option} {path}: picks[{i}].{field}: {err['msg']}") from None
    return out


def read_test_runs(path: str | Path, option: str = "--test-runs") -> dict[str, int]:
    """run id -> line of each run a lab names as its own test set: a text file with one run
    id a line (blank lines and ``#`` comments skipped), or a ``.csv`` / ``.jsonl`` file
    with a ``run_id`` column (a label file, as ``rcjudge eval --labels`` takes, will do).

    Raises:
        SelectError: the file is missing, not UTF-8, a CSV without ``run_id``, a JSONL line
            that is not an object with a ``run_id`` (one line naming the file and line).
    """
    path = Path(path)
    if not path.is_file():
        raise SelectError(f"{option} {path}: file not found")
    try:
        text = path.read_text(encoding="utf-8-sig")
    except UnicodeDecodeError as exc:
        raise SelectError(f"{option} {path}: not UTF-8 text ({exc.reason} at byte "
                          f"{exc.start})") from None
    suffix = path.suffix.lower()
    out: dict[str, int] = {}
    if suffix == ".csv":
        reader = csv.DictReader(io.StringIO(text, newline=""))
        if "run_id" not in (reader.fieldnames or []):
            raise SelectError(f"{option} {path}: line 1: expected a run_id column")
        for row in reader:
            if rid := (row.get("run_id") or "").strip():
                out.setdefault(rid, reader.line_num)
        return out
    for number, line in enumerate(text.splitlines(), start=1):
        line = line.strip()
        if not line or (suffix not in (".jsonl", ".ndjson") and line.startswith("#")):
            continue
        if suffix in (".jsonl", ".ndjson"):
            try:
                obj = json.loads(line)
            except json.JSONDecodeError:
                obj = None
            if not isinstance(obj, dict) or not isinstance(obj.get("run_id"), str):
                raise SelectError(f"{option} {path}: line {number}: expected a JSON object "
                                  "with a run_id")
            line = obj["run_id"].strip()
        out.setdefault(line, number)
    return out


def known_test_runs(store, named: dict[str, int], path: str | Path,
                    option: str = "--test-runs") -> frozenset[str]:
    """The runs of :func:`read_test_runs`, each checked to be in the ledger.

    Raises:
        SelectError: a run the ledger does not hold (naming it and its line, and how many).
    """
    ids, known = sorted(named), set()
    with store.engine.connect() as conn:
        for i in range(0, len(ids), 500):
            known.update(conn.execute(sa.select(S.runs.c.run_id)
                                      .where(S.runs.c.run_id.in_(ids[i:i + 500]))).scalars())
    if unknown := sorted((named[r], r) for r in ids if r not in known):
        line, rid = unknown[0]
        raise SelectError(f"{option} {path}: line {line}: run {rid!r} is not in the ledger "
                          f"({len(unknown)} of {len(ids)} named run(s) are not)")
    return frozenset(ids)


def review(pick: Pick, judge_version: str, note: str | None = None) -> Review:
    """The ``review_labels`` row of a label made from ``pick`` (``add_reviewed_labels``)."""
    # the review page's pick (PickIn) serves the ranking strategies only: it has no round
    return Review(judge_version=judge_version, strategy=pick.strategy, rank=pick.rank,
                  score=pick.score, reason=pick.reason, note=note,
                  round_id=getattr(pick, "round_id", None), pi=getattr(pick, "pi", None))


# --- scores (pure) ---------------------------------------------------------------------

def _kl(p: float, q: float) -> float:
    """KL(Bernoulli(p) || Bernoulli(q)) in nats; 0·log 0 = 0."""
    out = 0.0
    for a, b in ((p, q), (1.0 - p, 1.0 - q)):
        if a > 0.0:
            out += a * math.log(a / b)
    return out


def mean_kl(ps: Sequence[float]) -> float:
    """Mean KL divergence of each P(yes) to their mean, in units of ln 2 (0 when they agree),
    to 12 decimals (equal answers in another order score the same)."""
    if not ps:
        return 0.0
    q = sum(ps) / len(ps)
    return round(sum(_kl(p, q) for p in ps) / len(ps) / _LN2, 12) + 0.0


def vote_entropy(classes: Sequence[str | None]) -> float:
    """Entropy of the classes named (None votes left out), in units of ln 3."""
    named = [c for c in classes if c is not None]
    if len(named) < 2:
        return 0.0
    counts = Counter(named).values()
    return round(-sum(k / len(named) * math.log(k / len(named)) for k in counts) / _LN3, 12) + 0.0


def _ps(ps: Sequence[float]) -> str:
    return " / ".join(f"{p:.2f}" for p in ps)


def committee(c: Candidate) -> tuple[float, str]:
    """The committee score of a run and the line saying where the models disagree most."""
    parts = {"attempt": mean_kl(c.p_attempt), "success": mean_kl(c.p_success),
             "class": vote_entropy(c.classes)}
    score = sum(parts.values())
    top = max(parts, key=lambda k: (parts[k], k == "success", k == "attempt"))
    if parts[top] == 0.0:
        return score, f"models agree (attempt {_ps(c.p_attempt)}, success {_ps(c.p_success)})"
    if top == "class":
        named = " / ".join(x or "-" for x in c.classes)
        return score, f"models name different failure classes: {named}"
    ps = c.p_attempt if top == "attempt" else c.p_success
    return score, f"models disagree on {top}: {_ps(ps)} (mean KL to consensus {parts[top]:.2f})"


def uncertainty(c: Candidate) -> tuple[float, str]:
    """1 − the lower reported confidence, and the line naming that question."""
    q, conf = min((("success", c.success_confidence), ("attempt", c.attempt_confidence)),
                  key=lambda x: x[1])
    return 1.0 - conf, f"the judge is unsure of {q}: confidence {conf:.2f}"


def random_score(run_id: str, seed: int) -> float:
    """A uniform number in [0, 1) from sha256 of the seed and the run id."""
    return int(hashlib.sha256(f"{seed}:{run_id}".encode()).hexdigest()[:12], 16) / 16**12


def _ranked(scored: list[tuple[float, str, str]], n: int, strategy: str) -> list[Pick]:
    """(score, run id, reason) → the ``n`` best picks: score descending, then run id."""
    scored.sort(key=lambda x: (-round(x[0], 12), x[1]))
    return [Pick(rid, i, round(score, 12), strategy, reason)
            for i, (score, rid, reason) in enumerate(scored[:n], start=1)]


def coverage(cands: Sequence[Candidate], labelled: Counter, n: int) -> list[Pick]:
    """Greedy coverage picks; ``labelled`` counts labels per ("task"|"policy"|"body", value)."""
    counts = Counter(labelled)
    left = {c.run_id: (c, committee(c)[0]) for c in cands}
    picks: list[Pick] = []
    while left and len(picks) < n:
        def score(c: Candidate) -> float:
            return sum(1.0 / (1 + counts[k]) for k in _strata(c)) / 3

        best, _ = min(left.values(), key=lambda x: (-round(score(x[0]), 12),
                                                     -round(x[1], 12), x[0].run_id))
        have = ", ".join(f"{k} {v} {counts[(k, v)]}" for k, v in _strata(best))
        picks.append(Pick(best.run_id, len(picks) + 1, round(score(best), 12), "coverage",
                          f"few labels: {have}"))
        counts.update(_strata(best))
        del left[best.run_id]
    return picks


def _strata(c: Candidate) -> tuple[tuple[str, str], ...]:
    return (("task", c.task), ("policy", c.policy), ("body", c.body))


def rank(cands: Sequence[Candidate], strategy: str, n: int, *, seed: int = 0,
         labelled: Counter | None = None) -> list[Pick]:
    """The ``n`` picks of ``strategy`` among ``cands`` (pure: what :func:`next_runs` ranks)."""
    if strategy == "coverage":
        return coverage(cands, labelled or Counter(), n)
    if strategy == "committee":
        scored = [(*committee(c), c.run_id) for c in cands]
    elif strategy == "uncertainty":
        scored = [(*uncertainty(c), c.run_id) for c in cands]
    elif strategy == "random":
        scored = [(random_score(c.run_id, seed), f"random pick (seed {seed})", c.run_id)
                  for c in cands]
    else:
        raise SelectError(f"--strategy {strategy!r}: expected one of {', '.join(STRATEGIES)}")
    return _ranked([(s, rid, why) for s, why, rid in scored], n, strategy)


# --- reading the ledger ----------------------------------------------------------------

def _policy(row) -> str:
    return f"{row.policy_vendor}/{row.policy_name}@{row.policy_version}"


def _body(row) -> str:
    return f"{row.body_arm}/{row.body_hand}"


def candidates(store, judge_version: str, *, split_seed: int = 0,
               test_fraction: float = 0.2,
               test_runs: Collection[str] = ()) -> tuple[list[Candidate], Counter]:
    """The unlabelled runs of ``judge_version`` outside the test part and ``test_runs``, by
    run id, and the labels per stratum (task, policy, body) of the labelled runs.

    Raises:
        SelectError: the version has no judgment in the ledger (naming those that do).
    """
    j, r, lab = S.judgments, S.runs, S.operator_labels
    task = r.c.public_task_id if store.blind else r.c.task_id
    strata = (task.label("task"), r.c.seed, r.c.policy_vendor, r.c.policy_name,
              r.c.policy_version, r.c.body_arm, r.c.body_hand)
    has_label = sa.exists().where(lab.c.run_id == r.c.run_id)
    seq, out_ = S.sequences, S.sequence_outcomes
    held_out_eval = sa.exists().where(  # a dataset's split holds the run's bundle out
        seq.c.bundle_hash == r.c.bundle_hash, out_.c.dataset_id == seq.c.dataset_id,
        out_.c.sequence_uid == seq.c.sequence_uid, out_.c.is_current.is_(True),
        out_.c.evaluation_membership == "held_out_eval", _edits(r.c.owner, seq.c.dataset_id))
    with store.engine.connect() as conn:
        judged = conn.execute(sa.select(sa.func.count()).select_from(j)
                              .where(j.c.judge_version == judge_version,
                                     store.mine(j.c.run_id))).scalar_one()
        if not judged:
            known = ", ".join(store.judge_versions()) or "none"
            raise SelectError(f"--judge {judge_version!r}: no judgment of this version in the "
                              f"ledger (versions with judgments: {known})")
        rows = conn.execute(
            sa.select(j.c.run_id, j.c.answers, j.c.attempt_confidence, j.c.success_confidence,
                      j.c.success, *strata).join(r, r.c.run_id == j.c.run_id)
            .where(j.c.judge_version == judge_version, store.mine(r.c.run_id), ~has_label,
                   ~held_out_eval)
            .order_by(j.c.run_id)).all()
        done = conn.execute(sa.select(*strata).where(has_label,
                                                     store.mine(r.c.run_id))).all()
    cfg = TrainConfig(test_fraction=test_fraction)
    out = []
    for row in rows:
        if row.task is None or row.run_id in test_runs:  # blind tier B: no seed group known
            continue
        if assign_part(seed_group(row.task, row.seed, row.run_id), split_seed, cfg) == "test":
            continue
        answers = row.answers
        out.append(Candidate(
            row.run_id, row.task, _policy(row), _body(row),
            tuple(float(a["p_attempt"]) for a in answers),
            tuple(float(a["p_success"]) for a in answers),
            tuple(a.get("failure_class") for a in answers),
            float(row.attempt_confidence), float(row.success_confidence), bool(row.success)))
    labelled = Counter()
    for row in done:
        labelled.update([("task", row.task or "tier-B"), ("policy", _policy(row)),
                         ("body", _body(row))])
    return out, labelled


def _edits(owner, dataset_id) -> sa.ColumnElement:
    """SQL: the run's ``owner`` may edit the dataset (the local operator: every dataset)."""
    g = S.dataset_grants
    return sa.or_(owner == S.LOCAL_OWNER, sa.exists(sa.select(g.c.key_id).where(
        g.c.dataset_id == dataset_id, g.c.key_id == owner, g.c.access == "edit")))


def next_runs(store, judge_version: str, *, n: int = 20, strategy: str = "committee",
              seed: int = 0, split_seed: int = 0, test_fraction: float = 0.2,
              test_runs: Collection[str] = ()) -> list[Pick]:
    """The ``n`` runs to label next, best first (see the module docstring).

    ``seed`` seeds the ``random`` strategy; ``split_seed`` and ``test_fraction`` are those
    ``rcjudge train`` will split with (its defaults here), so no test run is ever picked;
    ``test_runs`` are the runs the lab holds as its own test set, never picked either.

    Raises:
        SelectError: unknown strategy or version, ``n`` < 1, a test fraction outside [0, 1).
    """
    if strategy not in STRATEGIES:
        raise SelectError(f"--strategy {strategy!r}: expected one of {', '.join(STRATEGIES)}")
    if n < 1:
        raise SelectError(f"--n {n}: expected at least 1")
    if not 0.0 <= test_fraction < 1.0:
        raise SelectError(f"--test-fraction {test_fraction}: expected a share in [0, 1)")
    cands, labelled = candidates(store, judge_version, split_seed=split_seed,
                                 test_fraction=test_fraction, test_runs=test_runs)
    return rank(cands, strategy, n, seed=seed, labelled=labelled)
