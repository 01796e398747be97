"""Cycle time measured from the data: from the arm's first motion to its last.

Pure numpy. A joint is moving when its speed exceeds ``speed_threshold``; the
cycle spans the first to the last moving sample of any joint. A run where the
arm never moves has the whole recording as its cycle (it still took that long).
"""

from __future__ import annotations

import numpy as np

from judge.bundle.streams import Signals


def cycle_time(signals: Signals, speed_threshold: float = 0.05) -> float:
    """Seconds from first to last sample with any |joint velocity| > threshold (rad/s or m/s)."""
    moving = np.abs(signals.velocity).max(axis=1) > speed_threshold  # (N,)
    t = signals.t
    if not moving.any():
        return float(t[-1] - t[0]) if len(t) > 1 else 0.0
    idx = np.flatnonzero(moving)
    return float(t[idx[-1]] - t[idx[0]])
