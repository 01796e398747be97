"""Cameras: image messages of one camera in one episode -> the bundle's H.264 access units.

* ``sensor_msgs/msg/Image``: the raw pixels (``transcode.RAW_FORMATS``: rgb8, bgr8, rgba8,
  bgra8, mono8, mono16, yuv422/uyvy, yuyv, bayer_* demosaiced bilinearly by libswscale)
  encoded to H.264;
* ``sensor_msgs/msg/CompressedImage`` (and ``foxglove_msgs/msg/CompressedImage``): JPEG or
  PNG, read from the ``format`` string the way ``compressed_image_transport`` writes it
  (``"jpeg"``, ``"png"``, ``"rgb8; jpeg compressed bgr8"``, ``"mono16; png compressed"``:
  the codec is the word jpeg/jpg/png in it; an empty or other string: the data's magic
  bytes), decoded and encoded to H.264; ``compressedDepth`` is a depth image, refused;
* ``foxglove_msgs/msg/CompressedVideo``: H.264 copied message for message when it conforms
  (``transcode.h264_conforms``), else decoded and re-encoded (also H.265, VP9, AV1). An
  episode cut between keyframes (H.264, H.265) is decoded from the keyframe before the cut
  (the *opening*: the bag's messages from that keyframe to the cut, decoded, not kept): its
  frames up to its first keyframe are re-encoded and the rest copied (H.264 that conforms),
  or the whole episode re-encoded; so the camera starts with the episode. Only where the bag
  holds no keyframe before the cut (it starts mid-GOP) are the frames before the episode's
  first keyframe dropped and reported.

Each frame is at its message's time (``timing.chosen``).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from judge.bundle.rosbag.mapping import RosbagError
from judge.bundle.streams import VideoPackets, is_idr
from judge.bundle.transcode import (
    EncodeOptions,
    FrameEncoder,
    PacketDecoder,
    h264_conforms,
    raw_frame,
)
from judge.errors import VideoError

IMAGE_TYPES = ("sensor_msgs/msg/Image", "sensor_msgs/msg/CompressedImage",
               "foxglove_msgs/msg/CompressedImage", "foxglove_msgs/msg/CompressedVideo")


def image_codec(fmt: str, data: bytes) -> str:
    """``"jpeg"`` or ``"png"`` for a compressed image's ``format`` string and bytes."""
    f = fmt.lower()
    if "compresseddepth" in f:
        raise VideoError(f"format {fmt!r} is a compressed depth image, not a camera")
    if "png" in f:
        return "png"
    if "jpeg" in f or "jpg" in f:
        return "jpeg"
    if data[:3] == b"\xff\xd8\xff":
        return "jpeg"
    if data[:8] == b"\x89PNG\r\n\x1a\n":
        return "png"
    raise VideoError(f"format {fmt!r}: expected jpeg or png (compressed_image_transport)")


