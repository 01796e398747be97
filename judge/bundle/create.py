"""Create: build a bundle from ordinary recordings (three video files + a signal table).

This is how outside recordings enter the system. Each camera file goes through
:func:`judge.bundle.transcode.ingest_video` (packets copied when they already conform
to the bundle's H.264 profile, re-encoded otherwise) and is stored as
``foxglove.CompressedVideo`` messages; the signal table becomes ``/joint_states`` and
``/gripper``. Everything is written
to a temporary folder that is renamed into place only when complete.
:func:`assemble_bundle` is that last step on in-memory cameras and signals; the
physics generator (``judge.sim``) writes its bundles through it too.

Signal table (Parquet or CSV), one row per sample:

* ``time`` — seconds from the start of the recording (t = 0 of the videos too);
* ``<joint>.position``, ``<joint>.velocity``, ``<joint>.effort`` for every joint;
* ``gripper.width`` (m) and ``gripper.force`` (N).
"""

from __future__ import annotations

import json
import secrets
import shutil
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pacsv
import pyarrow.parquet as pq

from judge.bundle.decode import REQUIRED_CAMERAS
from judge.bundle.intake import ATTRIBUTION_FILE, MAX_ATTRIBUTION, validate_attribution
from judge.bundle.manifest import Manifest, write_manifest
from judge.bundle.streams import Signals, VideoPackets
from judge.bundle.transcode import EncodeOptions, Ingested, ingest_video
from judge.bundle.write import write_mcap
from judge.config import load_yaml, resolve_gripper
from judge.errors import BundleError, SignalTableError
from judge.tasks import check_task
from rcjudge import strict_json

MCAP_NAME = "rollout.mcap"
JOINT_FIELDS = ("position", "velocity", "effort")


_SNIFF = 64 * 1024  # bytes read to tell a text table from a binary file
_TEXT_CONTROLS = frozenset(b"\t\n\r\f")


def _binary_at(head: bytes) -> int | None:
    """The offset of the first byte no CSV text holds (a control character, or bytes that
    are not UTF-8), or None when ``head`` reads as text."""
    for i, byte in enumerate(head):
        if byte < 0x20 and byte not in _TEXT_CONTROLS:
            return i
    try:
        head.decode("utf-8")
    except UnicodeDecodeError as exc:
        if exc.reason != "unexpected end of data":  # a character cut by the sniff's end
            return exc.start
    return None


def _printable(text: str, limit: int = 200) -> str:
    """``text`` as printable ASCII on one line, at most ``limit`` characters: every other
    character becomes ``?`` (a parser's message may quote the file's bytes)."""
    out = "".join(c if " " <= c <= "~" else "?" for c in text)
    return out if len(out) <= limit else out[: limit - 3] + "..."


