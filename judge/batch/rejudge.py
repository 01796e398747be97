"""Re-judge history: every run judged by version A, judged again by version B, side by side.

New judgment rows are written beside A's (one row per run per version; nothing is
overwritten). The diff counts flips of attempt and success, class changes, and
agreement with the operator labels before and after.
"""

from __future__ import annotations

from dataclasses import dataclass

from judge.batch.run import BatchSummary, run_batch
from judge.batch.sources import resolve_sources
from judge.bundle.manifest import claimed_bundle_hash
from judge.ensemble.version import JudgeVersion
from judge.errors import JudgeError
from judge.ledgers.store import Ledger


class RejudgeError(JudgeError, ValueError):
    """The versions or the filter select nothing to re-judge."""


@dataclass(frozen=True)
class Diff:
    """How version B's judgments differ from A's on the same runs."""

    runs: int
    attempt_flips: dict[str, int]  # "true->false" / "false->true"
    success_flips: dict[str, int]
    class_changes: int  # failure_class differs (None counts as a value)
    class_transitions: dict[str, int]  # "A_class->B_class" counts
    labelled: int
    agreement_before: dict[str, float | None]  # attempt / success agreement with labels, A
    agreement_after: dict[str, float | None]  # the same for B

    def as_dict(self) -> dict:
        return dict(self.__dict__)


def runs_to_rejudge(ledger: Ledger, from_version: str, task_id: str | None = None,
                    source: str | None = None) -> list[tuple[str, str]]:
    """(run_id, bundle_uri) of every run judged by ``from_version`` (optionally one task).

    ``source`` (a folder of bundles, glob or list file) says where the bundles are now,
    e.g. another mount: each run is found there by its bundle hash.

    Raises:
        RejudgeError: nothing to re-judge, or runs whose bundle ``source`` does not hold.
    """
    ids = sorted(ledger.judged_run_ids(from_version))
    if not ids:
        known = ", ".join(ledger.judge_versions()) or "none"
        raise RejudgeError(f"no run was judged by {from_version!r} (versions in the ledger: "
                           f"{known})")
    runs = [ledger.get_run(r) for r in ids]
    picked = [(r.run_id, r.bundle_hash, r.bundle_uri) for r in runs
              if task_id is None or r.attribution.task.id == task_id]
    if not picked:
        raise RejudgeError(f"no run of task {task_id!r} was judged by {from_version!r}")
    if source is None:
        return [(rid, uri) for rid, _, uri in picked]
    where = {claimed_bundle_hash(u): u for u in resolve_sources(source)}
    missing = [rid for rid, h, _ in picked if h not in where]
    if missing:
        raise RejudgeError(f"{source}: holds no bundle of {len(missing)} run(s) judged by "
                           f"{from_version!r}: {', '.join(missing[:5])}"
                           + (" …" if len(missing) > 5 else ""))
    return [(rid, where[h]) for rid, h, _ in picked]


def _flip(a: bool, b: bool) -> str | None:
    return None if a == b else f"{str(a).lower()}->{str(b).lower()}"


def diff_versions(ledger: Ledger, a: str, b: str, run_ids: list[str] | None = None) -> Diff:
    """Compare the judgments of ``a`` and ``b`` on the runs both judged."""
    both = ledger.judged_run_ids(a) & ledger.judged_run_ids(b)
    ids = sorted(both if run_ids is None else both & set(run_ids))
    labels = ledger.current_labels()
    attempt: dict[str, int] = {}
    success: dict[str, int] = {}
    classes: dict[str, int] = {}
    agree = {"a_attempt": 0, "a_success": 0, "b_attempt": 0, "b_success": 0}
    labelled = 0
    for rid in ids:
        ja, jb = ledger.get_judgment(rid, a), ledger.get_judgment(rid, b)
        for flips, f in ((attempt, _flip(ja.attempt, jb.attempt)),
                         (success, _flip(ja.success, jb.success))):
            if f:
                flips[f] = flips.get(f, 0) + 1
        if ja.failure_class != jb.failure_class:
            key = f"{ja.failure_class or '-'}->{jb.failure_class or '-'}"
            classes[key] = classes.get(key, 0) + 1
        if rid in labels:
            lab = labels[rid].label
            labelled += 1
            agree["a_attempt"] += ja.attempt == lab.attempt
            agree["a_success"] += ja.success == lab.success
            agree["b_attempt"] += jb.attempt == lab.attempt
            agree["b_success"] += jb.success == lab.success

    def share(k: str) -> float | None:
        return round(agree[k] / labelled, 4) if labelled else None

    return Diff(runs=len(ids), attempt_flips=attempt, success_flips=success,
                class_changes=sum(classes.values()),
                class_transitions=dict(sorted(classes.items())),
                labelled=labelled,
                agreement_before={"attempt": share("a_attempt"), "success": share("a_success")},
                agreement_after={"attempt": share("b_attempt"), "success": share("b_success")})


def rejudge(ledger: Ledger, from_version: str, to_version: JudgeVersion,
            task_id: str | None = None, source: str | None = None,
            **batch_kwargs) -> tuple[BatchSummary, Diff]:
    """Judge with ``to_version`` every run ``from_version`` judged; return the batch and diff."""
    if to_version.name == from_version:
        raise RejudgeError(f"--from and --to are both {from_version!r}; re-judging needs a new "
                           "version (rows are never overwritten)")
    picked = runs_to_rejudge(ledger, from_version, task_id, source)
    summary = run_batch([uri for _, uri in picked], to_version, ledger, **batch_kwargs)
    return summary, diff_versions(ledger, from_version, to_version.name,
                                  [rid for rid, _ in picked])
