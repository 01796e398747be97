"""Sample: choose the frame timestamps the VLMs will see. Pure function, no I/O.

Dense windows around contact events (where grasps succeed or fail), sparse
background elsewhere, the first and last frame always, within a per-camera
frame budget. With the keyframe times given, background frames sit on
keyframes, so each costs one decoded picture instead of a walk through a GOP. Where the
cameras cover different spans, only the span every camera covers is sampled
(:func:`common_span`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np

from judge.bundle.contacts import detect_contacts
from judge.bundle.events import ContactEvent
from judge.bundle.streams import GRIPPER_META, VideoPackets
from judge.config import SampleConfig, SamplingConfig, resolve_gripper
from judge.errors import VideoError

SPAN_EPS = 1e-9  # s: a frame time this close to the span's edge is inside it

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


def common_span(videos: dict[str, VideoPackets]) -> tuple[float, float]:
    """(start, end) s of the span every camera covers: the latest first frame and the
    earliest last frame.

    Raises:
        VideoError: the cameras share no time (one ends before another starts).
    """
    start = max(float(v.t[0]) for v in videos.values())
    end = min(float(v.t[-1]) for v in videos.values())
    if end < start:
        spans = ", ".join(f"{n} {v.t[0]:.3f}-{v.t[-1]:.3f} s" for n, v in sorted(videos.items()))
        raise VideoError(f"the cameras cover no common time ({spans}): no frame can be "
                         "sampled from every camera")
    return start, end


def span_warning(videos: dict[str, VideoPackets]) -> str:
    """A line when the cameras' spans differ by more than a frame interval, else ``""``."""
    start, end = common_span(videos)
    tol = max((1.0 / v.fps for v in videos.values() if v.fps), default=0.0)
    if all(v.t[0] >= start - tol and v.t[-1] <= end + tol for v in videos.values()):
        return ""
    spans = ", ".join(f"{n} {v.t[0]:.3f}-{v.t[-1]:.3f} s" for n, v in sorted(videos.items()))
    return (f"cameras cover different spans ({spans}): frames are sampled only from "
            f"{start:.3f}-{end:.3f} s, the span every camera covers")


def plan_targets(streams: Streams, cfg: SamplingConfig) -> tuple[list[ContactEvent], np.ndarray]:
    """Contacts and target timestamps of a bundle's streams (judging and ``inspect`` alike).

    The first camera (by name) gives the frame and keyframe times to snap to, inside the
    span every camera covers (:func:`common_span`: a camera that starts late or stops early
    is never asked for a time it does not have); the bundle's ``rcjudge.gripper`` record,
    when it has one, says how to read the gripper.
    """
    gripper = resolve_gripper(streams.metadata.get(GRIPPER_META))
    contacts = detect_contacts(streams.signals, cfg.contacts, gripper, cfg.fingers)
    ref = streams.videos[sorted(streams.videos)[0]]
    start, end = common_span(streams.videos)
    inside = (ref.t >= start - SPAN_EPS) & (ref.t <= end + SPAN_EPS)  # (F,) bool
    frames, keys = ref.t[inside], ref.t[inside & ref.keyframe]
    if not len(frames):  # no frame of the reference camera inside: the span's own ends
        frames = np.array([start, end]) if end > start else np.array([start])
    targets = sample_timestamps(float(frames[0]), float(frames[-1]), [c.t for c in contacts],
                                cfg.sample, frame_times=frames, keyframe_times=keys)
    return contacts, targets
