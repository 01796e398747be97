"""Starter: a mapping file guessed from a bag's topics (``rcjudge import rosbag --list``).

Pure text. Cameras are the image topics (front/side/wrist by name where a topic says so,
else in order), joints the first JointState topic, force the first WrenchStamped; what
cannot be read from topic names (the arm's joint names, the gripper's, the attribution) is
left as ``TODO`` for a person to fill in: an import with a ``TODO`` left in is refused
(no topic or joint ``TODO`` in the bag, no gripper profile ``TODO``).
"""

from __future__ import annotations

from judge.bundle.rosbag.cameras import IMAGE_TYPES
from judge.bundle.rosbag.mapping import CAMERA_NAMES


def _cameras(rows: list[dict]) -> dict[str, str]:
    images = [r["topic"] for r in rows if r["type"] in IMAGE_TYPES]
    out: dict[str, str] = {}
    for name in CAMERA_NAMES:
        hit = next((t for t in images if name in t.lower() and t not in out.values()), None)
        if hit:
            out[name] = hit
    for name in CAMERA_NAMES:
        if name not in out:
            rest = [t for t in images if t not in out.values()]
            out[name] = rest[0] if rest else "TODO  # an image topic"
    return {n: out[n] for n in CAMERA_NAMES}


def starter(rows: list[dict]) -> str:
    """The YAML text of a starter mapping for a bag with these ``--list`` rows."""
    first = {typ: next((r["topic"] for r in rows if r["type"] == typ), None) for typ in (
        "sensor_msgs/msg/JointState", "geometry_msgs/msg/WrenchStamped", "std_msgs/msg/String")}
    joints = first["sensor_msgs/msg/JointState"] or "TODO  # a sensor_msgs/msg/JointState topic"
    lines = ["# rcjudge import rosbag mapping (docs/rosbag.md); check every line", "cameras:"]
    lines += [f"  {n}: {t}" for n, t in _cameras(rows).items()]
    lines += ["joints:", f"  topic: {joints}",
              "  names: [TODO]  # the arm's joint names, in order",
              "gripper:", "  profile: TODO  # configs/grippers.yaml: franka-hand, robotiq-2f85",
              "  width:", "    joints: [TODO]  # finger joints (summed), or topic + field",
              "    scale: 1.0", "    offset: 0.0"]
    if first["geometry_msgs/msg/WrenchStamped"]:
        lines += ["force:", f"  topic: {first['geometry_msgs/msg/WrenchStamped']}",
                  "  component: norm"]
    if first["std_msgs/msg/String"]:
        lines += ["episodes:", "  cut: markers", f"  topic: {first['std_msgs/msg/String']}",
                  "  start: start", "  stop: stop"]
    else:
        lines += ["episodes:", "  cut: bag"]
    lines += ["attribution:",
              "  policy: {vendor: TODO, name: TODO, version: TODO, checkpoint: TODO}",
              "  body: {arm: TODO, hand: TODO, dof: TODO, mount_h_mm: TODO, "
              "calibrated_at: TODO}",
              "  task: {id: TODO, tier: TODO}"]
    return "\n".join(lines) + "\n"
