"""Config files under ``configs/``: where they live and how they load.

Every config is a pydantic model (``extra="forbid"``, bounds, a docstring per
field) validated from YAML; a bad file raises :class:`ConfigError` naming it.
"""

from __future__ import annotations

import os
from functools import cache
from pathlib import Path
from typing import Any, Literal, TypeVar

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from judge.errors import ConfigError
from rcjudge.errors import describe_validation

M = TypeVar("M", bound=BaseModel)


def configs_dir() -> Path:
    """The configs folder: ``$RCJUDGE_CONFIGS`` or the repository's ``configs/``."""
    return Path(os.environ.get("RCJUDGE_CONFIGS", Path(__file__).resolve().parents[1] / "configs"))


def load_yaml(path: str | Path) -> Any:
    path = Path(path)
    try:
        return yaml.safe_load(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ConfigError(f"{path}: config file not found") from None
    except yaml.YAMLError as exc:
        raise ConfigError(f"{path}: invalid YAML: {exc}") from None


def load_model(model: type[M], data: Any, source: str) -> M:
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        raise ConfigError(f"{source}: {describe_validation(exc)}") from None


class _Config(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class ContactConfig(_Config):
    """Thresholds of contact detection (``judge.bundle.contacts``)."""

    force_on_n: float = Field(3.0, gt=0, description="Gripper force that starts a contact (N).")
    force_off_n: float = Field(1.0, ge=0, description="Force below which a contact ends (N).")
    min_contact_s: float = Field(0.05, ge=0, description="Shorter force blips are ignored (s).")
    effort_window_s: float = Field(0.31, gt=0, description="Median window of the effort baseline.")
    impact_on_sigma: float = Field(12.0, gt=0, description="Residual norm starting an impact.")
    impact_off_sigma: float = Field(5.0, gt=0, description="Residual norm ending an impact.")
    min_gap_s: float = Field(0.2, ge=0, description="Impacts closer than this merge (s).")
    impact_min_nm: float = Field(0.0, ge=0, description="An impact's residual must also reach "
                                 "this (Nm), however quiet the effort: set for noise-free "
                                 "(simulated) efforts or to the smallest knock that counts.")

    @model_validator(mode="after")
    def _hysteresis(self) -> ContactConfig:
        if self.force_off_n >= self.force_on_n:
            raise ValueError("force_off_n must be below force_on_n (hysteresis)")
        if self.impact_off_sigma >= self.impact_on_sigma:
            raise ValueError("impact_off_sigma must be below impact_on_sigma (hysteresis)")
        return self


class FingerConfig(_Config):
    """Contact events from the finger opening alone (``judge.bundle.fingers``)."""

    smooth_s: float = Field(0.05, gt=0, description="Running-median window of the width, and "
                            "half the baseline of its speed (s).")
    close_speed_mps: float = Field(0.01, gt=0, description="Closing speed that starts a close "
                                   "(m/s); it ends below half of it.")
    min_travel_m: float = Field(0.005, ge=0, description="A close must bring the fingers "
                                "this much closer (m), and stop this far inside the open "
                                "limit: settling after opening is no close.")
    settle_s: float = Field(0.1, gt=0, description="After a close stops, the fingers settle "
                            "this long; the hold level is the median width over it (s).")
    stop_tol_m: float = Field(0.001, gt=0, description="Width within this of the hold level "
                              "counts as stopped there (m); at least 3 noise sigmas.")
    hold_band_m: float = Field(0.002, gt=0, description="Width leaving the hold level by more "
                               "ends the hold (m); at least 4 noise sigmas.")
    rebound_m: float = Field(0.006, ge=0, description="The width stepping up by at most this "
                             "and coming to rest again is the grip resettling (the fingers "
                             "rebounding after the impact): the hold goes on at the new level.")
    closed_margin_m: float = Field(0.004, ge=0, description="Width within this of the closed "
                                   "limit is fully closed: a miss (m); at least 4 sigmas.")
    open_fraction: float = Field(0.9, gt=0, le=1, description="A hold ending with the width "
                                 "back to this fraction of its pre-close width is a release.")
    open_window_s: float = Field(0.25, gt=0, description="... within this long (s).")
    rearm_fraction: float = Field(0.5, gt=0, lt=1, description="After an event, a new close "
                                  "counts once the width reopened this far from closed to "
                                  "open.")


class GripperProfile(_Config):
    """What a gripper reports on ``/gripper`` (``configs/grippers.yaml``)."""

    description: str = Field("", description="Which gripper, and where its numbers come from.")
    open_width_m: float = Field(gt=0, le=1, description="Finger opening when fully open (m).")
    closed_width_m: float = Field(0.0, ge=0, description="Opening at the closed limit (m).")
    width_noise_m: float = Field(0.0, ge=0, le=0.01, description="Noise sigma (or quantum) of "
                                 "the reported width (m).")
    effort: Literal["contact", "actuator", "none"] = Field(
        description="What the effort field is: a finger-object contact force (contact: the "
                    "force detector), the actuator's force/current (actuator: width + effort), "
                    "or nothing (none: width alone).")
    driven_effort: float = Field(0.0, ge=0, description="Actuator effort above which the "
                                 "fingers are being driven (the effort's unit).")
    impact_min_nm: float = Field(0.0, ge=0, description="The smallest joint-effort residual "
                                 "that is an impact on the arm this gripper is on (Nm, N on "
                                 "a prismatic joint: /joint_states' effort unit), however "
                                 "quiet the effort; 0: none. The judge version's "
                                 "contacts.impact_min_nm applies where it is larger.")

    @model_validator(mode="after")
    def _limits(self) -> GripperProfile:
        if self.closed_width_m >= self.open_width_m:
            raise ValueError("closed_width_m must be below open_width_m")
        return self


@cache
def gripper_profiles(path: str | None = None) -> dict[str, GripperProfile]:
    """The named gripper profiles of ``configs/grippers.yaml`` (or ``path``)."""
    p = Path(path) if path else configs_dir() / "grippers.yaml"
    data = load_yaml(p)
    if not isinstance(data, dict) or not isinstance(data.get("profiles"), dict):
        raise ConfigError(f"{p}: expected a mapping 'profiles: {{NAME: {{...}}}}'")
    return {name: load_model(GripperProfile, v, f"{p}: profiles.{name}")
            for name, v in data["profiles"].items()}


def resolve_gripper(record: dict[str, str] | None, source: str = "rcjudge.gripper",
                    ) -> GripperProfile | None:
    """A bundle's gripper from its ``rcjudge.gripper`` metadata record, or None without one.

    The record names a ``profile`` (``configs/grippers.yaml``) and/or gives the fields
    themselves (strings, as MCAP metadata holds them); given fields override the profile's.
    """
    if not record:
        return None
    fields = dict(record)
    name = fields.pop("profile", None)
    base: dict[str, Any] = {}
    if name is not None:
        profiles = gripper_profiles()
        if name not in profiles:
            raise ConfigError(f"{source}: unknown gripper profile {name!r}; known: "
                              f"{', '.join(sorted(profiles))}")
        base = profiles[name].model_dump()
    return load_model(GripperProfile, {**base, **fields}, source)


class SampleConfig(_Config):
    """Frame sampling around contacts (``judge.bundle.sample``)."""

    frames_per_camera: int = Field(16, ge=2, le=512, description="Frame budget per camera.")
    dense_half_window_s: float = Field(0.4, ge=0, description="Dense window ± around contacts.")
    dense_step_s: float = Field(0.1, gt=0, description="Spacing of dense samples (s).")
    snap_sparse_to_keyframes: bool = Field(True, description="Background frames on keyframes.")


class SamplingConfig(_Config):
    """``configs/sampling.yaml``."""

    contacts: ContactConfig = ContactConfig()
    fingers: FingerConfig = FingerConfig()
    sample: SampleConfig = SampleConfig()


@cache
def sampling_config(path: str | None = None) -> SamplingConfig:
    """Load ``configs/sampling.yaml`` (or ``path``)."""
    p = Path(path) if path else configs_dir() / "sampling.yaml"
    return load_model(SamplingConfig, load_yaml(p), str(p))


@cache
def attribution_fields(path: str | None = None) -> tuple[str, ...]:
    """The required attribution fields, as dotted paths, from ``configs/attribution.yaml``."""
    p = Path(path) if path else configs_dir() / "attribution.yaml"
    data = load_yaml(p)
    fields = data.get("required") if isinstance(data, dict) else None
    if not isinstance(fields, list) or not all(isinstance(f, str) and f for f in fields):
        raise ConfigError(f"{p}: 'required' must be a non-empty list of dotted field names")
    return tuple(fields)
