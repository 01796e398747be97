"""Errors of the ledger layer (``judge.ledgers``): the system of record after the vote.

Both subclass :class:`judge.errors.JudgeError` (one line on the CLI) and
``ValueError``. Messages name the run, judge version, field or file line.
"""

from __future__ import annotations

from dataclasses import dataclass

from judge.errors import JudgeError
from rcjudge.errors import InputError


class LedgerError(JudgeError, ValueError):
    """A ledger write or read was refused: conflicting facts, constraint, bad URL, migration."""


class JudgeVersionChanged(LedgerError):
    """A judge version's fingerprint differs from the one it judged with before."""

    def __init__(self, judge_version: str, recorded: str, current: str,
                 recorded_parts: dict[str, str], current_parts: dict[str, str]) -> None:
        self.judge_version = judge_version
        names = sorted(set(recorded_parts) | set(current_parts))
        self.changed = [n for n in names if recorded_parts.get(n) != current_parts.get(n)]
        what = (", ".join(self.changed) if recorded_parts and current_parts and self.changed
                else "its settings (the recorded parts are not known)")
        super().__init__(
            f"judge version {judge_version!r} judged with fingerprint {recorded[:12]}…, "
            f"now it is {current[:12]}…: changed: {what}. The same version never judges two "
            "ways: create a new judge version (a new file under configs/judges/) and judge or "
            "re-judge with it")


@dataclass(frozen=True)
class RowError:
    """One bad row of a label file: its 1-based line, the field, and what is wrong."""

    line: int
    field: str
    message: str

    def __str__(self) -> str:
        return f"line {self.line}: {self.field}: {self.message}"


class LabelImportError(LedgerError, InputError):
    """A label file has errors; nothing of it was imported (exit 1). ``errors`` lists every
    one."""

    def __init__(self, source: str, errors: list[RowError]) -> None:
        self.source = source
        self.errors = list(errors)
        lines = "\n".join(f"  {e}" for e in self.errors)
        super().__init__(
            f"{source}: {len(self.errors)} error(s), nothing imported\n{lines}")

    def lines(self) -> list[str]:
        return [f"{self.source}: {len(self.errors)} error(s), nothing imported",
                *(f"  {e}" for e in self.errors)]
