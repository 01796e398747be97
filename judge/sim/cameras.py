"""Camera poses: three base views (front, side, top), jittered per rollout. Pure numpy.

A pose is MuJoCo's free camera: the point it looks at (``lookat``, m, world frame), its
``distance`` from it (m), ``azimuth`` and ``elevation`` (degrees). Meta-World's frame: the
robot stands near y = 0 facing +y, the table spans x in [-0.5, 0.5], y in [0.4, 1.0],
z = 0 is the table top. Free cameras are used because the scene's own ``corner*`` cameras
render upside down.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

CAMERAS = ("front", "side", "top")


@dataclass(frozen=True)
class CameraPose:
    """One free camera."""

    lookat: tuple[float, float, float]
    distance: float
    azimuth: float
    elevation: float

    def as_dict(self) -> dict:
        d = asdict(self)
        d["lookat"] = [round(v, 4) for v in self.lookat]
        return {k: (round(v, 4) if isinstance(v, float) else v) for k, v in d.items()}


BASE_VIEWS: dict[str, CameraPose] = {
    # from across the table, looking back at the robot
    "front": CameraPose((0.0, 0.65, 0.05), 1.2, -90.0, -40.0),
    # from the robot's left (+x), looking along -x
    "side": CameraPose((0.0, 0.7, 0.1), 1.15, 180.0, -25.0),
    # from high above the far side, steep enough to see past the arm
    "top": CameraPose((0.0, 0.72, 0.0), 1.15, -90.0, -72.0),
}


class CameraRanges(BaseModel):
    """Per-rollout jitter around the base views (each drawn uniformly in ±range)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    azimuth_deg: float = Field(15.0, ge=0, le=90, description="± azimuth jitter (degrees).")
    elevation_deg: float = Field(8.0, ge=0, le=30, description="± elevation jitter (degrees); "
                                 "the result is kept within [-89, -5].")
    distance_frac: float = Field(0.15, ge=0, lt=0.5, description="± relative distance jitter.")
    lookat_m: float = Field(0.03, ge=0, le=0.2, description="± jitter of each lookat "
                            "coordinate (m).")


def draw_poses(rng: np.random.Generator, ranges: CameraRanges) -> dict[str, CameraPose]:
    """One pose per camera (front, side, top), jittered around the base views."""
    poses = {}
    for name in CAMERAS:
        base = BASE_VIEWS[name]
        jitter = rng.uniform(-1.0, 1.0, size=6)  # (az, el, dist, x, y, z)
        poses[name] = CameraPose(
            lookat=tuple(float(v) for v in np.asarray(base.lookat) + ranges.lookat_m * jitter[3:]),
            distance=float(base.distance * (1.0 + ranges.distance_frac * jitter[2])),
            azimuth=float(base.azimuth + ranges.azimuth_deg * jitter[0]),
            elevation=float(np.clip(base.elevation + ranges.elevation_deg * jitter[1],
                                    -89.0, -5.0)),
        )
    return poses
