"""Contact events: the record both detectors emit and the edge primitives they share.

Pure numpy, no I/O. :mod:`judge.bundle.contacts` (force and effort) and
:mod:`judge.bundle.fingers` (width and actuator effort) both build on this module;
``contacts.detect_contacts`` picks between them, so the imports point one way:
events ← fingers ← contacts.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view

TIME_EPS_S = 1e-9  # bundle clocks are integer ns: a duration read back may be 1e-16 short


@dataclass(frozen=True)
class ContactEvent:
    """One contact event; ``t`` is the time the sampler centres on."""

    t: float  # seconds
    kind: str  # grasp | release | slip | impact | miss
    t_start: float  # onset of the contact signal
    t_end: float | None  # offset (None while still in contact at the end)
    peak: float  # peak force (N), peak residual (robust sigmas) or hold width (mm, fingers)
    peak_value: float | None = None  # the peak in the channel's unit (impacts: the residual)
    unit: str = ""  # of peak_value: N (force), Nm (joint effort), mm (finger width)

    def as_dict(self) -> dict:
        value = self.peak if self.peak_value is None else self.peak_value
        return {"t": round(self.t, 3), "kind": self.kind, "t_start": round(self.t_start, 3),
                "t_end": None if self.t_end is None else round(self.t_end, 3),
                "peak": round(self.peak, 2), "peak_value": round(value, 2), "unit": self.unit}


def hysteresis(x: np.ndarray, on: float, off: float) -> np.ndarray:
    """Boolean state: becomes True above ``on``, False below ``off``, else holds."""
    decisive = np.where(x > on, 1, np.where(x < off, 0, -1))  # (N,)
    idx = np.where(decisive >= 0, np.arange(len(x)), 0)
    np.maximum.accumulate(idx, out=idx)
    state = decisive[idx]
    state[(idx == 0) & (decisive[0] < 0)] = 0  # undecided before the first decision
    return state == 1


def segments(state: np.ndarray) -> list[tuple[int, int]]:
    """[start, end) index pairs of runs of True."""
    d = np.diff(np.concatenate([[0], state.astype(np.int8), [0]]))
    return list(zip(np.flatnonzero(d == 1).tolist(), np.flatnonzero(d == -1).tolist(),
                    strict=True))


def running_median(x: np.ndarray, window: int) -> np.ndarray:
    """Centred running median along axis 0, edges padded with the edge value."""
    window = max(3, window | 1)
    pad = window // 2
    xp = np.pad(x, [(pad, pad)] + [(0, 0)] * (x.ndim - 1), mode="edge")
    return np.median(sliding_window_view(xp, window, axis=0), axis=-1)
