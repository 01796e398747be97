"""``rcjudge doctor``: the pre-flight table, and the refusal ``batch`` and ``train`` give first.

Where it sits: between loading a judge version and starting anything expensive. Every
check is a :class:`Check` in :data:`CHECKS`, one list; the doctor prints all of their rows,
``rcjudge batch`` and ``rcjudge train`` run the cheap ones for their command and refuse with
the first red row (:func:`refuse_on_red`), so the table and the refusals agree.

The checks, in order: GPUs, driver, versions, model folders, served models (reachable,
model listed, log-probabilities, answer mass: ``served_rows``; doctor and batch), processors,
worst-case prompt tokens (``judge.ensemble.budget``), the GPU memory plan a batch places
(``judge.batch.plan.memory_plan``; ``batch`` only), each vLLM engine's share against its
weights, overhead and one prompt's KV cache (``judge.batch.vram``), the training memory plan
(``judge.learn.memory``; ``train`` only), and each model's answer-token mass (loads every
model: ``rcjudge doctor --load`` only).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from judge.ensemble.version import JudgeVersion
from judge.errors import JudgeError
from judge.preflight import model_rows, plan_rows, rows, served_rows
from judge.preflight.rows import Context, Row

ALL = frozenset({"doctor", "batch", "train"})
BATCH = frozenset({"doctor", "batch"})
TRAIN = frozenset({"doctor", "train"})


class PreflightError(JudgeError, RuntimeError):
    """A red pre-flight row: the batch or training run is refused before it starts."""


@dataclass(frozen=True)
class Check:
    """One check: its row function, whether it is cheap (loads no model), which commands
    run it."""

    name: str
    rows: Callable[[Context], list[Row]]
    cheap: bool = True
    commands: frozenset[str] = ALL


CHECKS: list[Check] = [
    Check("gpu", rows.gpu_rows),
    Check("driver", rows.driver_rows),
    Check("versions", rows.version_rows),
    Check("models", model_rows.model_rows),
    Check("served", served_rows.served_rows, commands=BATCH),
    Check("processors", model_rows.processor_rows),
    Check("prompt tokens", model_rows.prompt_token_rows),
    Check("gpu plan", plan_rows.gpu_plan_rows, commands=BATCH),
    Check("gpu memory", plan_rows.engine_memory_rows, commands=BATCH),
    Check("train memory", plan_rows.train_memory_rows, commands=frozenset({"doctor"})),
    Check("answer mass", plan_rows.answer_mass_rows, cheap=False),
]


def run_checks(version: JudgeVersion, command: str = "doctor", load: bool = False,
               ray_address: str | None = None, checks: list[Check] | None = None,
               gpu_memory_gib: float | None = None) -> list[Row]:
    """Every row of the checks ``command`` runs (the costly ones only with ``load``);
    ``gpu_memory_gib``: plan the engines for GPUs of that memory (else this machine's)."""
    ctx = Context(version=version, command=command, load=load, ray_address=ray_address,
                  gpu_memory_gib=gpu_memory_gib)
    out: list[Row] = []
    for check in CHECKS if checks is None else checks:
        if command in check.commands and (check.cheap or load):
            out.extend(check.rows(ctx))
    return out


def refuse_on_red(version: JudgeVersion, command: str, ray_address: str | None = None,
                  gpu_memory_gib: float | None = None) -> list[Row]:
    """Run ``command``'s cheap checks; their rows when none is red.

    Raises:
        PreflightError: one line, the first red row (and how many more there are).
    """
    found = run_checks(version, command, ray_address=ray_address,
                       gpu_memory_gib=gpu_memory_gib)
    red = [r for r in found if r.status == "fail"]
    if red:
        more = f" (+{len(red) - 1} more red row(s))" if len(red) > 1 else ""
        raise PreflightError(f"{command} refused before it started: {red[0].name}: "
                             f"{red[0].detail}{more}; see `rcjudge doctor --judge "
                             f"{version.name}`")
    return found


def exit_code(found: list[Row]) -> int:
    """1 when a row is red, else 0 (warnings do not fail)."""
    return int(any(r.status == "fail" for r in found))


MARK = {"ok": "ok", "warn": "WARN", "fail": "FAIL"}


def format_table(version: str, found: list[Row]) -> str:
    """The doctor's table: status, row name, detail; then a count of red and warned rows."""
    width = max((len(r.name) for r in found), default=4)
    lines = [f"rcjudge doctor --judge {version}"]
    lines += [f"  {MARK[r.status]:<4}  {r.name:<{width}}  {r.detail}" for r in found]
    red = sum(r.status == "fail" for r in found)
    warned = sum(r.status == "warn" for r in found)
    lines.append(f"{red} red, {warned} warning(s), {len(found) - red - warned} ok")
    return "\n".join(lines)
