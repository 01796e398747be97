"""Errors of the ledger layer (``judge.ledgers``): the system of record after the vote.

Both subclass :class:`judge.errors.JudgeError` (one line on the CLI) and
``ValueError``. Messages name the run, judge version, field or file line.
"""

from __future__ import annotations

from dataclasses import dataclass

from judge.errors import JudgeError


class LedgerError(JudgeError, ValueError):
    """A ledger write or read was refused: conflicting facts, constraint, bad URL, migration."""


@dataclass(frozen=True)
class RowError:
    """One bad row of a label file: its 1-based line, the field, and what is wrong."""

    line: int
    field: str
    message: str

    def __str__(self) -> str:
        return f"line {self.line}: {self.field}: {self.message}"


class LabelImportError(LedgerError):
    """A label file has errors; nothing of it was imported. ``errors`` lists every one."""

    def __init__(self, source: str, errors: list[RowError]) -> None:
        self.source = source
        self.errors = list(errors)
        lines = "\n".join(f"  {e}" for e in self.errors)
        super().__init__(
            f"{source}: {len(self.errors)} error(s), nothing imported\n{lines}")
