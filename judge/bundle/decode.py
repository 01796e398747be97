"""Decode: MCAP summary, signal streams, and only the requested video frames.

With ``transcode`` (camera files into a bundle), the only module that imports ``av``.
One pass over the MCAP collects every camera's H.264 access units (cheap: no pixel
work) and the joint/gripper streams; :func:`decode_frames` then seeks each camera to
the keyframe before a cluster of targets, decodes forward, and converts to RGB only the frames kept.
"""

from __future__ import annotations

import posixpath
import struct
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from typing import IO

import av
import numpy as np
from foxglove_schemas_protobuf.CompressedVideo_pb2 import CompressedVideo
from foxglove_schemas_protobuf.JointStates_pb2 import JointStates
from mcap.exceptions import EndOfFile, InvalidMagic
from mcap.reader import McapReader, make_reader
from mcap.summary import Summary

from judge.bundle.boundary import reading
from judge.bundle.chunks import check_data_crc, iter_messages
from judge.bundle.filesystems import open_file
from judge.bundle.intake import VerifiedBundle
from judge.bundle.streams import (
    CAMERA_PREFIX,
    GRIPPER_JOINT,
    GRIPPER_META,
    GRIPPER_TOPIC,
    JOINT_TOPIC,
    JOINTS_SCHEMA,
    VIDEO_SCHEMA,
    Signals,
    VideoPackets,
    nal_types,
)
from judge.errors import ChannelError, FrameTimestampError, McapError, VideoError

REQUIRED_CAMERAS = 3
MCAP_MAGIC = b"\x89MCAP0\r\n"


@dataclass(frozen=True)
class ChannelInfo:
    topic: str
    schema: str
    encoding: str
    messages: int


@dataclass(frozen=True)
class Streams:
    """Everything read from a bundle before any pixel is decoded."""

    channels: tuple[ChannelInfo, ...]
    start_ns: int
    end_ns: int
    videos: dict[str, VideoPackets]  # camera name -> access units
    signals: Signals
    metadata: dict[str, dict[str, str]] = field(default_factory=dict)  # rcjudge.gripper

    @property
    def duration_s(self) -> float:
        return (self.end_ns - self.start_ns) / 1e9


@dataclass(frozen=True)
class Frames:
    """Decoded frames of every camera at the requested timestamps."""

    cameras: tuple[str, ...]
    images: np.ndarray  # (n_cams, T, H, W, 3) uint8
    timestamps: np.ndarray  # (n_cams, T) float64 seconds actually decoded
    requested: np.ndarray  # (T,) float64 seconds


@contextmanager
def _open(bundle: VerifiedBundle, path: str) -> Iterator[IO[bytes]]:
    """Open ``path`` of the bundle; every input error inside is the MCAP's one line."""
    with reading(path, McapError), ExitStack() as stack:
        try:
            f = stack.enter_context(open_file(bundle.fs, bundle.root, path))
        except FileNotFoundError:
            raise McapError(f"{path}: file not found") from None
        yield f


def _reader(f: IO[bytes], path: str) -> McapReader:
    """An MCAP reader over ``f``; a file that does not start with the MCAP magic is refused."""
    try:
        return make_reader(f)
    except InvalidMagic:
        f.seek(0)
        raise McapError(f"{path}: not an MCAP file: it starts with bytes "
                        f"{f.read(len(MCAP_MAGIC)).hex(' ')}, expected the MCAP magic "
                        f"{MCAP_MAGIC.hex(' ')}") from None
    except (EndOfFile, struct.error):  # fewer bytes than the magic
        f.seek(0)
        raise McapError(f"{path}: not an MCAP file: {len(f.read(len(MCAP_MAGIC)))} bytes, "
                        f"shorter than the {len(MCAP_MAGIC)}-byte MCAP magic") from None


def _summary(reader, path: str) -> Summary:
    with reading(path, McapError, "truncated or corrupt MCAP (summary unreadable: {})"):
        summary = reader.get_summary()
    if summary is None or summary.statistics is None:
        raise McapError(f"{path}: MCAP has no summary section (truncated or written unfinished)")
    return summary


def recorded_span_s(bundle: VerifiedBundle) -> float | None:
    """Seconds from the first to the last message of the bundle's MCAP, read from its
    summary alone (nothing decoded); None when it recorded no message."""
    with _open(bundle, bundle.mcap_path) as f:
        stats = _summary(_reader(f, bundle.mcap_path), bundle.mcap_path).statistics
    if not stats.message_count:
        return None
    return (stats.message_end_time - stats.message_start_time) / 1e9


