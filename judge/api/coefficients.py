"""The public coefficients table: cells from anonymous rows, k = 5 on tier B (docs/coefficients.md).

Pure functions over :class:`Row` (what each judged run adds; no run id, no task id —
only ``task_key``, a keyed hash that lets distinct tasks be counted). A cell is policy ×
body × task family × tier × judge version.

* ``n`` counts successes and failures that count against the policy; a failure is exempt
  only when the taxonomy lists its class as not counting: an empty class (NULL or "")
  or an unknown one counts. Under ``MIN_N`` runs a cell shows ``insufficient``, no number.
* Tier B: published cells form a **partition** of the rows, every cell covering at least
  ``K`` distinct tasks. A family with fewer tasks is pooled with the other small families
  of its policy × body; a pool still under ``K`` joins the smallest family cell there; a
  policy × body under ``K`` is pooled per policy, then across policies; what is still
  under ``K`` is withheld. Whether to broaden depends only on task counts, never on
  outcomes. Since cells are disjoint and each has ≥ K tasks, any sum or difference of
  published cells is a union of whole cells: fewer than K tasks can never be isolated.
* Padding (issue 29): a tier-B task counts toward K only through rows of *other* owners
  than any one caller. :func:`_k_tasks` is the smallest, over every owner ``o`` of the
  rows, of the distinct tasks left once every row ``o`` owns is removed, so a caller who
  subtracts all its own (known) rows still faces ≥ K tasks of others. Which tasks are
  tier B is the operator's (:meth:`judge.api.service.JudgeService.designate_tier_b`).
"""

from __future__ import annotations

import hashlib
from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from judge.api.protocol import CoefficientCell
from judge.ensemble.taxonomy import load_taxonomy

MIN_N = 40
K = 5
ANY = "*"


@dataclass(frozen=True)
class Row:
    """One judged run's anonymous contribution."""

    policy: str
    body: str
    task_family: str
    tier: str
    judge_version: str
    success: bool
    failure_class: str | None
    task_key: str
    owners: frozenset[str] = frozenset()  # owners (key names) of the judgment; () offline

    def with_owners(self, owners: Iterable[str]) -> Row:
        from dataclasses import replace

        return replace(self, owners=frozenset(owners))


@dataclass
class Cell:
    """A published cell and the rows it covers (indexes; kept server-side for the audit)."""

    policy: str
    body: str
    task_family: str
    tier: str
    judge_version: str
    rows: set[int] = field(default_factory=set)
    policies: set[str] = field(default_factory=set)
    bodies: set[str] = field(default_factory=set)
    families: set[str] = field(default_factory=set)

    @property
    def broadened(self) -> bool:
        return ANY in (self.policy, self.body, self.task_family) or len(self.families) > 1

    def covers(self, dim: str, value: str) -> bool:
        have = {"policy": self.policies, "body": self.bodies, "task_family": self.families,
                "tier": {self.tier}, "judge_version": {self.judge_version}}[dim]
        return value in have


def _tasks(rows: Sequence[Row], idx: Iterable[int]) -> int:
    return len({rows[i].task_key for i in idx})


def _k_tasks(rows: Sequence[Row], idx: Iterable[int]) -> int:
    """Distinct tasks that remain whichever single owner's rows are taken out."""
    idx = list(idx)
    owners = {o for i in idx for o in rows[i].owners}
    if not owners:
        return _tasks(rows, idx)
    return min(len({rows[i].task_key for i in idx if o not in rows[i].owners})
               for o in owners)


def _cell(rows: Sequence[Row], idx: Iterable[int], policy: str, body: str, family: str,
          tier: str, jv: str) -> Cell:
    idx = set(idx)
    return Cell(policy, body, family, tier, jv, idx, {rows[i].policy for i in idx},
                {rows[i].body for i in idx}, {rows[i].task_family for i in idx})


def partition(rows: Sequence[Row], k: int = K) -> list[Cell]:
    """The published cells: exact cells on tier A, the k-anonymous partition on tier B."""
    cells: list[Cell] = []
    exact: dict[tuple, list[int]] = defaultdict(list)
    tier_b: dict[str, list[int]] = defaultdict(list)
    for i, r in enumerate(rows):
        if r.tier == "B":
            tier_b[r.judge_version].append(i)
        else:
            exact[(r.policy, r.body, r.task_family, r.tier, r.judge_version)].append(i)
    for key, idx in exact.items():
        cells.append(_cell(rows, idx, *key))
    for jv, idx in tier_b.items():
        cells.extend(_tier_b(rows, idx, jv, k))
    return sorted(cells, key=lambda c: (c.tier, c.judge_version, c.policy, c.body,
                                        c.task_family, sorted(c.families)))


