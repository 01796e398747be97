"""Bag: open a ROS 2 (MCAP or SQLite) or ROS 1 bag with ``rosbags`` and read its messages.

The entry of a bag into rcjudge: the storage is recognised here (a ROS 2 bag folder with
``metadata.yaml``, a lone ``.mcap``, a ROS 1 ``.bag``), and every error reading it is one
:class:`~judge.bundle.rosbag.mapping.RosbagError` line naming the bag (and the topic where
one is known). A recording split in several files (``rosbag record --split``:
``<name>_0.bag``, ``<name>_1.bag``, …) is one bag of several parts (:func:`recordings`),
read in time order as one. Message definitions come from the bag itself where it carries them (MCAP,
ROS 1, SQLite from Iron on); a SQLite bag without them is read with the ``rosbags`` store
of the latest ROS 2 release.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from itertools import pairwise
from pathlib import Path
from typing import Any

from judge.bundle.boundary import reading
from judge.bundle.rosbag.cdr import decoder
from judge.bundle.rosbag.mapping import RosbagError


@dataclass(frozen=True)
class Topic:
    """One topic of a bag, as ``--list`` shows it."""

    name: str
    msgtype: str
    count: int


def storage_of(path: Path) -> str:
    """``"mcap"``, ``"sqlite3"`` (ROS 2) or ``"ros1"``; a path that is none of them refused."""
    if path.is_dir():
        meta = path / "metadata.yaml"
        if not meta.is_file():
            found = sorted(p.name for p in path.iterdir() if p.suffix in (".db3", ".mcap"))
            raise RosbagError(f"{path}: a ROS 2 bag folder needs its metadata.yaml (found "
                              f"{', '.join(found) or 'no .db3/.mcap file'})")
        text = meta.read_text(encoding="utf-8", errors="replace")
        return "sqlite3" if "storage_identifier: sqlite3" in text else "mcap"
    if not path.exists():
        raise RosbagError(f"{path}: no such bag (expected a ROS 2 bag folder, a .mcap or a "
                          ".bag file)")
    if path.suffix == ".mcap":
        return "mcap"
    if path.suffix == ".bag":
        return "ros1"
    if path.suffix == ".db3":
        raise RosbagError(f"{path}: a SQLite bag is read from its folder, with the folder's "
                          "metadata.yaml; give the folder")
    raise RosbagError(f"{path}: not a bag (expected a ROS 2 bag folder with metadata.yaml, "
                      "a .mcap or a ROS 1 .bag)")


#: A part of a split recording: ``<name>_<N>.bag`` (ROS 1) or ``<name>_<N>.mcap``.
SPLIT_PART = re.compile(r"(?P<name>.+)_(?P<n>\d+)(?P<suffix>\.bag|\.mcap)")


def recordings(bags: Sequence[str | Path]) -> list[list[Path]]:
    """The bags given together, as recordings: the parts of a split recording (files
    ``<name>_<N>.bag`` or ``<name>_<N>.mcap`` of one folder and name, as ``rosbag record
    --split`` writes them) are one recording; any other bag is its own. In the order given
    (a recording where its first part is)."""
    groups: dict[tuple, list[Path]] = {}
    for bag in bags:
        path = Path(bag)
        m = SPLIT_PART.fullmatch(path.name)
        key = (str(path.parent), m["name"], m["suffix"]) if m and path.is_file() else (
            str(path),)
        if path not in groups.setdefault(key, []):
            groups[key].append(path)
    return list(groups.values())


def split_hint(path: Path) -> str:
    """`` (… looks like part N of a split recording: …)`` for a lone part, else ``""``."""
    m = SPLIT_PART.fullmatch(path.name)
    return (f" ({path.name} looks like part {int(m['n'])} of a split recording: give all its "
            "parts together)") if m else ""


class Bag:
    """An open bag (one file or folder, or the parts of a split recording in time order):
    its topics, types, custom data, and decoded messages by topic."""

    def __init__(self, paths: list[Path], reader: Any, storage: str) -> None:
        self.paths = paths
        self.path = paths[0]
        self.where = ", ".join(str(p) for p in paths)  # how errors name it
        self.storage = storage
        self._reader = reader
        self._types = reader.typestore.fielddefs

    @property
    def start_ns(self) -> int:
        return int(self._reader.start_time)

    @property
    def end_ns(self) -> int:
        return int(self._reader.end_time)

    def topics(self) -> dict[str, Topic]:
        """Topic name -> its type and message count."""
        return {name: Topic(name, str(info.msgtype), int(info.msgcount))
                for name, info in sorted(self._reader.topics.items())}

    def custom_data(self) -> dict[str, str]:
        """``metadata.yaml``'s ``custom_data`` (a ROS 2 bag folder; empty otherwise)."""
        out: dict[str, str] = {}
        for r in self._reader.readers:
            meta = getattr(getattr(r, "storage", None), "metadata", None)
            out.update(getattr(meta, "custom", None) or {})
        return out

    def require(self, topic: str, role: str, types: tuple[str, ...] | None = None) -> str:
        """The type of a mapped ``topic`` (checked against ``types``); refused if missing."""
        topics = self.topics()
        if topic not in topics:
            raise RosbagError(f"{self.where}: topic {topic} ({role}) is not in the bag; it has "
                              f"{', '.join(topics) or 'no topics'}")
        msgtype = topics[topic].msgtype
        if msgtype not in self._types:
            raise RosbagError(f"{self.where}: topic {topic}: unknown message type {msgtype} (the"
                              " bag carries no definition of it and rosbags' store has none)")
        if types is not None and msgtype not in types:
            raise RosbagError(f"{self.where}: topic {topic} ({role}) is {msgtype}; expected "
                              f"{' or '.join(types)}")
        return msgtype

    def raw(self, topics: list[str] | None = None) -> Iterator[tuple[str, int, bytes]]:
        """(topic, log time ns, serialized bytes) in log-time order."""
        conns = [c for c in self._reader.connections if topics is None or c.topic in topics]
        with reading(self.where, RosbagError):
            for conn, ns, data in self._reader.messages(connections=conns):
                yield conn.topic, int(ns), data

    def messages(self, topics: list[str]) -> Iterator[tuple[str, int, Any]]:
        """(topic, log time ns, decoded message) of ``topics`` in log-time order.

        Each message is decoded once, by ``rosbags``, or for a standard ROS 2 JointState,
        WrenchStamped or CompressedVideo by :mod:`.cdr` (the same objects, faster).
        """
        conns = [c for c in self._reader.connections if c.topic in topics]
        decoders = {id(c): self._decoder(c.msgtype) for c in conns}
        with reading(self.where, RosbagError):
            for conn, ns, data in self._reader.messages(connections=conns):
                yield conn.topic, int(ns), decoders[id(conn)](data)

    def _decoder(self, msgtype: str) -> Callable[[Any], Any]:
        def plain(data: Any) -> Any:
            return self._reader.deserialize(data, msgtype)

        fast = decoder(self._reader.typestore, msgtype, plain) if self._reader.is2 else None
        return fast or plain