def load_streams(bundle: VerifiedBundle, required_cameras: int = REQUIRED_CAMERAS) -> Streams:
    """Read channels, camera access units and signals of a verified bundle, in one pass."""
    path = bundle.mcap_path
    with _open(bundle, path) as f:
        reader = _reader(f, path)
        summary = _summary(reader, path)
        check_data_crc(f, path)
        stats = summary.statistics
        channels = tuple(
            ChannelInfo(c.topic, _schema_name(summary, c, path), c.message_encoding,
                        stats.channel_message_counts.get(cid, 0))
            for cid, c in sorted(summary.channels.items()))
        by_topic = {c.topic: c for c in channels}
        cams = sorted(c.topic for c in channels if c.topic.startswith(CAMERA_PREFIX))
        for topic in cams:
            _expect(path, by_topic[topic], VIDEO_SCHEMA)
        for topic in (JOINT_TOPIC, GRIPPER_TOPIC):
            if topic not in by_topic:
                raise ChannelError(f"{path}: required signal channel {topic} is missing "
                                   f"(channels: {', '.join(sorted(by_topic)) or 'none'})")
            _expect(path, by_topic[topic], JOINTS_SCHEMA)
        start = stats.message_start_time
        metadata = _metadata(reader, summary, path)
        video: dict[str, tuple[list[float], list[bytes]]] = {t: ([], []) for t in cams}
        joints: list[JointStates] = []
        gripper: list[JointStates] = []
        ids = {cid: c.topic for cid, c in summary.channels.items()
               if c.topic in video or c.topic in (JOINT_TOPIC, GRIPPER_TOPIC)}
        with reading(path, McapError, "corrupt MCAP data ({})"):
            for cid, log_time, data in iter_messages(f, summary, set(ids), path):
                topic = ids[cid]
                if topic in video:
                    cv = CompressedVideo.FromString(data)
                    if cv.format != "h264":
                        raise VideoError(f"{path}: camera {topic} has format {cv.format!r}, "
                                         "expected 'h264'")
                    ts, payload = video[topic]
                    ts.append((log_time - start) / 1e9)
                    payload.append(cv.data)
                elif topic == JOINT_TOPIC:
                    joints.append((log_time, JointStates.FromString(data)))
                else:
                    gripper.append((log_time, JointStates.FromString(data)))
    videos = {posixpath.basename(t): _video(path, posixpath.basename(t), *video[t]) for t in cams}
    for name, sidecar in sorted(bundle.sidecars.items()):
        if name in videos:
            raise ChannelError(f"{sidecar}: camera {name!r} is also a channel in {path}")
        videos[name] = read_mp4(bundle, sidecar, name)
    if len(videos) != required_cameras:
        raise ChannelError(f"{path}: expected {required_cameras} camera streams, found "
                           f"{len(videos)} ({', '.join(sorted(videos)) or 'none'})")
    signals = _signals(path, joints, gripper, start)
    return Streams(channels=channels, start_ns=start, end_ns=stats.message_end_time,
                   videos=videos, signals=signals, metadata=metadata)


def _schema_name(summary: Summary, channel, path: str) -> str:
    """The channel's schema name ("" for none); a schema id the summary lacks is refused."""
    if not channel.schema_id:
        return ""
    if channel.schema_id not in summary.schemas:
        raise McapError(f"{path}: channel {channel.topic} names schema {channel.schema_id}, "
                        "which the summary does not hold (corrupt MCAP summary)")
    return summary.schemas[channel.schema_id].name


def _metadata(reader, summary: Summary, path: str) -> dict[str, dict[str, str]]:
    """The metadata records the judge reads (``rcjudge.gripper``), by name."""
    if not any(m.name == GRIPPER_META for m in summary.metadata_indexes):
        return {}
    with reading(path, McapError, f"unreadable metadata record {GRIPPER_META} ({{}})"):
        return {m.name: dict(m.metadata) for m in reader.iter_metadata()
                if m.name == GRIPPER_META}


def _expect(path: str, ch: ChannelInfo, schema: str) -> None:
    if ch.schema != schema or ch.encoding != "protobuf":
        raise ChannelError(f"{path}: channel {ch.topic} has schema {ch.schema!r} "
                           f"({ch.encoding}), expected {schema!r} (protobuf)")
    if ch.messages == 0:
        raise ChannelError(f"{path}: channel {ch.topic} has no messages")


