"""The mapping file of ``rcjudge import rosbag``: which topic plays which role in a bundle.

Validated once, where it enters (:func:`load_mapping`); every error is one line naming the
file and the field. Everything behind it reads a :class:`Mapping`. The format, with two
worked examples, is in ``docs/rosbag.md``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    field_validator,
    model_validator,
)

from judge.config import load_yaml, resolve_gripper
from judge.errors import BundleError, ConfigError
from rcjudge.errors import describe_validation

CAMERA_NAMES = ("front", "side", "wrist")


class RosbagError(BundleError):
    """A bag or its mapping cannot be imported as it is (one line: bag, topic, problem)."""


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Joints(_Model):
    """The arm's joints: a ``sensor_msgs/msg/JointState`` topic and the names, in order."""

    topic: str = Field(description="The JointState topic (partial messages are merged).")
    names: list[str] = Field(min_length=1, description="The arm joints, in bundle order.")


class Value(_Model):
    """A number read from a topic: a JointState's joints (summed) or a message field.

    ``value = offset + scale * x``, where ``x`` is the sum of the named joints' positions
    (width) or efforts (force), or the field at the dotted path ``field``.
    """

    topic: str | None = Field(None, description="Topic; default: joints.topic.")
    joints: list[str] | None = Field(None, min_length=1, description="JointState joints, summed.")
    field: str | None = Field(None, description="Dotted field path into any message, e.g. data.")
    scale: float = Field(1.0, description="Multiplier to metres (width) or the effort's unit.")
    offset: float = Field(0.0, description="Added after scaling.")

    @model_validator(mode="after")
    def _one_source(self) -> Value:
        if (self.joints is None) == (self.field is None):
            raise ValueError("give exactly one of joints (a JointState's) or field")
        if self.field is not None and self.topic is None:
            raise ValueError("field needs its topic")
        return self


class Gripper(_Model):
    """The gripper: its profile (``configs/grippers.yaml``), width and effort."""

    profile: str = Field(description="Gripper profile, e.g. franka-hand, robotiq-2f85.")
    width: Value = Field(description="Finger opening in metres.")
    effort: Value | None = Field(None, description="The gripper's own effort (motor force or "
                                 "current); none: width alone.")


class Force(_Model):
    """A force/torque sensor (``geometry_msgs/msg/WrenchStamped``) as the contact force."""

    topic: str = Field(description="The WrenchStamped topic.")
    component: Literal["norm", "x", "y", "z"] = Field(
        "norm", description="|F| or one axis of the force (N).")
    tare: bool = Field(True, description="Subtract the episode's first reading first.")


class Episodes(_Model):
    """Where the bag's episodes are: the whole bag, marker messages, or time ranges."""

    cut: Literal["bag", "markers", "ranges"] = Field("bag", description="How the bag is cut.")
    topic: str | None = Field(None, description="markers: the topic (std_msgs/msg/String).")
    field: str = Field("data", description="markers: the field holding the marker text.")
    start: str = Field("start", description="markers: the text starting an episode.")
    stop: str = Field("stop", description="markers: the text ending one.")
    ranges: list[tuple[float, float]] | None = Field(
        None, description="ranges: [start_s, end_s] pairs, seconds from the bag's start.")

    @model_validator(mode="after")
    def _complete(self) -> Episodes:
        if self.cut == "markers" and not self.topic:
            raise ValueError("cut: markers needs topic")
        if self.cut == "ranges":
            if not self.ranges:
                raise ValueError("cut: ranges needs ranges: [[start_s, end_s], ...]")
            for a, b in self.ranges:
                if not 0 <= a < b:
                    raise ValueError(f"range [{a}, {b}]: expected 0 <= start < end")
        return self


