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

:func:`encode_frames` encodes rendered frames to the same profile (the synthetic and
physics generators, ``bench.synth`` and ``judge.sim``, write their cameras with it).

Imports ``av``, like ``decode`` (the two modules that touch pixels or packets).
"""

from __future__ import annotations

import os
from collections.abc import Iterable
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


# --- Frames and access units that arrive one message at a time (``import rosbag``) ----------

#: ROS ``sensor_msgs/Image`` encodings -> (PyAV pixel format, channels, dtype). ``yuv422``
#: is UYVY in ROS (``sensor_msgs/image_encodings.hpp``); PyAV reads YUYV only, so UYVY's
#: byte pairs are swapped. Bayer mosaics are demosaiced by libswscale (bilinear) to RGB
#: first, then converted like any RGB frame.
RAW_FORMATS: dict[str, tuple[str, int, str]] = {
    "rgb8": ("rgb24", 3, "u1"), "bgr8": ("bgr24", 3, "u1"),
    "rgba8": ("rgba", 4, "u1"), "bgra8": ("bgra", 4, "u1"),
    "mono8": ("gray", 1, "u1"), "8UC1": ("gray", 1, "u1"),
    "mono16": ("gray16", 1, "u2"), "16UC1": ("gray16", 1, "u2"),
    "yuv422": ("uyvy422", 2, "u1"), "uyvy": ("uyvy422", 2, "u1"),
    "yuv422_yuy2": ("yuyv422", 2, "u1"), "yuyv": ("yuyv422", 2, "u1"),
    **{f"bayer_{p}8": (f"bayer_{p}8", 1, "u1") for p in ("rggb", "bggr", "gbrg", "grbg")},
    **{f"bayer_{p}16": (f"bayer_{p}16", 1, "u2") for p in ("rggb", "bggr", "gbrg", "grbg")},
}


def raw_frame(data: bytes, encoding: str, width: int, height: int, step: int,
              big_endian: bool) -> av.VideoFrame:
    """A raw ``sensor_msgs/Image`` buffer as a frame (rows cut to ``step``).

    Raises:
        VideoError: an encoding not in :data:`RAW_FORMATS`, or a buffer too short.
    """
    if encoding not in RAW_FORMATS:
        raise VideoError(f"image encoding {encoding!r} is not a camera encoding; expected one "
                         f"of {', '.join(RAW_FORMATS)}")
    fmt, ch, dt = RAW_FORMATS[encoding]
    size = np.dtype(dt).itemsize
    if step < width * ch * size or len(data) < step * height:
        raise VideoError(f"image {width}x{height} {encoding}: {len(data)} bytes with step "
                         f"{step}; expected at least {width * ch * size * height}")
    rows = np.frombuffer(data, np.uint8, step * height).reshape(height, step)
    px = rows[:, : width * ch * size]  # (H, W*ch*size) uint8
    if size == 2:
        px = px.view(">u2" if big_endian else "<u2").astype(np.uint16)  # (H, W*ch) uint16
        fmt += "le"  # now native little-endian
    shape = (height, width, ch) if ch > 1 else (height, width)
    arr = np.ascontiguousarray(px.reshape(shape))
    if fmt == "uyvy422":
        arr, fmt = np.ascontiguousarray(arr[..., ::-1]), "yuyv422"
    frame = av.VideoFrame.from_ndarray(arr, format=fmt)
    if fmt.startswith("bayer"):  # libswscale's bayer -> yuv420p path is off by ~30 levels
        frame = frame.reformat(format="rgb24")  # on saturated colours; via RGB it is exact
    return frame


#: Codecs of a ``foxglove_msgs/CompressedVideo`` ``format`` and of compressed images ->
#: PyAV decoder names.
DECODERS = {"h264": "h264", "h265": "hevc", "hevc": "hevc", "vp9": "vp9", "av1": "libdav1d",
            "jpeg": "mjpeg", "png": "png"}


class PacketDecoder:
    """Decodes one camera's packets (compressed images or video access units) in order."""

    def __init__(self, codec: str) -> None:
        self.codec = codec
        self._ctx = av.CodecContext.create(DECODERS[codec], "r")

    def decode(self, data: bytes, index: int) -> list[av.VideoFrame]:
        """Frames the decoder returns for ``data``; each frame's ``pts`` is its packet's index."""
        packet = av.Packet(data)
        packet.pts = packet.dts = index
        try:
            return list(self._ctx.decode(packet))
        except av.FFmpegError as exc:
            raise VideoError(f"{self.codec} packet {index} does not decode ({exc})") from None

    def flush(self) -> list[av.VideoFrame]:
        try:
            return list(self._ctx.decode(None))
        except av.FFmpegError as exc:
            raise VideoError(f"{self.codec}: flushing the decoder failed ({exc})") from None