def read_signal_table(path: str | Path) -> Signals:
    """Read and check a Parquet/CSV signal table (columns in the module docstring)."""
    path = Path(path)
    try:
        with open(path, "rb") as f:
            head = f.read(_SNIFF)
        if path.suffix == ".parquet" or head.startswith(b"PAR1"):
            table = pq.read_table(path)
        else:
            binary = _binary_at(head)
            if binary is not None:
                raise SignalTableError(f"{path}: not a CSV text file (binary content at byte "
                                       f"{binary}); expected a CSV or Parquet (.parquet) "
                                       f"signal table")
            table = pacsv.read_csv(path)
    except FileNotFoundError:
        raise SignalTableError(f"{path}: file not found") from None
    except (pa.ArrowInvalid, OSError) as exc:
        raise SignalTableError(f"{path}: not a readable Parquet/CSV table: "
                               f"{_printable(str(exc))}") from None
    cols = table.column_names
    missing = [c for c in ("time", "gripper.width", "gripper.force") if c not in cols]
    joints = [c[: -len(".position")] for c in cols
              if c.endswith(".position") and not c.startswith("gripper.")]
    if not joints:
        missing.append("<joint>.position/.velocity/.effort (no joint columns)")
    missing += [f"{j}.{f}" for j in joints for f in JOINT_FIELDS if f"{j}.{f}" not in cols]
    if missing:
        raise SignalTableError(f"{path}: missing column(s): {', '.join(missing)}")
    if table.num_rows < 2:
        raise SignalTableError(f"{path}: needs at least 2 rows, has {table.num_rows}")

    def col(name: str) -> np.ndarray:
        c = table.column(name)
        if not pa.types.is_floating(c.type) and not pa.types.is_integer(c.type):
            raise SignalTableError(f"{path}: column {name!r} is {c.type}, expected numbers")
        if c.null_count or pc.any(pc.is_nan(pc.cast(c, pa.float64()))).as_py():
            arr = c.to_numpy(zero_copy_only=False).astype(np.float64)
            row = int(np.flatnonzero(np.isnan(arr))[0])
            raise SignalTableError(f"{path}: column {name!r} is empty or NaN at row {row + 1}")
        return c.to_numpy(zero_copy_only=False).astype(np.float64)

    t = col("time")
    bad = np.flatnonzero(np.diff(t) <= 0)
    if len(bad):
        raise SignalTableError(f"{path}: 'time' must strictly increase; row {bad[0] + 2} has "
                               f"{t[bad[0] + 1]} after {t[bad[0]]}")
    stack = {f: np.stack([col(f"{j}.{f}") for j in joints], axis=1) for f in JOINT_FIELDS}
    return Signals(t=t, joint_names=tuple(joints), position=stack["position"],
                   velocity=stack["velocity"], effort=stack["effort"], gripper_t=t,
                   gripper_width=col("gripper.width"), gripper_force=col("gripper.force"))


@dataclass(frozen=True)
class Created:
    """A bundle written by :func:`create_bundle`: its manifest and how each camera got in."""

    manifest: Manifest
    cameras: dict[str, Ingested]
    warnings: tuple[str, ...] = ()  # what may make its contacts wrong (fingers.gripper_warnings)

    def as_dict(self) -> dict:
        return {**self.manifest.model_dump(mode="json"),
                "cameras": {n: c.as_dict() for n, c in sorted(self.cameras.items())},
                "warnings": list(self.warnings)}


def gripper_record(gripper: str) -> dict[str, str]:
    """The ``rcjudge.gripper`` record for ``--gripper``: a profile name, or a YAML file of
    profile fields (``profile:`` plus overrides, or every field), checked now."""
    if gripper.endswith((".yaml", ".yml")):
        data = load_yaml(gripper)
        if not isinstance(data, dict):
            raise BundleError(f"--gripper {gripper}: expected a mapping of profile fields")
        record = {str(k): str(v) for k, v in data.items()}
    else:
        record = {"profile": gripper}
    resolve_gripper(record, f"--gripper {gripper}")
    return record


def create_bundle(videos: dict[str, str], signals: str, attribution: str, out: str,
                  start: str | None = None, encode: EncodeOptions | None = None,
                  progress: bool = False, gripper: str | None = None) -> Created:
    """Build a bundle folder ``out`` (must not exist); its manifest and camera report.

    Args:
        videos: camera name -> video file (any codec PyAV decodes); exactly three.
        signals: Parquet or CSV signal table.
        attribution: JSON file with the attribution fields.
        out: bundle folder to create.
        start: ISO-8601 wall-clock time of t = 0 (default: the Unix epoch).
        encode: keyframe interval, quality and speed of re-encodes.
        progress: progress bars on a terminal for long re-encodes.
        gripper: a gripper profile name (``configs/grippers.yaml``) or a YAML file of
            profile fields, recorded in the MCAP: the judge then reads ``gripper.force``
            as that gripper's effort.
    """
    out_path = Path(out)
    if out_path.exists():
        raise BundleError(f"{out}: already exists; bundles are never overwritten")
    if len(videos) != REQUIRED_CAMERAS:
        raise BundleError(f"--video: expected {REQUIRED_CAMERAS} cameras, got {len(videos)} "
                          f"({', '.join(sorted(videos)) or 'none'})")
    try:
        attr = strict_json.load_file(attribution, max_bytes=MAX_ATTRIBUTION)
    except FileNotFoundError:
        raise BundleError(f"{attribution}: file not found") from None
    except strict_json.StrictJsonError as exc:
        raise BundleError(f"{attribution}: {exc.described()}") from None
    validate_attribution(attr, attribution)
    check_task(attr["task"]["id"], attribution)  # before any video is read
    record = gripper_record(gripper) if gripper is not None else None
    table = read_signal_table(signals)
    start_ns = 0
    if start:
        try:
            start_ns = int(datetime.fromisoformat(start).timestamp() * 1e9)
        except ValueError:
            raise BundleError(f"--start {start!r}: expected an ISO-8601 time") from None
    ingested = {name: ingest_video(path, name, encode, progress)
                for name, path in sorted(videos.items())}
    manifest = assemble_bundle(out, [c.packets for c in ingested.values()], table, attr,
                               start_ns, source=attribution, gripper=record)
    from judge.bundle.fingers import gripper_warnings
    from judge.config import sampling_config

    settings = sampling_config()
    warnings = gripper_warnings(table, resolve_gripper(record) if record else None,
                                settings.contacts.force_on_n, settings.fingers)
    return Created(manifest, ingested, tuple(warnings))


