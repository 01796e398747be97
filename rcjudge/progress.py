"""A one-line progress meter (count, rate, ETA, a note such as the loss) on a terminal.

Silent when stderr is not a terminal, so logs and ``--json`` output stay clean.
"""

from __future__ import annotations

import sys
import time


class Progress:
    """``step()`` after each unit of work; ``close()`` at the end."""

    def __init__(self, total: int, enabled: bool = True, label: str = "") -> None:
        self.total, self.done, self.t0 = total, 0, time.perf_counter()
        self.label = f"{label} " if label else ""
        self.enabled = enabled and sys.stderr.isatty()

    def step(self, n: int = 1, note: str = "") -> None:
        self.done += n
        if not self.enabled:
            return
        dt = time.perf_counter() - self.t0
        rate = self.done / dt if dt > 0 else 0.0
        eta = (self.total - self.done) / rate if rate > 0 else float("inf")
        print(f"\r{self.label}{self.done}/{self.total}  {rate * 60:.1f}/min  ETA {eta:.0f}s  "
              f"{note}   ", end="", file=sys.stderr, flush=True)

    def close(self) -> None:
        if self.enabled:
            print(file=sys.stderr)