def _video(path: str, name: str, ts: list[float], data: list[bytes]) -> VideoPackets:
    if not data:
        raise ChannelError(f"{path}: camera {name} has no frames")
    types = [nal_types(d) for d in data]
    if not types[0]:
        raise VideoError(f"{path}: camera {name} is not H.264 Annex B (no start code)")
    key = np.array([5 in t for t in types])
    if not key[0] or not {7, 8} <= set(types[0]):
        first = float(ts[int(np.argmax(key))]) if key.any() else None
        raise VideoError(f"{path}: camera {name} starts mid-GOP: the first frame is not an IDR "
                         f"keyframe with SPS/PPS (first keyframe at t={first})")
    t = np.asarray(ts, dtype=np.float64)
    if np.any(np.diff(t) <= 0):
        raise VideoError(f"{path}: camera {name} timestamps are not strictly increasing")
    return VideoPackets(name=name, t=t, keyframe=key, data=data)


def _signals(path: str, joints: list, gripper: list, start: int) -> Signals:
    names = tuple(j.name for j in joints[0][1].joints)
    if not names:
        raise ChannelError(f"{path}: {JOINT_TOPIC} messages carry no joints")
    rows, sigs = [], []
    for _, msg in joints:
        rows.append([x for j in msg.joints for x in (j.position, j.velocity, j.effort)])
        sigs.append(",".join(j.name for j in msg.joints))
    if len(set(sigs)) > 1:
        i = next(i for i, sig in enumerate(sigs) if sig != sigs[0])
        raise ChannelError(f"{path}: {JOINT_TOPIC} message {i} has joints [{sigs[i]}], "
                           f"expected [{sigs[0]}]")
    arr = np.array(rows, dtype=np.float64).reshape(len(rows), len(names), 3)  # (N, J, 3)
    g = np.empty((len(gripper), 2))
    for i, (_, msg) in enumerate(gripper):
        jg = next((j for j in msg.joints if j.name == GRIPPER_JOINT), None)
        if jg is None:
            raise ChannelError(f"{path}: {GRIPPER_TOPIC} message {i} has no joint "
                               f"{GRIPPER_JOINT!r}")
        g[i] = (jg.position, jg.effort)
    jt = (np.array([lt for lt, _ in joints], dtype=np.int64) - start) / 1e9
    gt = (np.array([lt for lt, _ in gripper], dtype=np.int64) - start) / 1e9
    for topic, t in ((JOINT_TOPIC, jt), (GRIPPER_TOPIC, gt)):
        if np.any(np.diff(t) <= 0):
            raise ChannelError(f"{path}: {topic} timestamps are not strictly increasing")
    return Signals(t=jt, joint_names=names, position=arr[:, :, 0], velocity=arr[:, :, 1],
                   effort=arr[:, :, 2], gripper_t=gt, gripper_width=g[:, 0],
                   gripper_force=g[:, 1])


def read_mp4(bundle: VerifiedBundle | None, path: str, name: str) -> VideoPackets:
    """Demux an H.264 ``.mp4`` into Annex B access units (AVCC → Annex B filter)."""
    with reading(path, VideoError), ExitStack() as stack:
        try:
            f = stack.enter_context(open_file(bundle.fs, bundle.root, path) if bundle
                                    else open(path, "rb"))
        except FileNotFoundError:
            raise VideoError(f"{path}: file not found") from None
        with reading(path, VideoError, "not a readable video file ({})"):
            container = av.open(f, "r")
        with reading(path, VideoError, "unreadable video data ({})"), container:
            ts, data = _demux(path, container)
    return _video(path, name, ts, data)


def _demux(path: str, container) -> tuple[list[float], list[bytes]]:
    """Annex B access units and their seconds, of the first video stream of ``container``."""
    if not container.streams.video:
        raise VideoError(f"{path}: no video stream")
    stream = container.streams.video[0]
    if stream.codec_context.name != "h264":
        raise VideoError(f"{path}: video codec is {stream.codec_context.name!r}, "
                         "expected 'h264'")
    bsf = av.BitStreamFilterContext("h264_mp4toannexb", stream)
    ts, data, last = [], [], None
    for packet in container.demux(stream):
        for out in bsf.filter(packet if packet.size else None):
            if out.pts is None:
                raise VideoError(f"{path}: packet without a timestamp")
            if last is not None and out.pts <= last:
                raise VideoError(f"{path}: frames are reordered (B-frames); re-encode "
                                 "without B-frames, e.g. ffmpeg -c:v libx264 -bf 0")
            last = out.pts
            ts.append(float(out.pts * out.time_base))
            data.append(bytes(out))
    return ts, data


