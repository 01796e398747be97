"""Explain's evidence: what judging a bundle reads, gathered once for every explain output.

Below :mod:`judge.explain` (the HTML page and the command) and :mod:`judge.explain_rrd`
(the Rerun recording), which both render an :class:`Evidence`; neither imports the other.
:func:`gather` rebuilds it from the bundle exactly as judging reads it: intake, streams,
contacts, sampled timestamps, decoded frames (``judge.bundle``), the images the questions
show (:func:`judge.ensemble.prompts.question_indices`).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from judge.bundle.decode import decode_frames, load_streams
from judge.bundle.events import ContactEvent
from judge.bundle.intake import intake
from judge.bundle.sample import plan_targets
from judge.bundle.streams import Signals
from judge.ensemble.prompts import question_indices
from judge.ensemble.version import JudgeVersion
from judge.errors import JudgeError
from judge.tasks import instruction_for


class ExplainError(JudgeError, ValueError):
    """``rcjudge explain`` cannot find what to explain."""


@dataclass(frozen=True)
class Evidence:
    """What judging a bundle reads, before any model: the page's left-hand side."""

    run_id: str
    bundle_uri: str
    bundle_hash: str
    task_id: str
    instruction: str
    duration_s: float
    start_ns: int  # the bundle's t = 0 (its first message), ns since the epoch
    signals: Signals
    contacts: list[ContactEvent]
    windows: list[tuple[float, float]]  # dense sampling windows, merged, seconds
    targets: np.ndarray  # (T,) sampled timestamps
    shown: np.ndarray  # (K,) indices into targets that the questions show
    cameras: tuple[str, ...]
    images: np.ndarray  # (n_cams, T, H, W, 3) uint8
    timestamps: np.ndarray  # (n_cams, T) the decoded frames' own times


def gather(uri: str, version: JudgeVersion, run_id: str | None = None) -> Evidence:
    """Intake, streams, contacts, sampling and frames of ``uri``, as ``version`` judges."""
    bundle = intake(uri)
    streams = load_streams(bundle)
    sampling = version.sampling_settings()
    contacts, targets = plan_targets(streams, sampling)
    frames = decode_frames(streams.videos, targets)
    half = sampling.sample.dense_half_window_s
    windows: list[tuple[float, float]] = []
    for c in sorted(contacts, key=lambda c: c.t):
        a, b = max(0.0, c.t - half), min(streams.duration_s, c.t + half)
        if windows and a <= windows[-1][1]:
            windows[-1] = (windows[-1][0], max(windows[-1][1], b))
        else:
            windows.append((a, b))
    name = run_id or bundle.root.rstrip("/").rsplit("/", 1)[-1]
    return Evidence(run_id=name, bundle_uri=bundle.uri, bundle_hash=bundle.bundle_hash,
                    task_id=bundle.attribution.task.id,
                    instruction=instruction_for(bundle.attribution.task.id),
                    duration_s=streams.duration_s, start_ns=streams.start_ns,
                    signals=streams.signals, contacts=contacts,
                    windows=windows, targets=targets,
                    shown=question_indices(len(targets), version), cameras=frames.cameras,
                    images=frames.images, timestamps=frames.timestamps)
