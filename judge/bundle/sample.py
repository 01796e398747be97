"""Sample: choose the frame timestamps the VLMs will see. Pure function, no I/O.

Dense windows around contact events (where grasps succeed or fail), sparse
background elsewhere, the first and last frame always, within a per-camera
frame budget. With the keyframe times given, background frames sit on
keyframes, so each costs one decoded picture instead of a walk through a GOP.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np

from judge.bundle.contacts import detect_contacts
from judge.bundle.events import ContactEvent
from judge.bundle.streams import GRIPPER_META
from judge.config import SampleConfig, SamplingConfig, resolve_gripper

if TYPE_CHECKING:  # decode imports av; sampling never needs it
    from judge.bundle.decode import Streams


def _snap(times: np.ndarray, grid: np.ndarray | None) -> np.ndarray:
    if grid is None or len(grid) == 0:
        return times
    i = np.clip(np.searchsorted(grid, times), 1, len(grid) - 1)
    left, right = grid[i - 1], grid[i]
    return np.where(times - left <= right - times, left, right)


def sample_timestamps(start: float, end: float, contacts: Sequence[float],
                      cfg: SampleConfig | None = None,
                      frame_times: np.ndarray | None = None,
                      keyframe_times: np.ndarray | None = None) -> np.ndarray:
    """Target timestamps (sorted, unique, at most ``cfg.frames_per_camera``).

    Args:
        start, end: first and last frame time (s).
        contacts: contact event times (s).
        cfg: budget and window settings.
        frame_times: (F,) if given, every target is snapped to a real frame time.
        keyframe_times: (K,) if given and ``cfg.snap_sparse_to_keyframes``, background
            targets are chosen among keyframes.
    """
    cfg = cfg or SampleConfig()
    budget = cfg.frames_per_camera
    if end < start:
        raise ValueError(f"end {end} is before start {start}")
    chosen: list[float] = [start, end] if end > start else [start]
    min_sep = cfg.dense_step_s / 2

    def free(x: float) -> bool:
        return start <= x <= end and all(abs(x - c) >= min_sep for c in chosen)

    # Dense: offsets 0, ±step, ±2·step … round-robin over contacts, nearest first.
    m = int(np.floor(cfg.dense_half_window_s / cfg.dense_step_s + 1e-9))
    offsets = sorted({k * cfg.dense_step_s for k in range(-m, m + 1)}, key=lambda o: (abs(o), o))
    reserve = budget // 4 if len(contacts) else 0
    for off in offsets:
        for c in sorted(contacts):
            if len(chosen) >= budget - reserve:
                break
            x = float(_snap(np.array([c + off]), frame_times)[0])
            if free(x):
                chosen.append(x)
    # Sparse background: farthest-point picks, on keyframes first when asked, then frames.
    grids = [keyframe_times] if cfg.snap_sparse_to_keyframes else []
    grids += [frame_times if frame_times is not None else np.linspace(start, end, 4 * budget + 1)]
    for grid in grids:
        if grid is None:
            continue
        grid = np.asarray(grid, dtype=np.float64)
        grid = grid[(grid >= start) & (grid <= end)]
        while len(chosen) < budget and len(grid):
            dist = np.abs(grid[:, None] - np.array(chosen)[None, :]).min(axis=1)  # (K,)
            best = int(np.argmax(dist))  # first of equals: deterministic
            if dist[best] < min_sep:
                break
            chosen.append(float(grid[best]))
    return np.array(sorted(chosen), dtype=np.float64)


def plan_targets(streams: Streams, cfg: SamplingConfig) -> tuple[list[ContactEvent], np.ndarray]:
    """Contacts and target timestamps of a bundle's streams (judging and ``inspect`` alike).

    The first camera (by name) gives the frame and keyframe times to snap to; the
    bundle's ``rcjudge.gripper`` record, when it has one, says how to read the gripper.
    """
    gripper = resolve_gripper(streams.metadata.get(GRIPPER_META))
    contacts = detect_contacts(streams.signals, cfg.contacts, gripper, cfg.fingers)
    ref = streams.videos[sorted(streams.videos)[0]]
    targets = sample_timestamps(float(ref.t[0]), float(ref.t[-1]), [c.t for c in contacts],
                                cfg.sample, frame_times=ref.t, keyframe_times=ref.t[ref.keyframe])
    return contacts, targets
