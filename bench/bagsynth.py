"""Synthetic ROS bags for tests and benchmarks of ``rcjudge import rosbag``.

Written by real writers: ``rosbags``' own (ROS 2 MCAP, ROS 2 SQLite, ROS 1) and the
``mcap`` library's ROS 2 writer (``mcap-ros2-support``). Every camera frame draws its
message index as :func:`bench.synth.frame_code`'s 16-bit block code (read back with
:func:`bench.synth.read_frame_index`), so a test knows which message each bundle frame
came from. The recording (all times from the bag's start, seconds):

* three cameras at ``fps``: ``/cam/front`` ``sensor_msgs/msg/Image`` (``encoding``),
  ``/cam/side/compressed`` ``sensor_msgs/msg/CompressedImage`` (JPEG), ``/cam/wrist``
  ``foxglove_msgs/msg/CompressedVideo`` (H.264, conforming) — or any kind per camera;
  stamps at ``k / fps + CAMERA_OFFSET_S[cam]``, logged ``LATENCY_S`` later;
* ``/joint_states``: the seven arm joints at ``joint_hz`` and, in separate messages, the two
  Franka finger joints (partial messages): at half that rate on the arm's stamps, or at
  ``fingers_hz`` on their own driver's clock (``FINGER_OFFSET_S`` after the arm's);
* ``/ft/wrench`` ``geometry_msgs/msg/WrenchStamped`` at ``ft_hz``: a constant bias plus
  ``CONTACT_N`` along z during each contact;
* the fingers close onto the object (0.08 -> 0.04 m) just before each contact and reopen at
  its end;
* ``/episode`` ``std_msgs/msg/String`` markers ``start``/``stop`` when ``markers`` is given.

Video cameras get a keyframe every ``gop`` frames. ROS 2 bags can be written with zstd
compression per message (``compression``); :func:`write_split` writes a ROS 1 recording
split in two files as ``rosbag record --split`` does (``<stem>_0.bag``, ``<stem>_1.bag``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from fractions import Fraction
from pathlib import Path

import av
import numpy as np

from bench.synth import frame_code

START_NS = 1_790_000_000_000_000_000
LATENCY_S = 0.02
CAMERA_OFFSET_S = {"front": 0.0, "side": 0.003, "wrist": 0.007}
FINGER_OFFSET_S = 0.0043  # the finger driver's messages, after the arm's, on its own clock
CONTACT_N = 12.0
BIAS_N = (0.4, -0.3, 5.0)
ARM = tuple(f"panda_joint{i}" for i in range(1, 8))
FINGERS = ("panda_finger_joint1", "panda_finger_joint2")
TOPICS = {"front": "/cam/front", "side": "/cam/side/compressed", "wrist": "/cam/wrist"}
DEFAULT_KINDS = {"front": "image", "side": "jpeg", "wrist": "h264"}

VIDEO_MSG = "builtin_interfaces/Time timestamp\nstring frame_id\nuint8[] data\nstring format\n"
VIDEO_MSG_ROS1 = "time timestamp\nstring frame_id\nuint8[] data\nstring format\n"
VIDEO_TYPE = "foxglove_msgs/msg/CompressedVideo"
IMAGE_TYPE = "foxglove_msgs/msg/CompressedImage"  # the same fields as CompressedVideo


@dataclass
class BagSpec:
    """What :func:`write_bag` records."""

    seconds: float = 3.0
    fps: int = 10
    width: int = 128
    height: int = 96
    encoding: str = "rgb8"  # of the Image camera
    kinds: dict[str, str] = field(default_factory=lambda: dict(DEFAULT_KINDS))
    joint_hz: int = 50
    ft_hz: int = 100
    contacts: list[tuple[float, float]] = field(default_factory=lambda: [(1.2, 2.2)])
    markers: list[tuple[float, str]] | None = None
    custom_data: dict[str, str] = field(default_factory=dict)
    stamp_zero: tuple[str, ...] = ()  # cameras whose stamps are left 0
    drop: dict[str, tuple[int, ...]] = field(default_factory=dict)  # camera -> frames not sent
    jump: tuple[str, int, float] | None = None  # (camera, from frame k, +s): stamps jump
    swap: tuple[str, int] | None = None  # (camera, k): frames k and k+1 swap their stamps
    ft_until: float | None = None  # the F/T sensor stops here (s)
    task: str | None = None  # a /task std_msgs/msg/String message at 0.1 s with this text
    width_topic: bool = False  # also /gripper/width std_msgs/msg/Float64 (m) at 20 Hz
    gop: int = 5  # video cameras: frames from one keyframe to the next
    fingers_hz: float | None = None  # finger messages at this rate on their own clock
    joint_gap: tuple[float, float] | None = None  # arm messages in [a, b) s not sent
    compression: str | None = None  # ROS 2 bags: "zstd" per message


def draw(k: int, width: int, height: int, camera: int) -> np.ndarray:
    """(H, W, 3) uint8: a grey level per camera and message index ``k``'s block code."""
    img = np.full((height, width, 3), 60 + 50 * camera, dtype=np.uint8)
    img[height // 2:, :, 0] = 200  # some colour, so channel order shows
    block, bits = frame_code(k, width)
    for b, bit in enumerate(bits):
        img[:block, b * block:(b + 1) * block] = 255 if bit else 0
    return img


def _h264(frames: list[np.ndarray], fps: int, gop: int = 5, codec: str = "h264",
          headers: bool = True) -> list[bytes]:
    """One access unit per frame: H.264 as a bundle wants it (``headers``: SPS/PPS on
    every keyframe), or H.265 (``codec="h265"``), no B-frames either way."""
    ctx = av.CodecContext.create("libx265" if codec == "h265" else "libx264", "w")
    ctx.width, ctx.height, ctx.pix_fmt = frames[0].shape[1], frames[0].shape[0], "yuv420p"
    ctx.time_base, ctx.framerate = Fraction(1, fps), Fraction(fps, 1)
    ctx.gop_size, ctx.max_b_frames = gop, 0
    if codec == "h265":
        ctx.options = {"preset": "ultrafast", "x265-params": f"keyint={gop}:bframes=0:"
                       "log-level=error:pools=1:frame-threads=1"}
    else:
        ctx.options = {"preset": "veryfast", "tune": "zerolatency", "threads": "1",
                       "x264-params": f"repeat-headers=1:keyint={gop}:"
                                      f"min-keyint={gop}:scenecut=0:bframes=0"}
    out = []
    for i, img in enumerate(frames):
        vf = av.VideoFrame.from_ndarray(img, format="rgb24")
        vf.pts = i
        out.extend(bytes(p) for p in ctx.encode(vf))
    out.extend(bytes(p) for p in ctx.encode(None))
    if codec == "h264" and not headers:  # SPS/PPS in the first unit only: decodable, not
        out[1:] = [_strip_headers(u) for u in out[1:]]  # conforming (later IDRs lack them)
    return out


def _strip_headers(unit: bytes) -> bytes:
    """An Annex B access unit without its SPS/PPS NAL units (types 7, 8)."""
    parts = unit.split(b"\x00\x00\x01")
    keep = [p for p in parts[1:] if p and p[0] & 0x1F not in (7, 8)]
    return b"".join(b"\x00\x00\x01" + p.rstrip(b"\x00") + b"\x00" for p in keep)


def _still(img: np.ndarray, codec: str) -> bytes:
    ctx = av.CodecContext.create("mjpeg" if codec == "jpeg" else "png", "w")
    ctx.width, ctx.height = img.shape[1], img.shape[0]
    ctx.pix_fmt = "yuvj420p" if codec == "jpeg" else "rgb24"
    ctx.time_base = Fraction(1, 25)
    if codec == "jpeg":
        ctx.options = {"qmin": "2", "qmax": "3"}
    vf = av.VideoFrame.from_ndarray(img, format="rgb24").reformat(format=ctx.pix_fmt)
    vf.pts = 0
    return b"".join(bytes(p) for p in ctx.encode(vf)) + b"".join(
        bytes(p) for p in ctx.encode(None))


def _raw(img: np.ndarray, encoding: str) -> tuple[bytes, int]:
    """(data, step) of an RGB frame in a ROS image encoding."""
    if encoding == "rgb8":
        return img.tobytes(), img.shape[1] * 3
    if encoding == "bgr8":
        return img[..., ::-1].tobytes(), img.shape[1] * 3
    if encoding in ("rgba8", "bgra8"):
        px = img if encoding == "rgba8" else img[..., ::-1]
        a = np.full(img.shape[:2] + (1,), 255, np.uint8)
        return np.concatenate([px, a], axis=2).tobytes(), img.shape[1] * 4
    gray = img.mean(axis=2)
    if encoding == "mono8":
        return gray.astype(np.uint8).tobytes(), img.shape[1]
    if encoding == "mono16":
        return (gray * 257).astype("<u2").tobytes(), img.shape[1] * 2
    if encoding in ("yuv422", "uyvy"):
        yuv = av.VideoFrame.from_ndarray(img, format="rgb24").reformat(format="yuyv422")
        arr = yuv.to_ndarray()  # (H, W, 2): Y, U/V
        return np.ascontiguousarray(arr[..., ::-1]).tobytes(), img.shape[1] * 2
    if encoding == "bayer_rggb8":
        h, w = img.shape[:2]
        m = np.zeros((h, w), np.uint8)
        m[0::2, 0::2] = img[0::2, 0::2, 0]
        m[0::2, 1::2] = img[0::2, 1::2, 1]
        m[1::2, 0::2] = img[1::2, 0::2, 1]
        m[1::2, 1::2] = img[1::2, 1::2, 2]
        return m.tobytes(), w
    raise ValueError(f"encoding {encoding!r} not drawn by bench.bagsynth")


def width_at(t: np.ndarray, contacts: list[tuple[float, float]]) -> np.ndarray:
    """Finger opening (m): 0.08 open, closing over 0.15 s onto 0.04 before each contact."""
    w = np.full(len(t), 0.08)
    for a, z in contacts:
        closing = (t >= a - 0.15) & (t < a)
        w[closing] = 0.08 - 0.04 * (t[closing] - (a - 0.15)) / 0.15
        w[(t >= a) & (t < z)] = 0.04
        opening = (t >= z) & (t < z + 0.15)
        w[opening] = 0.04 + 0.04 * (t[opening] - z) / 0.15
    return w


def force_at(t: np.ndarray, contacts: list[tuple[float, float]]) -> np.ndarray:
    """(N, 3) force (N): the bias, plus CONTACT_N along z inside each contact."""
    f = np.tile(np.array(BIAS_N), (len(t), 1))
    for a, z in contacts:
        f[(t >= a) & (t < z), 2] += CONTACT_N
    return f


def events(spec: BagSpec) -> list[tuple[int, str, str, dict]]:
    """(log ns, topic, kind, fields) of every message, in log-time order."""
    out = []
    n = round(spec.seconds * spec.fps)
    for c, (cam, kind) in enumerate(sorted(spec.kinds.items())):
        frames = [draw(k, spec.width, spec.height, c) for k in range(n)]
        units = None
        if kind in ("h264", "h265", "h264-noheaders"):
            units = _h264(frames, spec.fps, spec.gop, codec=kind[:4], headers=kind == "h264")
        stamps = [START_NS + round((k / spec.fps + CAMERA_OFFSET_S[cam]) * 1e9)
                  for k in range(n)]
        logs = [st + round(LATENCY_S * 1e9) for st in stamps]
        if spec.jump and spec.jump[0] == cam:
            stamps[spec.jump[1]:] = [st + round(spec.jump[2] * 1e9)
                                     for st in stamps[spec.jump[1]:]]
        if spec.swap and spec.swap[0] == cam:
            k = spec.swap[1]
            stamps[k], stamps[k + 1] = stamps[k + 1], stamps[k]
        for k in range(n):
            if k in spec.drop.get(cam, ()):
                continue
            stamp = stamps[k]
            f: dict = {"stamp": 0 if cam in spec.stamp_zero else stamp, "kind": kind, "k": k}
            if kind == "image":
                f["data"], f["step"] = _raw(frames[k], spec.encoding)
            elif kind in ("jpeg", "png", "foxglove-jpeg"):
                f["data"] = _still(frames[k], kind[-4:].lstrip("-"))
            else:
                f["data"] = units[k]
            out.append((logs[k], TOPICS[cam], kind, f))
    tj = np.arange(0, spec.seconds, 1 / spec.joint_hz)
    for i, t in enumerate(tj):
        ns = START_NS + round(t * 1e9)
        q = [0.1 * j + 0.2 * np.sin(t + j) for j in range(7)]
        v = [0.2 * np.cos(t + j) for j in range(7)]
        if not (spec.joint_gap and spec.joint_gap[0] <= t < spec.joint_gap[1]):
            out.append((ns + 1_000_000, "/joint_states", "joints",
                        {"stamp": ns, "name": list(ARM), "position": q, "velocity": v,
                         "effort": [1.0 + 0.1 * j for j in range(7)]}))
        if i % 2 == 0 and spec.fingers_hz is None:
            out.append(_fingers(ns, t, spec))
    if spec.fingers_hz is not None:
        for t in np.arange(0, spec.seconds - FINGER_OFFSET_S, 1 / spec.fingers_hz):
            out.append(_fingers(START_NS + round((t + FINGER_OFFSET_S) * 1e9), t, spec))
    tf = np.arange(0, spec.ft_until or spec.seconds, 1 / spec.ft_hz)
    for t, (fx, fy, fz) in zip(tf, force_at(tf, spec.contacts), strict=True):
        ns = START_NS + round(t * 1e9)
        out.append((ns + 500_000, "/ft/wrench", "wrench",
                    {"stamp": ns, "force": (fx, fy, fz)}))
    for t, text in spec.markers or []:
        out.append((START_NS + round(t * 1e9), "/episode", "marker", {"text": text}))
    if spec.width_topic:
        tw = np.arange(0, spec.seconds, 0.05)
        for t, w in zip(tw, width_at(tw, spec.contacts), strict=True):
            out.append((START_NS + round(t * 1e9) + 700_000, "/gripper/width", "float",
                        {"value": float(w)}))
    if spec.task is not None:
        out.append((START_NS + 100_000_000, "/task", "marker", {"text": spec.task}))
    out.sort(key=lambda e: (e[0], e[1]))
    return out


def _fingers(ns: int, t: float, spec: BagSpec) -> tuple[int, str, str, dict]:
    """A finger-only JointState at stamp ``ns`` (each finger half the opening at ``t``)."""
    half = float(width_at(np.array([t]), spec.contacts)[0]) / 2
    return (ns + 1_500_000, "/joint_states", "joints",
            {"stamp": ns, "name": list(FINGERS), "position": [half, half],
             "velocity": [0.0, 0.0], "effort": [0.0, 0.0]})


TYPES = {"image": "sensor_msgs/msg/Image", "jpeg": "sensor_msgs/msg/CompressedImage",
         "png": "sensor_msgs/msg/CompressedImage", "h264": VIDEO_TYPE, "h265": VIDEO_TYPE,
         "h264-noheaders": VIDEO_TYPE, "foxglove-jpeg": "foxglove_msgs/msg/CompressedImage",
         "float": "std_msgs/msg/Float64",
         "joints": "sensor_msgs/msg/JointState", "wrench": "geometry_msgs/msg/WrenchStamped",
         "marker": "std_msgs/msg/String"}


def _fields(kind: str, f: dict, spec: BagSpec) -> dict:
    """The message as plain fields (ROS 2 names; ``header``/``timestamp`` as (sec, nanosec))."""
    st = (f["stamp"] // 1_000_000_000, f["stamp"] % 1_000_000_000) if "stamp" in f else None
    if kind == "image":
        return {"header": (st, "front"), "height": spec.height, "width": spec.width,
                "encoding": spec.encoding, "is_bigendian": 0, "step": f["step"],
                "data": np.frombuffer(f["data"], np.uint8)}
    if kind in ("jpeg", "png"):
        return {"header": (st, "side"), "format": "rgb8; jpeg compressed bgr8"
                if kind == "jpeg" else "png", "data": np.frombuffer(f["data"], np.uint8)}
    if kind == "foxglove-jpeg":
        return {"timestamp": st, "frame_id": "side", "data": np.frombuffer(f["data"], np.uint8),
                "format": "jpeg"}
    if kind == "float":
        return {"data": f["value"]}
    if kind.startswith("h26"):
        return {"timestamp": st, "frame_id": "wrist", "data": np.frombuffer(f["data"], np.uint8),
                "format": kind[:4]}
    if kind == "joints":
        return {"header": (st, ""), "name": f["name"],
                **{k: np.array(f[k], np.float64) for k in ("position", "velocity", "effort")}}
    if kind == "wrench":
        return {"header": (st, "ft"), "force": f["force"], "torque": (0.0, 0.0, 0.0)}
    return {"data": f["text"]}


def _build(store, msgtype: str, values: dict, ros1: bool):
    """A rosbags message object of ``msgtype`` from :func:`_fields`' plain values."""
    T = store.types
    Time = T["builtin_interfaces/msg/Time"]
    out = {}
    for k, v in values.items():
        if k == "header":
            (stamp, frame) = v
            hdr = {"stamp": Time(sec=stamp[0], nanosec=stamp[1]), "frame_id": frame}
            if ros1:
                hdr["seq"] = 0
            out[k] = T["std_msgs/msg/Header"](**hdr)
        elif k == "timestamp":
            out[k] = Time(sec=v[0], nanosec=v[1])
        elif k in ("force", "torque"):
            out[k] = T["geometry_msgs/msg/Vector3"](x=v[0], y=v[1], z=v[2])
        else:
            out[k] = v
    if msgtype == "geometry_msgs/msg/WrenchStamped":
        wrench = T["geometry_msgs/msg/Wrench"](force=out.pop("force"), torque=out.pop("torque"))
        out["wrench"] = wrench
    return T[msgtype](**out)


def _store(ros1: bool):
    from rosbags.typesys import Stores, get_types_from_msg, get_typestore

    store = get_typestore(Stores.ROS1_NOETIC if ros1 else Stores.LATEST)
    for name in (VIDEO_TYPE, IMAGE_TYPE):
        store.register(get_types_from_msg(VIDEO_MSG_ROS1 if ros1 else VIDEO_MSG, name))
    return store


def write_bag(path: str | Path, storage: str = "mcap", spec: BagSpec | None = None) -> Path:
    """Write a bag: ``storage`` ``mcap``/``sqlite3`` (a ROS 2 folder), ``ros1`` (``.bag``) or
    ``mcap_ros2`` (a lone ``.mcap`` by the ``mcap`` library's writer); its path."""
    spec = spec or BagSpec()
    path = Path(path)
    evs = events(spec)
    if storage == "mcap_ros2":
        return _write_mcap_ros2(path, evs, spec)
    return _write_rosbags(path, storage, evs, spec)


def write_split(folder: str | Path, stem: str, spec: BagSpec, at_s: float) -> list[Path]:
    """A ROS 1 recording split in two files as ``rosbag record --split`` writes it:
    ``<stem>_0.bag`` (messages logged before ``at_s`` s) and ``<stem>_1.bag`` (the rest)."""
    evs = events(spec)
    cut = START_NS + round(at_s * 1e9)
    parts = ([e for e in evs if e[0] < cut], [e for e in evs if e[0] >= cut])
    return [_write_rosbags(Path(folder) / f"{stem}_{i}.bag", "ros1", part, spec)
            for i, part in enumerate(parts)]


def _write_rosbags(path: Path, storage: str, evs: list, spec: BagSpec) -> Path:
    """``evs`` written by rosbags' own writers (ROS 1, or ROS 2 MCAP/SQLite)."""
    ros1 = storage == "ros1"
    store = _store(ros1)
    if ros1:
        from rosbags.rosbag1 import Writer as W1

        writer = W1(path)
    else:
        from rosbags.rosbag2 import StoragePlugin
        from rosbags.rosbag2 import Writer as W2
        from rosbags.rosbag2.enums import CompressionFormat, CompressionMode

        writer = W2(path, version=9, storage_plugin=StoragePlugin.MCAP if storage == "mcap"
                    else StoragePlugin.SQLITE3)
        if spec.compression == "zstd":
            writer.set_compression(CompressionMode.MESSAGE, CompressionFormat.ZSTD)
        for k, v in spec.custom_data.items():
            writer.set_custom_data(k, v)
    conns = {}
    with writer:
        for ns, topic, kind, f in evs:
            msgtype = TYPES[kind]
            if topic not in conns:
                conns[topic] = writer.add_connection(topic, msgtype, typestore=store)
            msg = _build(store, msgtype, _fields(kind, f, spec), ros1)
            data = store.serialize_ros1(msg, msgtype) if ros1 else \
                store.serialize_cdr(msg, msgtype)
            writer.write(conns[topic], ns, data)
    return path


def _plain(store, msgtype: str, values: dict) -> dict:
    """:func:`_fields`' values as the dicts the ``mcap_ros2`` writer takes."""
    out = {}
    for k, v in values.items():
        if k == "header":
            out[k] = {"stamp": {"sec": v[0][0], "nanosec": v[0][1]}, "frame_id": v[1]}
        elif k == "timestamp":
            out[k] = {"sec": v[0], "nanosec": v[1]}
        elif k in ("force", "torque"):
            out.setdefault("wrench", {})[k] = dict(zip("xyz", v, strict=True))
        elif isinstance(v, np.ndarray):
            out[k] = v.tobytes() if v.dtype == np.uint8 else v.tolist()
        else:
            out[k] = v
    return out


def _write_mcap_ros2(path: Path, evs: list, spec: BagSpec) -> Path:
    from mcap_ros2.writer import Writer

    store = _store(False)
    with open(path, "wb") as fh:
        writer = Writer(fh)
        schemas = {}
        for ns, topic, kind, f in evs:
            msgtype = TYPES[kind]
            if msgtype not in schemas:
                text, _ = store.generate_msgdef(msgtype, ros_version=2)
                schemas[msgtype] = writer.register_msgdef(msgtype, text)
            writer.write_message(topic, schemas[msgtype], _plain(store, msgtype,
                                 _fields(kind, f, spec)), log_time=ns, publish_time=ns)
        writer.finish()
    return path
