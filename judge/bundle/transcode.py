"""Transcode: any video PyAV can decode → the bundle's H.264 profile (``bundle create``).

Where outside recordings enter the bundle format (``docs/bundle-format.md``). A camera
file whose packets already conform is **copied**: H.264, Annex B after
``h264_mp4toannexb``, no B-frames (decode order = presentation order), the first packet an
IDR and every IDR with SPS/PPS, 8-bit 4:2:0 in limited colour range, no rotation. Anything
else (H.264 with B-frames, HEVC, AV1, VP9, MJPEG, full-range or rotated video, …) is
decoded and **re-encoded** with libx264 to that profile:

* every decoded frame keeps its presentation timestamp exactly: the encoder works in the
  input stream's time base and each output packet carries its input frame's ``pts``;
* a keyframe (IDR with SPS/PPS) every ``keyframe_s`` seconds, quality ``crf``;
* full-range input (MJPEG's ``yuvj*``, or a stream flagged full range) is converted to
  limited range, so the colours decode as they were recorded;
* a display rotation (the container's display matrix, multiples of 90°) is applied to
  the pixels, so the bundle's frames are upright as a player would show them.

Imports ``av``, like ``decode`` (the two modules that touch pixels or packets).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path

import av
import numpy as np
from av.video.frame import PictureType
from av.video.reformatter import ColorRange

from judge.bundle.streams import VideoPackets, is_idr, nal_types
from judge.errors import VideoError
from rcjudge.progress import Progress

PROGRESS_MIN_FRAMES = 300  # inputs at least this long get a progress bar (on a terminal)
PRESETS = ("ultrafast", "superfast", "veryfast", "faster", "fast", "medium", "slow")


SPAN_TOLERANCE_S = 1e-4  # LeRobot's own tolerance_s: a span edge this close is the frame's


@dataclass(frozen=True)
class EncodeOptions:
    """How a camera file that does not conform is re-encoded."""

    keyframe_s: float = 0.5  # IDR interval (s); bounds the decode work per sampled frame
    crf: int = 18  # libx264 constant rate factor: 0 lossless … 51 worst; 18 ≈ visually lossless
    preset: str = "veryfast"  # libx264 speed/size trade-off
    force: bool = False  # re-encode even a conforming file

    def __post_init__(self) -> None:
        if not 0 < self.keyframe_s <= 10:
            raise VideoError(f"--keyframe-s {self.keyframe_s}: expected 0 < seconds <= 10")
        if not 0 <= self.crf <= 51:
            raise VideoError(f"--crf {self.crf}: expected an integer 0..51")
        if self.preset not in PRESETS:
            raise VideoError(f"--preset {self.preset!r}: expected one of {', '.join(PRESETS)}")


@dataclass(frozen=True)
class Ingested:
    """One camera file turned into bundle access units, and how."""

    packets: VideoPackets
    mode: str  # "copy" | "reencode"
    reason: str  # why it was re-encoded ("" when copied)
    codec: str  # the input's codec (decoder name)
    bytes_in: int  # size of the input file

    def as_dict(self) -> dict:
        return {"mode": self.mode, "reason": self.reason, "codec": self.codec,
                "frames": len(self.packets.t), "keyframes": int(self.packets.keyframe.sum()),
                "bytes_in": self.bytes_in}


def _open(path: str):
    if not Path(path).is_file():
        raise VideoError(f"{path}: file not found")
    try:
        container = av.open(path, "r")
    except av.FFmpegError as exc:
        raise VideoError(f"{path}: not a readable video file ({exc})") from None
    if not container.streams.video:
        container.close()
        raise VideoError(f"{path}: no video stream")
    return container


def _first_frame(path: str) -> tuple[av.VideoFrame, str]:
    """The first decoded frame (its format, colour range and rotation) and the codec."""
    with _open(path) as container:
        codec = container.streams.video[0].codec_context.name
        try:
            for frame in container.decode(video=0):
                return frame, codec
        except av.FFmpegError as exc:
            raise VideoError(f"{path}: video does not decode ({exc})") from None
    raise VideoError(f"{path}: video stream has no frames")


def _copy(path: str, name: str) -> tuple[VideoPackets | None, str]:
    """Annex B access units of a conforming H.264 file, or (None, why it does not conform)."""
    with _open(path) as container:
        stream = container.streams.video[0]
        bsf = av.BitStreamFilterContext("h264_mp4toannexb", stream)
        ts, data, last = [], [], None
        for packet in container.demux(stream):
            for out in bsf.filter(packet if packet.size else None):
                if out.pts is None:
                    return None, "a packet has no timestamp"
                if last is not None and out.pts <= last:
                    return None, "frames are reordered (B-frames)"
                last = out.pts
                ts.append(out.pts * out.time_base)
                data.append(bytes(out))
    if not data:
        raise VideoError(f"{path}: video stream has no frames")
    if not data[0].startswith((b"\x00\x00\x01", b"\x00\x00\x00\x01")):
        return None, "not Annex B after h264_mp4toannexb"
    for i, d in enumerate(data):
        types = nal_types(d)
        if 5 in types and not {7, 8} <= set(types):
            return None, f"keyframe {i} lacks SPS/PPS"
        if i == 0 and 5 not in types:
            return None, "the first frame is not an IDR keyframe"
    t = np.array([float(x) for x in ts], dtype=np.float64)
    return VideoPackets(name=name, t=t, keyframe=np.array([is_idr(d) for d in data]),
                        data=data), ""


def _upright(frame, rotation: int) -> av.VideoFrame:
    """Limited-range yuv420p frame, turned by the display rotation, even-sized for 4:2:0."""
    src_range = ColorRange.JPEG if (frame.color_range == ColorRange.JPEG
                                    or frame.format.name.startswith("yuvj")) else ColorRange.MPEG
    w, h = frame.width - frame.width % 2, frame.height - frame.height % 2
    if rotation % 360 == 0:
        return frame.reformat(width=w, height=h, format="yuv420p", src_color_range=src_range,
                              dst_color_range=ColorRange.MPEG)
    rgb = frame.reformat(format="rgb24", src_color_range=src_range,
                         dst_color_range=ColorRange.JPEG).to_ndarray()  # (H, W, 3) uint8
    rgb = np.rot90(rgb, k=(rotation // 90) % 4)
    rgb = np.ascontiguousarray(rgb[: rgb.shape[0] // 2 * 2, : rgb.shape[1] // 2 * 2])
    return av.VideoFrame.from_ndarray(rgb, format="rgb24").reformat(
        format="yuv420p", dst_color_range=ColorRange.MPEG)


def _reencode(path: str, name: str, opts: EncodeOptions, rotation: int,
              progress: bool, span: tuple[float, float] | None = None) -> VideoPackets:
    """Decode every frame (in ``span``, if given) and encode it to the bundle's profile."""
    if rotation % 90:
        raise VideoError(f"{path}: display rotation {rotation}° is not a multiple of 90°")
    with _open(path) as container:
        stream = container.streams.video[0]
        stream.thread_type = "AUTO"
        tb = stream.time_base or Fraction(1, 1000)
        rate = stream.average_rate or stream.guessed_rate or Fraction(30, 1)
        gop = max(1, round(opts.keyframe_s * float(rate)))
        ctx = None
        long = (stream.frames or 0) >= PROGRESS_MIN_FRAMES
        bar = Progress(stream.frames or 0, enabled=progress and long, label=f"{name}: re-encode")
        packets, pts_in, last = [], [], None
        try:
            for i, frame in enumerate(container.decode(stream)):
                if frame.pts is None:
                    raise VideoError(f"{path}: frame {i} has no timestamp")
                if last is not None and frame.pts <= last:
                    raise VideoError(f"{path}: frame {i} at pts {frame.pts} is not after the "
                                     f"previous frame's pts {last} (time base {tb})")
                last = frame.pts
                if span is not None:
                    ft = float(frame.pts * tb)
                    if ft < span[0] - SPAN_TOLERANCE_S or ft >= span[1] - SPAN_TOLERANCE_S:
                        bar.step()
                        continue
                up = _upright(frame, rotation)
                if ctx is None:
                    ctx = _encoder(up.width, up.height, tb, rate, gop, opts)
                up.pts, up.time_base = frame.pts, tb
                up.pict_type = PictureType.NONE  # an input I-frame must not force an IDR
                pts_in.append(frame.pts)
                packets.extend(ctx.encode(up))
                bar.step()
        except av.FFmpegError as exc:
            raise VideoError(f"{path}: frame {len(pts_in)} does not decode ({exc})") from None
        finally:
            bar.close()
    if ctx is None:
        where = "" if span is None else f" in {span[0]:.3f}-{span[1]:.3f} s"
        raise VideoError(f"{path}: video stream has no frames{where}")
    packets.extend(ctx.encode(None))
    pts_out = [p.pts for p in packets]
    if pts_out != pts_in:
        raise VideoError(f"{path}: encoder returned {len(packets)} packets for {len(pts_in)} "
                         "frames or changed their order")
    data = [bytes(p) for p in packets]
    shift = min(span[0], float(pts_in[0] * tb)) if span is not None else 0.0  # never < 0
    return VideoPackets(name=name, t=np.array([float(p * tb) - shift for p in pts_in]),
                        keyframe=np.array([is_idr(d) for d in data]), data=data)