@dataclass
class Track:
    """One camera's messages in one episode, converted as they arrive."""

    name: str
    topic: str
    msgtype: str
    rate_hz: float
    options: EncodeOptions | None = None
    t_ns: list[int] = field(default_factory=list)  # chosen times of the frames kept
    stamp_ns: list[int] = field(default_factory=list)  # their stamps (0: none)
    log_ns: list[int] = field(default_factory=list)  # their log times
    units: list[bytes] = field(default_factory=list)  # CompressedVideo access units
    codec: str = ""
    skipped: int = 0  # CompressedVideo frames before the episode's first keyframe, dropped
    opening: list[bytes] = field(default_factory=list)  # the GOP before the cut: decoded only
    _encoder: FrameEncoder | None = None
    _decoder: PacketDecoder | None = None

    def add(self, t_ns: int, stamp_ns: int, log_ns: int, msg,
            gop: list[bytes] | None = None) -> None:
        """Take one message; ``gop``: the bag's messages of this topic from the last
        keyframe before this one (None: no keyframe yet), the opening of a cut mid-GOP."""
        n = len(self.t_ns)
        try:
            self._add(t_ns, msg, gop)
        except VideoError as exc:
            raise RosbagError(f"{self.topic}: message {n + self.skipped}: {exc}") from None
        if len(self.t_ns) > n:
            self.stamp_ns.append(stamp_ns)
            self.log_ns.append(log_ns)

    def _add(self, t_ns: int, msg, gop: list[bytes] | None) -> None:
        if self.msgtype.endswith("CompressedVideo"):
            codec = str(msg.format).lower()
            if codec not in ("h264", "h265", "hevc", "vp9", "av1"):
                raise VideoError(f"CompressedVideo format {msg.format!r}; expected h264, "
                                 "h265, vp9 or av1")
            if self.codec and codec != self.codec:
                raise VideoError(f"format changed from {self.codec} to {codec}")
            self.codec = codec
            data = bytes(msg.data)
            if not self.units and keyframe(codec, data) is False:  # cut between keyframes
                if not gop:  # the bag holds no keyframe before it: undecodable, dropped
                    self.skipped += 1
                    return
                self.opening = list(gop)
            self.units.append(data)
            self.t_ns.append(t_ns)
            return
        if self._encoder is None:
            self._encoder = FrameEncoder(self.name, self.rate_hz, self.options)
        if self.msgtype == "sensor_msgs/msg/Image":
            self.codec = str(msg.encoding)
            frame = raw_frame(bytes(msg.data), self.codec, int(msg.width), int(msg.height),
                              int(msg.step), bool(msg.is_bigendian))
        else:
            data = bytes(msg.data)
            codec = image_codec(str(msg.format), data)
            if self._decoder is None or self._decoder.codec != codec:
                self._decoder = PacketDecoder(codec)
            self.codec = codec
            got = self._decoder.decode(data, len(self.t_ns)) or self._decoder.flush()
            if len(got) != 1:
                raise VideoError(f"{codec} image decodes to {len(got)} frames")
            frame = got[0]
            if codec == "png":  # the png decoder keeps no state between images
                self._decoder = None
        self._encoder.add(frame)
        self.t_ns.append(t_ns)

    def finish(self, t0_ns: int) -> tuple[VideoPackets, dict]:
        """The camera's access units (times from ``t0_ns``) and how they were made."""
        t = (np.array(self.t_ns, dtype=np.int64) - t0_ns) / 1e9
        how = {"topic": self.topic, "type": self.msgtype, "codec": self.codec,
               "frames": len(self.t_ns), "mode": "encode", "reason": ""}
        if self.skipped:
            how["skipped_before_keyframe"] = self.skipped
        try:
            if self._encoder is not None:
                return self._encoder.finish(t), how
            first = next((i for i, d in enumerate(self.units) if keyframe(self.codec, d)),
                         len(self.units))  # the episode's first keyframe (0 without opening)
            if self.opening:
                how["reencoded_before_keyframe"] = first
            tail = self.units[first:]
            why = (h264_conforms(tail) or "") if tail else "no keyframe in the episode"
            if self.codec != "h264":
                why = f"codec {self.codec}"
            if not why:
                how["mode"] = "copy"
                copied = VideoPackets(name=self.name, t=t[first:], data=tail,
                                      keyframe=np.array([is_idr(d) for d in tail]))
                return _joined(self._reencode(t[:first], first), copied) if first else \
                    copied, how
            how.update(mode="reencode", reason=why)
            return self._reencode(t, len(self.units)), how
        except VideoError as exc:
            raise RosbagError(f"{self.topic}: {exc}") from None

    def _reencode(self, t: np.ndarray, n: int) -> VideoPackets:
        """The first ``n`` frames (times ``t``) decoded, after the opening, and encoded."""
        decoder = PacketDecoder(self.codec)
        encoder = FrameEncoder(self.name, self.rate_hz, self.options)
        skip = len(self.opening)
        order: list[int] = []

        def take(frames: list) -> None:
            for f in frames:
                if int(f.pts) >= skip:  # the opening's frames are decoded, not kept
                    order.append(int(f.pts) - skip)
                    encoder.add(f)

        for i, d in enumerate([*self.opening, *self.units[:n]]):
            take(decoder.decode(d, i))
        take(decoder.flush())
        if sorted(order) != list(range(n)):
            raise VideoError(f"{self.codec}: {n} messages decoded to {len(order)} frames")
        return encoder.finish(t[np.array(order)])


def keyframe(codec: str, unit: bytes) -> bool | None:
    """Whether a CompressedVideo access unit is a keyframe: an H.264 IDR, an H.265 IRAP
    picture (NAL types 16-21); None for a codec whose keyframes are not read here."""
    if codec == "h264":
        return is_idr(unit)
    if codec in ("h265", "hevc"):
        return any(16 <= t <= 21 for t in _hevc_nal_types(unit))
    return None


def _hevc_nal_types(unit: bytes) -> list[int]:
    types = []
    i = unit.find(b"\x00\x00\x01")
    while i != -1 and i + 3 < len(unit):
        types.append((unit[i + 3] >> 1) & 0x3F)
        i = unit.find(b"\x00\x00\x01", i + 3)
    return types


def _joined(head: VideoPackets, tail: VideoPackets) -> VideoPackets:
    """A re-encoded opening followed by copied access units: one camera."""
    return VideoPackets(name=head.name, t=np.concatenate([head.t, tail.t]),
                        keyframe=np.concatenate([head.keyframe, tail.keyframe]),
                        data=[*head.data, *tail.data])
