"""ROS bags in: how fast ``rcjudge import rosbag`` converts a bag, against reading it alone.

    python -m bench.rosbag --seconds 60 --width 320 --height 240 --fps 30

Writes (untimed) one ROS 2 MCAP bag per camera message type with ``rosbags``' own writer —
raw ``sensor_msgs/msg/Image`` (rgb8), ``sensor_msgs/msg/CompressedImage`` (jpeg) and
``foxglove_msgs/msg/CompressedVideo`` (H.264 that already conforms to the bundle's profile:
the copy path) — each with three cameras of ``seconds`` at ``fps``, a 100 Hz
``JointState`` (seven arm joints and a finger joint) and a 100 Hz ``WrenchStamped``. Then,
per bag, in the same run (after an untimed warm-up on a half-second bag, so no import or
codec start-up is timed): the messages read raw (``read_raw``), the baseline ``read`` —
every message read and deserialized with ``rosbags``, what any importer pays at least — and
:func:`judge.bundle.rosbag.import_bag`. Figures: seconds, the bag's MB/s, and ``ratio``,
the import's MB/s over the baseline's (the copy path must stay ≥ 0.5).
"""

from __future__ import annotations

import argparse
import heapq
import io
import json
import os
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import yaml
from PIL import Image

from bench.bagsynth import VIDEO_MSG, VIDEO_TYPE
from bench.synth import JOINTS, START_NS, frame_code
from judge.bundle.transcode import encode_frames

VARIANTS = ("image", "compressed_image", "compressed_video")
MSGTYPE = {"image": "sensor_msgs/msg/Image", "compressed_image": "sensor_msgs/msg/CompressedImage",
           "compressed_video": VIDEO_TYPE}
CAMERA_NAMES = ("front", "side", "wrist")
FINGER = "finger_joint"
SIGNAL_HZ = 100
LATENCY_NS = 3_000_000  # a message is logged this long after its header stamp


def typestore():
    """ROS 2 Humble's types plus foxglove_msgs/msg/CompressedVideo."""
    from rosbags.typesys import Stores, get_types_from_msg, get_typestore

    ts = get_typestore(Stores.ROS2_HUMBLE)
    ts.register(get_types_from_msg(VIDEO_MSG, VIDEO_TYPE))  # not in rosbags' stores
    return ts