def frame_size(video: VideoPackets) -> tuple[int, int]:
    """(width, height) of a camera, from decoding its first access unit (an IDR) alone."""
    ctx = av.CodecContext.create("h264", "r")
    with reading(f"camera {video.name}", VideoError, "first frame does not decode ({})"):
        frames = ctx.decode(av.Packet(video.data[0])) + ctx.decode(None)
    if not frames:
        raise VideoError(f"camera {video.name}: the first access unit gives no picture")
    return frames[0].width, frames[0].height


def nearest_frames(video: VideoPackets, targets: np.ndarray) -> np.ndarray:
    """Index of the frame nearest each target time; one frame interval of tolerance."""
    t = video.t
    tol = 1.0 / video.fps if video.fps else 0.0
    i = np.clip(np.searchsorted(t, targets), 1, max(len(t) - 1, 1))
    left = t[i - 1]
    right = t[np.minimum(i, len(t) - 1)]
    idx = np.where(np.abs(targets - left) <= np.abs(right - targets), i - 1, i)
    idx = np.minimum(idx, len(t) - 1)
    bad = np.abs(t[idx] - targets) > tol + 1e-9
    if bad.any():
        j = int(np.argmax(bad))
        raise FrameTimestampError(
            f"camera {video.name}: requested t={targets[j]:.4f}s, nearest frame at "
            f"t={t[idx[j]]:.4f}s, tolerance {tol:.4f}s (stream covers {t[0]:.3f}–{t[-1]:.3f}s)")
    return idx


def _decode_camera(video: VideoPackets, idx: np.ndarray,
                   size: tuple[int, int] | None) -> dict[int, np.ndarray]:
    """Decode the frames ``idx`` of one camera: seek to keyframes, decode forward."""
    wanted = sorted(set(int(i) for i in idx))
    keys = np.flatnonzero(video.keyframe)
    out: dict[int, np.ndarray] = {}
    ctx = av.CodecContext.create("h264", "r")
    ctx.thread_type = "NONE"  # one picture out per access unit, no frame-thread delay
    pos = -1  # index of the last frame the decoder produced
    for f in wanted:
        k = int(keys[np.searchsorted(keys, f, side="right") - 1])
        if pos < k - 1:  # cheaper to jump to the keyframe than to decode up to it
            if pos >= 0:
                ctx.flush_buffers()
            pos = k - 1
        while pos < f:
            pos += 1
            try:
                decoded = ctx.decode(av.Packet(video.data[pos]))
            except av.FFmpegError as exc:
                raise VideoError(f"camera {video.name}: frame {pos} (t={video.t[pos]:.3f}s) "
                                 f"does not decode: {exc}") from None
            if len(decoded) != 1:
                raise VideoError(f"camera {video.name}: frame {pos} gave {len(decoded)} "
                                 "pictures; expected one per access unit (no B-frames)")
            if pos == f:
                frame = decoded[0]
                if size is not None:
                    frame = frame.reformat(width=size[1], height=size[0])
                out[f] = frame.to_ndarray(format="rgb24")
    return out


def decode_frames(videos: dict[str, VideoPackets], targets: np.ndarray,
                  size: tuple[int, int] | None = None, threads: int | None = None) -> Frames:
    """Decode, per camera, the frame nearest each target timestamp.

    Args:
        videos: camera name -> access units (from :func:`load_streams`).
        targets: (T,) seconds, shared by all cameras.
        size: (H, W) to resize to; required when cameras differ in size.
        threads: cameras decoded in parallel (default: one thread per camera).
    """
    targets = np.asarray(targets, dtype=np.float64)
    names = tuple(sorted(videos))
    indices = [nearest_frames(videos[n], targets) for n in names]
    workers = threads or len(names)  # the decoder releases the GIL; one thread per camera
    with ThreadPoolExecutor(max_workers=workers) as pool:
        decoded = list(pool.map(lambda a: _decode_camera(videos[a[0]], a[1], size),
                                zip(names, indices, strict=True)))
    shapes = {n: next(iter(d.values())).shape for n, d in zip(names, decoded, strict=True) if d}
    if len(set(shapes.values())) > 1:
        raise VideoError(f"cameras differ in frame size ({shapes}); pass size=(H, W) to resize")
    shape = next(iter(shapes.values()), (0, 0, 3))
    images = np.empty((len(names), len(targets), *shape), dtype=np.uint8)
    stamps = np.empty((len(names), len(targets)))
    for c, (name, idx, frames) in enumerate(zip(names, indices, decoded, strict=True)):
        for j, i in enumerate(idx):
            images[c, j] = frames[int(i)]
            stamps[c, j] = videos[name].t[i]
    return Frames(cameras=names, images=images, timestamps=stamps, requested=targets)