class FromBag(_Model):
    """An attribution field read from the bag: metadata.yaml custom data, or a topic."""

    custom_data: str | None = Field(None, description="Key of metadata.yaml's custom_data.")
    topic: str | None = Field(None, description="A topic whose first message in the "
                              "episode holds it (e.g. a std_msgs/msg/String parameter).")
    field: str = Field("data", description="With topic: the dotted field path.")

    @model_validator(mode="after")
    def _one(self) -> FromBag:
        if (self.custom_data is None) == (self.topic is None):
            raise ValueError("give exactly one of custom_data or topic")
        return self


class Mapping(_Model):
    """A ``--mapping`` file (``docs/rosbag.md``)."""

    cameras: dict[str, str] = Field(description="Bundle camera name -> image topic; three.")
    joints: Joints
    gripper: Gripper
    force: Force | None = Field(None, description="An F/T sensor: the contact force.")
    episodes: Episodes = Episodes()
    attribution: dict[str, Any] = Field(default_factory=dict, description="Attribution fields.")
    attribution_from: dict[str, FromBag] = Field(
        default_factory=dict, description="Dotted attribution field -> where in the bag.")

    @field_validator("cameras")
    @classmethod
    def _three(cls, cameras: dict[str, str]) -> dict[str, str]:
        if len(cameras) != 3:
            raise ValueError(f"expected three cameras (e.g. {', '.join(CAMERA_NAMES)}), got "
                             f"{len(cameras)}")
        if len(set(cameras.values())) != 3:
            raise ValueError("each camera needs its own topic")
        return cameras

    def topics(self) -> dict[str, str]:
        """Role -> topic for every topic the mapping reads."""
        out = {f"camera.{n}": t for n, t in self.cameras.items()}
        out["joints"] = self.joints.topic
        out["gripper.width"] = self.gripper.width.topic or self.joints.topic
        if self.gripper.effort is not None:
            out["gripper.effort"] = self.gripper.effort.topic or self.joints.topic
        if self.force is not None:
            out["force"] = self.force.topic
        if self.episodes.cut == "markers":
            out["episodes"] = str(self.episodes.topic)
        for name, src in self.attribution_from.items():
            if src.topic:
                out[f"attribution.{name}"] = src.topic
        return out

    def gripper_record(self) -> dict[str, str]:
        """The bundle's ``rcjudge.gripper`` record: the profile, and what its effort is.

        With an F/T sensor the gripper channel's effort is the sensor's force, read by the
        force detector (``effort: contact``); without a gripper effort, ``effort: none``.
        """
        record = {"profile": self.gripper.profile}
        if self.force is not None:
            record["effort"] = "contact"
        elif self.gripper.effort is None:
            record["effort"] = "none"
        return record


def _todos(node: Any, at: str = "") -> list[str]:
    """Dotted paths of every value that is the starter's ``TODO`` (``--list``)."""
    if isinstance(node, dict):
        return [p for k, v in node.items() for p in _todos(v, f"{at}.{k}" if at else str(k))]
    if isinstance(node, list):
        return [p for i, v in enumerate(node) for p in _todos(v, f"{at}[{i}]")]
    return [at] if isinstance(node, str) and node.strip() == "TODO" else []


def load_mapping(path: str | Path) -> Mapping:
    """Read and check a mapping file; one :class:`RosbagError` line naming the field."""
    try:
        data = load_yaml(path)
    except ConfigError as exc:
        raise RosbagError(str(exc)) from None
    if not isinstance(data, dict):
        raise RosbagError(f"{path}: expected a mapping (cameras, joints, gripper, ...)")
    if todo := sorted(_todos(data)):
        raise RosbagError(f"{path}: TODO left in at {', '.join(todo)}: fill in what the bag "
                          "cannot say (docs/rosbag.md)")
    try:
        mapping = Mapping.model_validate(data)
    except ValidationError as exc:
        raise RosbagError(f"{path}: {describe_validation(exc)}") from None
    try:
        resolve_gripper(mapping.gripper_record(), f"{path}: gripper")
    except ConfigError as exc:
        raise RosbagError(str(exc)) from None
    return mapping
