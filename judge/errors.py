"""Errors of the judging pipeline, under the project root :class:`rcjudge.errors.RcjudgeError`.

Subclasses also inherit a built-in (``BundleError(JudgeError, ValueError)``). Every
message names the file/field, the bad value and what was expected, so a person can fix
the input without reading a traceback.
"""

from __future__ import annotations

from rcjudge.errors import InputError, RcjudgeError


class JudgeError(RcjudgeError):
    """Root of the errors of the judging pipeline (``judge/``)."""


class ConfigError(JudgeError, ValueError):
    """A config file under ``configs/`` is missing or invalid."""


class BundleError(JudgeError, InputError, ValueError):
    """A run bundle is unusable (manifest, files, MCAP, streams)."""


class ManifestError(BundleError):
    """``manifest.json`` is missing, unreadable or malformed."""


class NotABundleError(ManifestError):
    """The path is not a bundle folder: a file, or a folder without ``manifest.json``."""


class BundleFileError(BundleError):
    """A path a bundle names is no regular file inside the bundle's folder (a FIFO, a device,
    a symlink out of the folder): refused before it is opened."""


class HashMismatchError(BundleError):
    """A file's or the bundle's sha256 differs from the manifest."""


class AttributionError(BundleError):
    """One or more of the required attribution fields are missing or empty."""

    def __init__(self, missing: list[str], source: str = "request",
                 message: str | None = None) -> None:
        self.missing = list(missing)
        super().__init__(message or (
            f"{source}: missing {len(self.missing)} required attribution field(s): "
            + ", ".join(self.missing)))


class McapError(BundleError):
    """The MCAP file is truncated, corrupt or lacks a required channel."""


class ChannelError(McapError):
    """A required camera or signal channel is missing or malformed."""


class VideoError(BundleError):
    """A camera stream cannot be decoded as required (codec, keyframes, timestamps)."""


class FrameTimestampError(VideoError):
    """A requested frame timestamp could not be matched within tolerance."""


class SignalTableError(BundleError):
    """A signal table given to ``rcjudge bundle create`` lacks columns or rows."""