def frames(n: int, width: int, height: int, seed: int) -> Iterator[np.ndarray]:
    """A textured table, sensor noise (a camera's bitrate), a box moving across it, and
    frame ``i``'s index drawn top-left (:func:`bench.synth.read_frame_index` reads it back).
    (H, W, 3) uint8 each."""
    rng = np.random.default_rng(seed)
    bg = (rng.integers(60, 190, size=(height // 8 + 1, width // 8 + 1, 3))
          .repeat(8, 0).repeat(8, 1)[:height, :width]).astype(np.int16)  # (H, W, 3)
    noise = [rng.normal(0, 3, size=(height, width, 1)).astype(np.int16) for _ in range(8)]
    side = max(4, height // 6)
    for i in range(n):
        img = np.clip(bg + noise[i % len(noise)], 0, 255).astype(np.uint8)  # sensor noise
        x = (i * 3) % max(1, width - side)
        img[height // 2 - side // 2:height // 2 + side // 2, x:x + side] = (230, 140, 20)
        block, bits = frame_code(i, width)
        for b, bit in enumerate(bits):
            img[:block, b * block:(b + 1) * block] = 255 if bit else 0
        yield img


def _stamp(ts, ns: int):
    return ts.types["builtin_interfaces/msg/Time"](sec=ns // 1_000_000_000,
                                                    nanosec=ns % 1_000_000_000)


def _header(ts, ns: int, frame_id: str):
    return ts.types["std_msgs/msg/Header"](stamp=_stamp(ts, ns), frame_id=frame_id)


def _jpeg(img: np.ndarray) -> np.ndarray:
    buf = io.BytesIO()
    Image.fromarray(img).save(buf, format="JPEG", quality=90)
    return np.frombuffer(buf.getvalue(), np.uint8)


def camera_messages(ts, variant: str, cam: str, n: int, width: int, height: int, fps: int,
                    seed: int) -> Iterator[tuple[int, object]]:
    """(header stamp ns, message) of one camera, in order."""
    T = ts.types
    stamps = [START_NS + i * 1_000_000_000 // fps for i in range(n)]
    if variant == "compressed_video":
        video = encode_frames(frames(n, width, height, seed), width, height, fps,
                              max(1, fps // 2), cam)
        for ns, data in zip(stamps, video.data, strict=True):
            yield ns, T[MSGTYPE[variant]](timestamp=_stamp(ts, ns), frame_id=cam,
                                          data=np.frombuffer(data, np.uint8), format="h264")
        return
    for ns, img in zip(stamps, frames(n, width, height, seed), strict=True):
        if variant == "image":
            yield ns, T[MSGTYPE[variant]](header=_header(ts, ns, cam), height=height,
                                          width=width, encoding="rgb8", is_bigendian=0,
                                          step=3 * width, data=img.reshape(-1))
        else:
            yield ns, T[MSGTYPE[variant]](header=_header(ts, ns, cam), format="jpeg",
                                          data=_jpeg(img))


def signal_messages(ts, seconds: float) -> Iterator[tuple[str, int, object]]:
    """(topic, header stamp ns, message) of /joint_states and /ft_sensor at 100 Hz: the
    fingers close at 40 % of the run and open at 70 %, the force rising while they hold."""
    T = ts.types
    n = round(seconds * SIGNAL_HZ)
    for i in range(n):
        t = i / SIGNAL_HZ
        ns = START_NS + i * 1_000_000_000 // SIGNAL_HZ
        holding = 0.4 * seconds <= t < 0.7 * seconds
        q = np.sin(0.3 * t + np.arange(len(JOINTS), dtype=np.float64))
        pos = np.append(q, 0.01 if holding else 0.04)
        yield "/joint_states", ns, T["sensor_msgs/msg/JointState"](
            header=_header(ts, ns, "base"), name=[*JOINTS, FINGER], position=pos,
            velocity=np.append(0.3 * np.cos(0.3 * t + np.arange(len(JOINTS))), 0.0),
            effort=np.append(5.0 * q, 20.0 if holding else 0.0))
        vec = T["geometry_msgs/msg/Vector3"]
        yield "/ft_sensor", ns, T["geometry_msgs/msg/WrenchStamped"](
            header=_header(ts, ns, "ft"), wrench=T["geometry_msgs/msg/Wrench"](
                force=vec(x=0.0, y=0.0, z=15.0 if holding else 0.1),
                torque=vec(x=0.0, y=0.0, z=0.0)))


def camera_topic(variant: str, cam: str) -> str:
    leaf = {"image": "image_raw", "compressed_image": "image_raw/compressed",
            "compressed_video": "video"}[variant]
    return f"/{cam}/{leaf}"


def _on(topic: str, messages: Iterator[tuple[int, object]]) -> Iterator[tuple[str, int, object]]:
    for ns, msg in messages:
        yield topic, ns, msg


def write_bag(path: Path, variant: str, seconds: float, cameras: int, width: int,
              height: int, fps: int, seed: int = 0) -> Path:
    """A ROS 2 MCAP bag folder at ``path`` (must not exist); see the module docstring.
    ``seed`` varies the cameras' pictures (bags of different seeds differ)."""
    from rosbags.rosbag2 import StoragePlugin, Writer

    ts = typestore()
    n = round(seconds * fps)
    topics = {"/joint_states": "sensor_msgs/msg/JointState",
              "/ft_sensor": "geometry_msgs/msg/WrenchStamped"}
    streams = [signal_messages(ts, seconds)]
    for c, cam in enumerate(CAMERA_NAMES[:cameras]):
        topic = camera_topic(variant, cam)
        topics[topic] = MSGTYPE[variant]
        streams.append(_on(topic, camera_messages(ts, variant, cam, n, width, height, fps,
                                                  10 * seed + c)))
    with Writer(path, version=9, storage_plugin=StoragePlugin.MCAP) as w:
        conns = {t: w.add_connection(t, m, typestore=ts) for t, m in topics.items()}
        # in log-time order, as a recorder writes them
        for topic, ns, msg in heapq.merge(*streams, key=lambda m: m[1]):
            w.write(conns[topic], ns + LATENCY_NS, ts.serialize_cdr(msg, topics[topic]))
    return path


def bag_bytes(path: Path) -> int:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())


def read_only(path: Path, deserialize: bool = True) -> int:
    """Every message of the bag read (and deserialized) with rosbags; how many there were."""
    from rosbags.highlevel import AnyReader

    count = 0
    with AnyReader([path]) as reader:
        for conn, _, raw in reader.messages():
            if deserialize:
                reader.deserialize(raw, conn.msgtype)
            count += 1
    return count


def mapping(variant: str, cameras: int) -> dict:
    """The ``--mapping`` of the bench's bags (``docs/rosbag.md``): a Franka Hand whose
    width is twice the finger joint, the F/T sensor's z force as the contact force."""
    return {
        "cameras": {cam: camera_topic(variant, cam) for cam in CAMERA_NAMES[:cameras]},
        "joints": {"topic": "/joint_states", "names": list(JOINTS)},
        "gripper": {"profile": "franka-hand", "width": {"joints": [FINGER], "scale": 2.0}},
        "force": {"topic": "/ft_sensor", "component": "z"},
        "attribution": {
            "policy": {"vendor": "bench-lab", "name": "scripted", "version": "1.0.0",
                       "checkpoint": "sha256:" + "0" * 64},
            "body": {"arm": "fr3", "hand": "franka-hand", "dof": 7, "mount_h_mm": 740,
                     "calibrated_at": "2026-09-16"},
            "task": {"id": "tabletop.pick_place.cube_001", "tier": "A"}},
    }


def _timed(fn, *args, mb: float) -> tuple[object, float, dict]:
    """``fn(*args)``, the seconds it took, and its figures: seconds, ``mb`` per second."""
    t0 = time.perf_counter()
    got = fn(*args)
    dt = time.perf_counter() - t0
    return got, dt, {"seconds": round(dt, 3), "mb_per_s": round(mb / dt, 2)}


def run(seconds: float, width: int, height: int, fps: int,
        variants: tuple[str, ...] = VARIANTS) -> dict:
    """The figures (see the module docstring), one entry per variant; ``ratio`` is the
    import's MB/s over the plain read's (the read's seconds over the import's)."""
    cameras = len(CAMERA_NAMES)
    from judge.bundle.rosbag import import_bag

    out: dict = {"set": f"{cameras} camera(s) x {seconds:g} s of {width}x{height} at {fps} fps, "
                        f"JointState and WrenchStamped at {SIGNAL_HZ} Hz, ROS 2 MCAP",
                 "cpu_count": os.cpu_count()}
    with tempfile.TemporaryDirectory() as tmp:
        for variant in variants:  # untimed: every module and codec loaded before the clock
            warm = write_bag(Path(tmp) / f"warm-{variant}", variant, 0.5, cameras, width, height,
                             fps)
            (Path(tmp) / "warm.yaml").write_text(yaml.safe_dump(mapping(variant, cameras)))
            import_bag(warm, Path(tmp) / "warm.yaml", Path(tmp) / f"warm-{variant}-bundles")
            read_only(warm)
        for variant in variants:
            bag = write_bag(Path(tmp) / variant, variant, seconds, cameras, width, height, fps)
            path = Path(tmp) / f"{variant}.yaml"
            path.write_text(yaml.safe_dump(mapping(variant, cameras)))
            mb = bag_bytes(bag) / 1e6
            _, _, raw = _timed(read_only, bag, False, mb=mb)
            messages, read_s, read = _timed(read_only, bag, mb=mb)
            episodes, import_s, imported = _timed(import_bag, bag, path,
                                                  Path(tmp) / f"{variant}-bundles", mb=mb)
            out[variant] = {
                "bag_mb": round(mb, 2), "messages": messages, "read_raw": raw, "read": read,
                "import": imported,
                "ratio": round(read_s / import_s, 3),
                "cameras": {name: {"mode": c["mode"], "frames": c["frames"]}
                            for ep in episodes for name, c in sorted(ep["cameras"].items())}}
    out["ratios"] = {v: out[v]["ratio"] for v in variants}
    return out


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=60.0)
    parser.add_argument("--width", type=int, default=320)
    parser.add_argument("--height", type=int, default=240)
    parser.add_argument("--fps", type=int, default=30)
    parser.add_argument("--variant", action="append", choices=VARIANTS,
                        help="only these camera message types (repeatable; default all)")
    args = parser.parse_args(argv)
    result = run(args.seconds, args.width, args.height, args.fps,
                 tuple(args.variant or VARIANTS))
    print(json.dumps(result, indent=2, default=str))


if __name__ == "__main__":
    main()