def _tier_b(rows: Sequence[Row], idx: list[int], jv: str, k: int) -> list[Cell]:
    out: list[Cell] = []
    by_pb: dict[tuple[str, str], dict[str, list[int]]] = defaultdict(lambda: defaultdict(list))
    for i in idx:
        by_pb[(rows[i].policy, rows[i].body)][rows[i].task_family].append(i)
    left_policy: dict[str, list[int]] = defaultdict(list)
    for (policy, body), fams in sorted(by_pb.items()):
        own = {f: v for f, v in fams.items() if _k_tasks(rows, v) >= k}
        small = [i for f, v in fams.items() if f not in own for i in v]
        if not own:
            if _k_tasks(rows, small) >= k:
                out.append(_cell(rows, small, policy, body, ANY, "B", jv))
            else:
                left_policy[policy].extend(small)
            continue
        group = [_cell(rows, v, policy, body, f, "B", jv) for f, v in sorted(own.items())]
        if small and _k_tasks(rows, small) >= k:
            group.append(_cell(rows, small, policy, body, ANY, "B", jv))
        elif small:  # too few to stand alone: they join the smallest family cell
            target = min(group, key=lambda c: (_k_tasks(rows, c.rows), c.task_family))
            merged = _cell(rows, target.rows | set(small), policy, body, ANY, "B", jv)
            group[group.index(target)] = merged
        out.extend(group)
    left_all: list[int] = []
    for policy, v in sorted(left_policy.items()):
        if _k_tasks(rows, v) >= k:
            out.append(_cell(rows, v, policy, ANY, ANY, "B", jv))
        else:
            left_all.extend(v)
    if left_all and _k_tasks(rows, left_all) >= k:
        out.append(_cell(rows, left_all, ANY, ANY, ANY, "B", jv))
    return out  # rows of a pool still under k are withheld


#: A published row's cell: (policy, body, task family) as published, ``*`` where broadened.
Label = tuple[str, str, str]


def release(rows: Sequence[Row], pending: Iterable[int], k: int = K) -> dict[int, Label]:
    """The labels of the pending rows that may be published now; the others stay pending.

    Tier A rows are released at once into their exact cell. Pending tier-B rows are
    partitioned *on their own* (:func:`partition`): every cell of that partition (≥ k
    tasks) is released as a block; what the partition withholds waits for more rows.
    Published cells are sums of such blocks, so a cell changes only by a whole block of
    ≥ k tasks: comparing two publications isolates no fewer than k tasks.
    """
    idx = list(pending)
    sub = [rows[i] for i in idx]
    return {idx[j]: (c.policy, c.body, c.task_family)
            for c in partition(sub, k) for j in c.rows}


def published(rows: Sequence[Row], labels: Mapping[int, Label]) -> list[Cell]:
    """The cells published from released rows: rows of one label (and tier, version) summed."""
    groups: dict[tuple, set[int]] = defaultdict(set)
    for i, (policy, body, family) in labels.items():
        groups[(policy, body, family, rows[i].tier, rows[i].judge_version)].add(i)
    return sorted((_cell(rows, idx, *key) for key, idx in groups.items()),
                  key=lambda c: (c.tier, c.judge_version, c.policy, c.body, c.task_family))


def answer(cells: Sequence[Cell], **filters: str | None) -> list[Cell]:
    """The cells a query returns: every published cell covering all the filter values.

    A value inside a broadened cell returns that (coarser) cell: too narrow a query is
    broadened, not refused.
    """
    given = {d: v for d, v in filters.items() if v is not None}
    return [c for c in cells if all(c.covers(d, v) for d, v in given.items())]


def stats(rows: Sequence[Row], cell: Cell, min_n: int = MIN_N) -> CoefficientCell:
    """A cell as published: n, status, rate (only when n ≥ min_n), exempt failures."""
    tax = load_taxonomy()
    ok = bad = exempt = 0
    for i in cell.rows:
        r = rows[i]
        if r.success:
            ok += 1
        elif tax.counts_against_policy(r.failure_class):
            bad += 1
        else:
            exempt += 1
    n = ok + bad
    enough = n >= min_n
    key = (cell.policy, cell.body, cell.task_family, cell.tier, cell.judge_version)
    return CoefficientCell(
        cell_id="cell_" + hashlib.sha256("\x1f".join(key).encode()).hexdigest()[:12],
        policy=cell.policy, body=cell.body, task_family=cell.task_family, tier=cell.tier,
        judge_version=cell.judge_version, task_families=sorted(cell.families),
        tasks=_tasks(rows, cell.rows), broadened=cell.broadened, n=n,
        status="ok" if enough else "insufficient",
        success_rate=round(ok / n, 6) if enough else None, exempt_failures=exempt)


def as_row(r: Any) -> Row:
    """A :class:`Row` from anything with its fields (a database row)."""
    if isinstance(r, Row):
        return r
    fields = {f: getattr(r, f) for f in Row.__annotations__ if f != "owners"}
    return Row(**fields, owners=frozenset(getattr(r, "owners", ()) or ()))


def table(rows: Sequence[Any], min_n: int = MIN_N, k: int = K,
          **filters: str | None) -> list[CoefficientCell]:
    """All of ``rows`` published at once (one block), answering ``filters``."""
    rows = [as_row(r) for r in rows]
    labels = release(rows, range(len(rows)), k)
    return [stats(rows, c, min_n) for c in answer(published(rows, labels), **filters)]


def published_table(rows: Sequence[Any], min_n: int = MIN_N,
                    rectify: Callable[[CoefficientCell, list[Any]], CoefficientCell]
                    | None = None, **filters: str | None) -> list[CoefficientCell]:
    """The table from stored rows with ``cell_policy``, ``cell_body``, ``cell_family`` labels
    (NULL on rows still pending), answering ``filters``; ``rectify(cell, its stored rows)``
    adds the rectified rate (``judge.api.coefficient_rates``)."""
    rows = list(rows)
    labels = {i: (r.cell_policy, r.cell_body, r.cell_family) for i, r in enumerate(rows)
              if r.cell_policy is not None}
    clean = [as_row(r) for r in rows]
    out = []
    for c in answer(published(clean, labels), **filters):
        cell = stats(clean, c, min_n)
        out.append(cell if rectify is None else rectify(cell, [rows[i] for i in sorted(c.rows)]))
    return out
