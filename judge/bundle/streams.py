"""Record types and channel names shared by the bundle reader and writers.

Times are seconds relative to the start of the recording (the MCAP's first
message). Arrays carry shape comments; records are frozen dataclasses.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

CAMERA_PREFIX = "/camera/"
JOINT_TOPIC = "/joint_states"
GRIPPER_TOPIC = "/gripper"
GRIPPER_JOINT = "gripper"
VIDEO_SCHEMA = "foxglove.CompressedVideo"
JOINTS_SCHEMA = "foxglove.JointStates"
META_NAME = "rcjudge.bundle"
GRIPPER_META = "rcjudge.gripper"  # optional metadata record: the gripper profile (docs/contacts.md)


def camera_topic(name: str) -> str:
    return CAMERA_PREFIX + name


@dataclass(frozen=True)
class VideoPackets:
    """One camera's H.264 Annex B access units, one per frame, in presentation order."""

    name: str
    t: np.ndarray  # (F,) float64 seconds
    keyframe: np.ndarray  # (F,) bool, IDR access units
    data: list[bytes]  # F access units

    def __post_init__(self) -> None:
        if not (len(self.t) == len(self.keyframe) == len(self.data)):
            raise ValueError(f"camera {self.name}: t, keyframe and data lengths differ")

    @property
    def fps(self) -> float:
        return float((len(self.t) - 1) / (self.t[-1] - self.t[0])) if len(self.t) > 1 else 0.0


@dataclass(frozen=True)
class Signals:
    """Joint-state and gripper streams of one run."""

    t: np.ndarray  # (N,) float64 seconds, joint-state samples
    joint_names: tuple[str, ...]  # J names
    position: np.ndarray  # (N, J) float64 rad or m
    velocity: np.ndarray  # (N, J) float64
    effort: np.ndarray  # (N, J) float64 Nm or N
    gripper_t: np.ndarray  # (G,) float64 seconds
    gripper_width: np.ndarray  # (G,) float64 m
    gripper_force: np.ndarray  # (G,) float64 N

    @property
    def rate_hz(self) -> float:
        return float((len(self.t) - 1) / (self.t[-1] - self.t[0])) if len(self.t) > 1 else 0.0


def nal_types(access_unit: bytes) -> list[int]:
    """NAL unit types of an H.264 Annex B access unit (empty if no start code)."""
    types = []
    i = access_unit.find(b"\x00\x00\x01")
    while i != -1 and i + 3 < len(access_unit):
        types.append(access_unit[i + 3] & 0x1F)
        i = access_unit.find(b"\x00\x00\x01", i + 3)
    return types


def is_idr(access_unit: bytes) -> bool:
    """True when the access unit holds an IDR slice (NAL type 5)."""
    return 5 in nal_types(access_unit)