@contextmanager
def open_bag(bag: str | Path | Sequence[str | Path]) -> Iterator[Bag]:
    """Open ``bag`` (or the parts of one split recording) for reading; any error reading it
    leaves as one :class:`RosbagError`. Parts are read in the order of their first message
    and must follow one another in time."""
    from rosbags.highlevel import AnyReader
    from rosbags.typesys import Stores, get_typestore

    paths = [Path(bag)] if isinstance(bag, str | Path) else [Path(b) for b in bag]
    storages = {storage_of(p) for p in paths}
    where = ", ".join(str(p) for p in paths)
    if len(paths) > 1 and (storages - {"ros1", "mcap"} or len(storages) > 1
                           or any(p.is_dir() for p in paths)):
        raise RosbagError(f"{where}: the parts of a split recording are ROS 1 .bag files or "
                          "lone .mcap files, all of one kind")
    storage = storages.pop()
    # MCAP and ROS 1 bags carry their definitions; SQLite before Iron does not. Loading a
    # store costs ~0.5 s, so only SQLite bags get one.
    store = get_typestore(Stores.LATEST) if storage == "sqlite3" else None
    with reading(where, RosbagError, f"not a readable {storage} bag ({{}})"):
        reader = AnyReader(paths, default_typestore=store)
        reader.open()
    try:
        yield Bag(_in_time_order(paths, reader), reader, storage)
    finally:
        reader.close()


def _in_time_order(paths: list[Path], reader: Any) -> list[Path]:
    """The parts by their first message; refused when one starts before the previous ends."""
    if len(paths) < 2:
        return paths
    spans = sorted(((int(r.start_time), int(r.end_time), p)
                    for p, r in zip(paths, reader.readers, strict=True)),
                   key=lambda s: (s[0], str(s[2])))
    t0 = spans[0][0]
    for (_, end, prev), (start, _, part) in pairwise(spans):
        if start < end - 1:  # end_time: just after the last message
            raise RosbagError(f"{', '.join(str(p) for p in paths)}: split parts overlap in "
                              f"time ({part.name} starts at {(start - t0) / 1e9:.3f} s, before "
                              f"{prev.name} ends at {(end - 1 - t0) / 1e9:.3f} s): not one "
                              "recording")
    return [p for _, _, p in spans]


def field(msg: Any, path: str, where: str) -> Any:
    """``msg``'s value at the dotted ``path`` (``"data"``, ``"state.width"``)."""
    value = msg
    for part in path.split("."):
        if not hasattr(value, part):
            raise RosbagError(f"{where}: message {type(msg).__name__} has no field {path!r}")
        value = getattr(value, part)
    return value


def stamp_ns(msg: Any) -> int:
    """A message's own time: ``header.stamp``, or ``timestamp`` (foxglove_msgs); 0 if none."""
    t = getattr(getattr(msg, "header", None), "stamp", None) or getattr(msg, "timestamp", None)
    if t is None:
        return 0
    return int(t.sec) * 1_000_000_000 + int(t.nanosec)
