"""Progress of long work: count, rate, ETA and a note such as the loss.

On a terminal, one line redrawn in place. Elsewhere (a log file, a pipe) a plain line at most
every ``log_every_s`` seconds (:data:`LOG_EVERY_S`, a minute), once the work has run that
long, and a closing line after such lines: a log of a half-hour training shows where it is,
and a command that ends within the interval writes nothing, so quick runs stay quiet. It
writes to stderr only, so long commands keep it on with ``--json`` (stdout stays the JSON).
"""

from __future__ import annotations

import sys
import time

#: Seconds between plain progress lines when stderr is not a terminal.
LOG_EVERY_S = 60.0


def say(line: str, enabled: bool = True) -> None:
    """One line to stderr at once (what a long command is about to use), when enabled."""
    if enabled:
        print(line, file=sys.stderr, flush=True)


class Progress:
    """``step()`` after each unit of work; ``close()`` at the end."""

    def __init__(self, total: int, enabled: bool = True, label: str = "",
                 log_every_s: float | None = None) -> None:
        self.total, self.done, self.t0 = total, 0, time.perf_counter()
        self.label = f"{label} " if label else ""
        self.enabled = enabled
        self.tty = enabled and sys.stderr.isatty()
        self.log_every_s = LOG_EVERY_S if log_every_s is None else log_every_s
        self.logged_at: float | None = None  # when the last plain line was written
        self.note = ""

    def _line(self, now: float) -> str:
        dt = now - self.t0
        rate = self.done / dt if dt > 0 else 0.0
        eta = (self.total - self.done) / rate if rate > 0 else float("inf")
        return (f"{self.label}{self.done}/{self.total}  {rate * 60:.1f}/min  ETA {eta:.0f}s  "
                f"{self.note}")

    def step(self, n: int = 1, note: str = "") -> None:
        self.done += n
        self.note = note or self.note
        if not self.enabled:
            return
        now = time.perf_counter()
        if self.tty:
            print(f"\r{self._line(now)}   ", end="", file=sys.stderr, flush=True)
        elif now - (self.logged_at or self.t0) >= self.log_every_s:
            self.logged_at = now
            print(self._line(now).rstrip(), file=sys.stderr, flush=True)

    def close(self) -> None:
        if self.tty:
            print(file=sys.stderr)
        elif self.logged_at is not None:
            dt = time.perf_counter() - self.t0
            print(f"{self.label}{self.done}/{self.total} done in {dt:.0f}s  {self.note}".rstrip(),
                  file=sys.stderr, flush=True)