class FrameEncoder:
    """Encodes frames given one at a time to the bundle's H.264 profile (as ``_reencode``).

    The frames' times are the caller's (message stamps); the encoder's own ``pts`` is the
    frame index at the nominal ``rate_hz``, used only for rate control.
    """

    def __init__(self, name: str, rate_hz: float, options: EncodeOptions | None = None) -> None:
        self.name = name
        self.opts = options or EncodeOptions()
        self.rate = Fraction(max(1, round(rate_hz)), 1)
        self.gop = max(1, round(self.opts.keyframe_s * float(self.rate)))
        self._ctx = None
        self._size: tuple[int, int] | None = None
        self.packets: list[bytes] = []
        self.count = 0

    def add(self, frame: av.VideoFrame) -> None:
        up = _upright(frame, 0)
        if self._ctx is None:
            self._size = (up.width, up.height)
            self._ctx = _encoder(up.width, up.height, 1 / self.rate, self.rate, self.gop,
                                 self.opts)
        elif (up.width, up.height) != self._size:
            raise VideoError(f"camera {self.name}: frame {self.count} is {up.width}x{up.height}"
                             f", the first was {self._size[0]}x{self._size[1]}")
        up.pts, up.time_base = self.count, 1 / self.rate
        up.pict_type = PictureType.NONE
        self.packets.extend(bytes(p) for p in self._ctx.encode(up))
        self.count += 1

    def finish(self, t: np.ndarray) -> VideoPackets:
        """The access units, at times ``t`` (s, one per frame added)."""
        if self._ctx is not None:
            self.packets.extend(bytes(p) for p in self._ctx.encode(None))
        if len(self.packets) != self.count or len(t) != self.count:
            raise VideoError(f"camera {self.name}: encoder returned {len(self.packets)} packets "
                             f"for {self.count} frames ({len(t)} times)")
        return VideoPackets(name=self.name, t=np.asarray(t, dtype=np.float64),
                            keyframe=np.array([is_idr(d) for d in self.packets], dtype=bool),
                            data=self.packets)


def _slice_types(access_unit: bytes) -> list[int]:
    """slice_type (mod 5: 0 P, 1 B, 2 I) of each slice NAL (types 1, 5) of an Annex B unit.

    Reads the first two ue(v) fields of the slice header (first_mb_in_slice, slice_type)
    from the 8 bytes after the NAL header, as one integer; a header cut short is skipped.
    """
    out = []
    i = access_unit.find(b"\x00\x00\x01")
    while i != -1 and i + 4 < len(access_unit):
        if access_unit[i + 3] & 0x1F in (1, 5):
            raw = access_unit[i + 4: i + 12].replace(b"\x00\x00\x03", b"\x00\x00")
            bits, width, pos = int.from_bytes(raw, "big"), 8 * len(raw), 0
            value = 0
            for _ in range(2):  # ue(v): n zeros, a one, n bits; value = that 1 + n bits - 1
                zeros = width - pos - (bits & ((1 << (width - pos)) - 1)).bit_length()
                pos += 2 * zeros + 1
                if pos > width:
                    break
                value = ((bits >> (width - pos)) & ((1 << (zeros + 1)) - 1)) - 1
            else:
                out.append(value % 5)
        i = access_unit.find(b"\x00\x00\x01", i + 3)
    return out


def h264_conforms(units: list[bytes]) -> str:
    """Why H.264 access units (one per message) cannot be copied into a bundle; "" if they can.

    Annex B, the first unit an IDR with SPS/PPS, every IDR with SPS/PPS, no B slices, and the
    first picture 8-bit 4:2:0 in limited range (decoded alone).
    """
    if not units:
        return "no frames"
    for i, d in enumerate(units):
        if not d.startswith((b"\x00\x00\x01", b"\x00\x00\x00\x01")):
            return f"frame {i} is not Annex B"
        types = nal_types(d)
        if 5 in types and not {7, 8} <= set(types):
            return f"keyframe {i} lacks SPS/PPS"
        if i == 0 and 5 not in types:
            return "the first frame is not an IDR keyframe"
        if 1 in _slice_types(d):
            return f"frame {i} has B slices"
    decoder = PacketDecoder("h264")
    frames = decoder.decode(units[0], 0) or decoder.flush()
    if frames and frames[0].format.name != "yuv420p":
        return f"pixel format {frames[0].format.name}"
    if frames and frames[0].color_range == ColorRange.JPEG:
        return "full colour range"
    return ""


def encode_frames(frames: Iterable[np.ndarray], width: int, height: int, fps: int, gop: int,
                  name: str) -> VideoPackets:
    """RGB frames (each (H, W, 3) uint8) encoded as camera ``name`` of a bundle: H.264 Annex B,
    every keyframe with SPS/PPS, no B-frames (bundle format v1), a keyframe every ``gop``
    frames, frame ``i`` at ``i / fps`` s. What the synthetic and physics generators write.

    ``frames`` is consumed lazily, so long rollouts never sit in memory as pixels.
    """
    h, w = height, width
    ctx = av.CodecContext.create("libx264", "w")
    ctx.width, ctx.height, ctx.pix_fmt = w, h, "yuv420p"
    ctx.time_base = Fraction(1, fps)
    ctx.framerate = Fraction(fps, 1)
    ctx.gop_size, ctx.max_b_frames = gop, 0
    ctx.options = {"preset": "veryfast", "tune": "zerolatency", "threads": "1",
                   "x264-params": f"repeat-headers=1:keyint={gop}:min-keyint={gop}"
                                  ":scenecut=0:bframes=0"}
    packets = []
    n = 0
    for i, img in enumerate(frames):
        n += 1
        vf = av.VideoFrame.from_ndarray(img, format="rgb24")
        vf.pts = i
        packets.extend(ctx.encode(vf))
    packets.extend(ctx.encode(None))
    data = [bytes(p) for p in packets]
    pts = np.array([p.pts for p in packets], dtype=np.int64)
    if len(data) != n or np.any(np.diff(pts) <= 0):
        raise RuntimeError(f"camera {name}: encoder returned {len(data)} packets out of order")
    return VideoPackets(name=name, t=pts / fps, keyframe=np.array([is_idr(d) for d in data]),
                        data=data)