def staging_folder(parent: Path, prefix: str) -> Path:
    """A new empty folder ``parent/<prefix><random>``, made with the process's umask.

    ``tempfile.mkdtemp`` makes its folders 0700 whatever the umask, and a bundle renamed
    from one kept that mode: other users and workers of a shared server could not read it.
    """
    parent.mkdir(parents=True, exist_ok=True)
    for _ in range(100):
        path = parent / f"{prefix}{secrets.token_hex(6)}"
        try:
            path.mkdir()  # mode 0777 less the umask
        except FileExistsError:
            continue
        return path
    raise FileExistsError(f"{parent}: no free name for a staging folder {prefix}…")


def assemble_bundle(out: str | Path, cameras: list[VideoPackets], signals: Signals,
                    attribution: dict, start_ns: int = 0,
                    unlisted: dict[str, bytes] | None = None,
                    source: str = ATTRIBUTION_FILE,
                    gripper: dict[str, str] | None = None) -> Manifest:
    """Write a bundle folder ``out`` (must not exist) from in-memory streams; its manifest.

    The MCAP, ``attribution.json`` and the manifest go to a temporary folder beside
    ``out`` that is renamed into place only when complete; folders and files get the
    process's umask (0755 and 0644 under umask 022).

    Args:
        out: bundle folder to create.
        cameras: exactly three cameras' H.264 Annex B access units (no B-frames).
        signals: joint and gripper streams, times in seconds from t = 0.
        attribution: the attribution fields (validated: all 11 required, and a task the
            catalog has, :func:`judge.tasks.check_task`).
        start_ns: wall-clock time of t = 0, nanoseconds since the epoch.
        unlisted: files written into the folder but not listed in the manifest (name ->
            bytes), e.g. a generator's ``truth.json``: never part of the bundle.
        source: how errors name the attribution.
        gripper: the ``rcjudge.gripper`` metadata record (profile name and/or fields).
    """
    out_path = Path(out)
    if out_path.exists():
        raise BundleError(f"{out}: already exists; bundles are never overwritten")
    if len(cameras) != REQUIRED_CAMERAS:
        raise BundleError(f"cameras: expected {REQUIRED_CAMERAS}, got {len(cameras)} "
                          f"({', '.join(c.name for c in cameras) or 'none'})")
    validate_attribution(attribution, source)
    check_task(attribution["task"]["id"], source)
    tmp = staging_folder(out_path.parent, f".{out_path.name}.")
    try:
        write_mcap(tmp / MCAP_NAME, cameras, signals, start_ns, gripper)
        (tmp / ATTRIBUTION_FILE).write_text(
            json.dumps(attribution, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
        for name, data in (unlisted or {}).items():
            (tmp / name).write_bytes(data)
        manifest = write_manifest(tmp, [ATTRIBUTION_FILE, MCAP_NAME])
        tmp.rename(out_path)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return manifest