def _encoder(width: int, height: int, tb: Fraction, rate: Fraction, gop: int,
             opts: EncodeOptions):
    ctx = av.CodecContext.create("libx264", "w")
    ctx.width, ctx.height, ctx.pix_fmt = width, height, "yuv420p"
    ctx.time_base, ctx.framerate = tb, rate
    ctx.color_range = ColorRange.MPEG
    ctx.gop_size, ctx.max_b_frames = gop, 0
    ctx.options = {"preset": opts.preset, "crf": str(opts.crf),
                   "x264-params": f"repeat-headers=1:keyint={gop}:min-keyint={gop}"
                                  ":scenecut=0:bframes=0"}
    return ctx


def ingest_video(path: str, name: str, options: EncodeOptions | None = None,
                 progress: bool = False, span: tuple[float, float] | None = None) -> Ingested:
    """One camera file as bundle access units: copied when it conforms, else re-encoded.

    Args:
        path: any video file PyAV decodes (the first video stream is used).
        name: the camera's name in the bundle.
        options: keyframe interval, quality and speed of a re-encode.
        progress: show a progress bar on a terminal for long re-encodes.
        span: keep only the frames with ``start - tol <= t < end - tol`` (s, ``tol`` =
            :data:`SPAN_TOLERANCE_S`, LeRobot's 1e-4 s) and shift them to start at 0 — one
            episode of a file holding several (always re-encoded: a cut
            need not start on a keyframe).

    Raises:
        VideoError: the file is missing, not a video, does not decode, or its timestamps
            do not strictly increase.
    """
    opts = options or EncodeOptions()
    first, codec = _first_frame(path)
    rotation = round(first.rotation or 0)
    reason = ""
    if span is not None:
        reason = f"cut {span[0]:.3f}-{span[1]:.3f} s"
    elif opts.force:
        reason = "re-encode forced"
    elif codec != "h264":
        reason = f"codec {codec}"
    elif first.format.name != "yuv420p":
        reason = f"pixel format {first.format.name}"
    elif first.color_range == ColorRange.JPEG:
        reason = "full colour range"
    elif rotation % 360:
        reason = f"display rotation {rotation}°"
    if not reason:
        packets, reason = _copy(path, name)
        if packets is not None:
            return Ingested(packets, "copy", "", codec, os.path.getsize(path))
    packets = _reencode(path, name, opts, rotation, progress, span)
    return Ingested(packets, "reencode", reason, codec, os.path.getsize(path))
