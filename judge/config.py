"""Config files under ``configs/``: where they live and how they load.

Every config is a pydantic model (``extra="forbid"``, bounds, a docstring per
field) validated from YAML; a bad file raises :class:`ConfigError` naming it.
"""

from __future__ import annotations

import os
from functools import cache
from pathlib import Path
from typing import Any, TypeVar

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

    @model_validator(mode="after")
    def _hysteresis(self) -> ContactConfig:
        if self.force_off_n >= self.force_on_n:
            raise ValueError("force_off_n must be below force_on_n (hysteresis)")
        if self.impact_off_sigma >= self.impact_on_sigma:
            raise ValueError("impact_off_sigma must be below impact_on_sigma (hysteresis)")
        return self


class SampleConfig(_Config):
    """Frame sampling around contacts (``judge.bundle.sample``)."""

    frames_per_camera: int = Field(16, ge=2, le=512, description="Frame budget per camera.")
    dense_half_window_s: float = Field(0.4, ge=0, description="Dense window ± around contacts.")
    dense_step_s: float = Field(0.1, gt=0, description="Spacing of dense samples (s).")
    snap_sparse_to_keyframes: bool = Field(True, description="Background frames on keyframes.")


class SamplingConfig(_Config):
    """``configs/sampling.yaml``."""

    contacts: ContactConfig = ContactConfig()
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
