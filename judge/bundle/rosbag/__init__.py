"""ROS bags in: each episode of a ROS 2 (MCAP, SQLite) or ROS 1 bag becomes a bundle.

``rcjudge import rosbag BAG… --mapping FILE --out DIR [--episodes …]`` (``docs/rosbag.md``).
The stable entry points::

    import_bag(bag: str | Path | Sequence[str | Path], mapping_path: str | Path,
               out: str | Path, episodes: str | None = None, progress: bool | None = None,
               encode: EncodeOptions | None = None) -> list[dict]
    list_bag(bag: str | Path) -> dict

``import_bag`` writes one bundle per episode (``DIR/<bag>-ep<NNN>``; a split recording,
its parts given as a list, is one bag named without its part number) through
:func:`judge.bundle.create.assemble_bundle` and returns one summary per bundle written
(``episode``, ``bundle``, ``bundle_hash``, ``cut``, ``frames``, ``cameras``, ``channels``,
``notes``). ``list_bag`` returns the bag's storage, topics (type, count, rate) and a
starter mapping (``mapping_yaml``).

The flow: :mod:`.mapping` (the file, checked at entry) → :mod:`.bag` (open, storage,
types) → the episodes (a marker cut reads its marker topic first) → one pass over the
mapped topics (:mod:`.cameras`: frames encoded as they arrive) → :mod:`.signals` → every
episode checked → the bundles written to a staging folder in ``DIR`` and renamed into place only
when all of the bag's episodes are complete: a bad bag leaves nothing in ``DIR``.
"""

from __future__ import annotations

import gc
import json
import re
import shutil
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np

from judge.bundle.rosbag.bag import SPLIT_PART, Bag, field, open_bag, split_hint, stamp_ns
from judge.bundle.rosbag.cameras import IMAGE_TYPES, Track, keyframe
from judge.bundle.rosbag.mapping import Mapping, RosbagError, load_mapping
from judge.bundle.rosbag.signals import Series, build_signals
from judge.bundle.rosbag.timing import (
    check_order,
    chosen,
    joint_report,
    notes,
    period_s,
    report,
    seconds,
)
from judge.bundle.transcode import EncodeOptions
from judge.tasks import check_task

__all__ = ["RosbagError", "import_bag", "list_bag"]

JOINT_TYPE = "sensor_msgs/msg/JointState"
VIDEO_TYPE = "foxglove_msgs/msg/CompressedVideo"
MAX_OPENING = 1800  # messages kept from the last keyframe (60 s at 30 fps); beyond: none
WRENCH_TYPE = "geometry_msgs/msg/WrenchStamped"
STRING_TYPE = "std_msgs/msg/String"


def _ros1(msgtype: str) -> tuple[str, ...]:
    """A type as ROS 2 names it and as rosbags names a ROS 1 one (no ``/msg/``)."""
    return (msgtype, msgtype.replace("/msg/", "/"))


def _types(b: Bag, mapping: Mapping) -> dict[str, str]:
    """Topic -> type of every mapped topic, each checked against its role."""
    out = {}
    for name, topic in mapping.cameras.items():
        out[topic] = b.require(topic, f"camera {name}",
                               sum((_ros1(t) for t in IMAGE_TYPES), ()))
    out[mapping.joints.topic] = b.require(mapping.joints.topic, "joints", _ros1(JOINT_TYPE))
    for role, v in (("gripper.width", mapping.gripper.width),
                    ("gripper.effort", mapping.gripper.effort)):
        if v is not None:
            topic = v.topic or mapping.joints.topic
            out[topic] = b.require(topic, role, _ros1(JOINT_TYPE) if v.joints else None)
    if mapping.force is not None:
        out[mapping.force.topic] = b.require(mapping.force.topic, "force", _ros1(WRENCH_TYPE))
    if mapping.episodes.cut == "markers":
        out[str(mapping.episodes.topic)] = b.require(str(mapping.episodes.topic), "episodes")
    for name, src in mapping.attribution_from.items():
        if src.topic:
            out[src.topic] = b.require(src.topic, f"attribution {name}")
    return out


def _norm(msgtype: str) -> str:
    return msgtype if "/msg/" in msgtype else msgtype.replace("/", "/msg/", 1)


def _cuts(b: Bag, mapping: Mapping, markers: list[tuple[int, Any]]) -> list[tuple[int, int]]:
    """[start, stop) ns of every episode of the bag."""
    e = mapping.episodes
    if e.cut == "bag":
        return [(0, 2**63 - 1)]  # every message, whatever clock its stamp is on
    if e.cut == "ranges":
        return [(b.start_ns + round(a * 1e9), b.start_ns + round(z * 1e9))
                for a, z in e.ranges or []]
    cuts, open_at = [], None
    for ns, msg in markers:
        text = str(field(msg, e.field, f"{b.where}: topic {e.topic}"))
        where = f"{b.where}: topic {e.topic}: marker {text!r} at {(ns - b.start_ns) / 1e9:.3f} s"
        if text == e.start:
            if open_at is not None:
                raise RosbagError(f"{where}: an episode is already open (since "
                                  f"{(open_at - b.start_ns) / 1e9:.3f} s)")
            open_at = ns
        elif text == e.stop:
            if open_at is None:
                hint = split_hint(b.path) if len(b.paths) == 1 else ""
                raise RosbagError(f"{where}: no episode is open{hint}")
            cuts.append((open_at, ns))
            open_at = None
    if open_at is not None:
        cuts.append((open_at, b.end_ns + 1))
    if not cuts:
        raise RosbagError(f"{b.where}: topic {e.topic}: no {e.start!r} marker; no episode")
    return cuts


def _select(spec: str | None, n: int, bag: str) -> list[int]:
    """``--episodes "0,2-3"`` -> indices (each must exist); None -> all."""
    if not spec:
        return list(range(n))
    out: set[int] = set()
    for part in spec.split(","):
        m = re.fullmatch(r"\s*(\d+)\s*(?:-\s*(\d+)\s*)?", part)
        if not m:
            raise RosbagError(f"--episodes {spec!r}: expected e.g. 0,3-9")
        out.update(range(int(m[1]), int(m[2] or m[1]) + 1))
    if bad := sorted(i for i in out if i >= n):
        raise RosbagError(f"{bag}: --episodes {spec!r}: episode(s) {bad} not in the bag "
                          f"({n} episode(s), 0-{n - 1})")
    return sorted(out)


def _series(topic: str, rows: tuple[list[int], list[int], list[Any]]) -> Series:
    """A topic's (log times, stamps, messages) as a :class:`Series`."""
    log, stamp = (np.array(x, dtype=np.int64) for x in rows[:2])
    return Series(topic, chosen(stamp, log), stamp, log, rows[2])


def _cut(s: Series, a: int, z: int) -> Series:
    keep = (s.t_ns >= a) & (s.t_ns < z)
    idx = np.flatnonzero(keep)
    return Series(s.topic, s.t_ns[keep], s.stamp_ns[keep], s.log_ns[keep],
                  [s.msgs[i] for i in idx])


def _set(attr: dict, dotted: str, value: Any) -> None:
    *head, last = dotted.split(".")
    node = attr
    for k in head:
        node = node.setdefault(k, {})
    node[last] = value


@contextmanager
def _collector_paused() -> Iterator[None]:
    """CPython's cyclic garbage collector off while a bag is read, back on after.

    The read keeps every signal message it decodes (a 60 s bag at 100 Hz: ~70,000 objects)
    and creates no reference cycles; the collector would rescan the host process's whole
    heap each time enough of them pile up, so the read's cost would grow with whatever
    else the process holds (measured in ``bench.rosbag``'s process: 0.03 s of collection
    alone, 0.09 s after the other two bags). Nothing is freed later than it would be: the
    objects are all still in use when the collector is turned back on (the pattern
    Mercurial's ``util.nogc`` uses for its index parsing).
    """
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()


def check_mapping(mapping_path: str | Path) -> Mapping:
    """The mapping file, loaded, with its fixed ``task.id`` in the task catalog.

    Raises:
        RosbagError: a field of the file is wrong.
        BundleError: its ``task.id`` is not in the task catalog.
    """
    mapping = load_mapping(mapping_path)
    static_task = (mapping.attribution.get("task") or {}).get("id")
    if isinstance(static_task, str) and "task.id" not in mapping.attribution_from:
        check_task(static_task, str(mapping_path))
    return mapping


def import_bag(bag: str | Path | Sequence[str | Path], mapping_path: str | Path,
               out: str | Path, episodes: str | None = None, progress: bool | None = None,
               encode: EncodeOptions | None = None) -> list[dict]:
    """Write one bundle per (selected) episode of ``bag`` under ``out``; a summary each.

    ``bag`` is one bag, or the parts of one split recording (:func:`.bag.recordings`),
    read in time order as one. Every episode is read and checked before anything is
    written; the bundles then go to a staging folder in ``out`` and are renamed into place
    together. An existing bundle folder is never overwritten.
    """
    mapping = check_mapping(mapping_path)  # before the bag is read
    with open_bag(bag) as b, _collector_paused():
        episodes_data = _read(b, mapping, episodes, encode, bool(progress))
        custom = b.custom_data()
        storage, bag_start, bag_end = b.storage, b.start_ns, b.end_ns
        path, parts, where = b.path, b.paths, b.where
    m = SPLIT_PART.fullmatch(path.name) if len(parts) > 1 else None
    name = m["name"] if m else path.name.removesuffix(path.suffix) or path.name
    stem = re.sub(r"[^A-Za-z0-9_.-]+", "_", name)
    out_dir = Path(out)
    folders = {i: out_dir / f"{stem}-ep{i:03d}" for i, *_ in episodes_data}
    for f in folders.values():
        if f.exists():
            raise RosbagError(f"{f}: already exists; bundles are never overwritten")
    from judge.bundle.create import assemble_bundle, staging_folder

    staging = staging_folder(out_dir, f".{stem}.")
    results = []
    try:
        built = []
        for i, cut, t0, end, cams, hows, signals, extra, first_msgs in episodes_data:
            if mapping.episodes.cut == "bag":
                cut = (bag_start, bag_end)
            attr = json.loads(json.dumps(mapping.attribution))
            for name, src in mapping.attribution_from.items():
                if src.custom_data is not None:
                    if src.custom_data not in custom:
                        raise RosbagError(f"{where}: attribution {name}: metadata.yaml "
                                          f"custom_data has no key {src.custom_data!r} (has "
                                          f"{', '.join(sorted(custom)) or 'none'})")
                    _set(attr, name, custom[src.custom_data])
                else:
                    msg = first_msgs.get(str(src.topic))
                    if msg is None:
                        raise RosbagError(f"{where}: topic {src.topic}: no message in episode "
                                          f"{i} for attribution {name}")
                    _set(attr, name, field(msg, src.field, f"{where}: topic {src.topic}"))
            source = {"kind": "rosbag", "bag": str(path.resolve()), "storage": storage,
                      "topics": mapping.topics(), "episode": i,
                      "cut": {"mode": mapping.episodes.cut, "start_ns": cut[0],
                              "stop_ns": cut[1], "t0_ns": t0, "end_ns": end}}
            if len(parts) > 1:  # a split recording: every part, in time order
                source["parts"] = [str(p.resolve()) for p in parts]
            task = (attr.get("task") or {}).get("id") if isinstance(attr.get("task"),
                                                                    dict) else None
            if isinstance(task, str):
                check_task(task, f"{where}: episode {i}")
            env = attr.get("env") if isinstance(attr.get("env"), dict) else {}
            env["source"] = source
            attr["env"] = env
            manifest = assemble_bundle(staging / folders[i].name, cams, signals, attr, t0,
                                       source=str(mapping_path),
                                       gripper=mapping.gripper_record())
            built.append(i)
            results.append({"bag": where, "episode": i, "bundle": str(folders[i]),
                            "bundle_hash": manifest.bundle_hash, "cut": source["cut"],
                            "frames": {c.name: len(c.t) for c in cams}, "cameras": hows,
                            "channels": extra["channels"], "notes": extra["notes"]})
        for i in built:
            (staging / folders[i].name).rename(folders[i])
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return results


def _read(b: Bag, mapping: Mapping, episodes: str | None, encode: EncodeOptions | None,
          progress: bool) -> list[tuple]:
    """Every selected episode's cameras (encoded) and signal series, in one pass over the
    bag's mapped topics (two with a marker cut: the markers first)."""
    types = _types(b, mapping)
    cam_topics = set(mapping.cameras.values())
    marker = str(mapping.episodes.topic) if mapping.episodes.cut == "markers" else None
    # per signal topic: log times, stamps, messages (three lists: no tuple kept a message)
    rows: dict[str, tuple[list[int], list[int], list[Any]]] = {
        t: ([], [], []) for t in types if t not in cam_topics}
    if marker is not None:
        for _, ns, msg in b.messages([marker]):
            for column, value in zip(rows[marker], (ns, 0, msg), strict=True):
                column.append(value)
    marks = rows.get(str(marker), ([], [], []))
    cuts = _cuts(b, mapping, list(zip(marks[0], marks[2], strict=True)))
    chosen_eps = _select(episodes, len(cuts), b.where)
    counts = b.topics()
    span = (b.end_ns - b.start_ns) / 1e9
    tracks = {i: {name: Track(name, topic, _norm(types[topic]), (counts[topic].count - 1) / span
                              if counts[topic].count > 1 and span > 0 else 30.0, encode)
                  for name, topic in mapping.cameras.items()} for i in chosen_eps}
    by_topic = {t: n for n, t in mapping.cameras.items()}
    from rcjudge.progress import Progress

    rest = sorted(t for t in types if t != marker)
    bar = Progress(sum(counts[t].count for t in rest), enabled=progress, label=b.path.name)
    last: dict[str, tuple[int, int]] = {}
    step = bar.step
    # per camera topic, the tracks it feeds: (episode's [start, stop), track)
    feeds = {topic: [(cuts[i][0], cuts[i][1], tracks[i][name]) for i in chosen_eps]
             for topic, name in by_topic.items()}
    # per CompressedVideo topic: its messages since the last keyframe (None: none yet), so
    # an episode cut between keyframes decodes from the keyframe before the cut (a whole-bag
    # episode has nothing before it)
    gops: dict[str, list[bytes] | None] = {
        t: None for t in by_topic
        if _norm(types[t]) == VIDEO_TYPE and mapping.episodes.cut != "bag"}
    try:
        for topic, ns, msg in b.messages(rest):
            step()
            st = stamp_ns(msg)
            feed = feeds.get(topic)
            if feed is None:
                logs, stamps, msgs = rows[topic]
                logs.append(ns)
                stamps.append(st)
                msgs.append(msg)
                continue
            t = st or ns
            prev = last.get(topic)
            if prev is not None and t <= prev[0]:
                k = prev[1]
                raise RosbagError(f"{b.where}: topic {topic}: timestamps out of order: message "
                                  f"{k + 1} at {seconds(t)} s is not after message {k} at "
                                  f"{seconds(prev[0])} s")
            last[topic] = (t, 0 if prev is None else prev[1] + 1)
            gop = gops.get(topic)
            for a, z, track in feed:  # ranges may overlap: a frame can be in two episodes
                if a <= t < z:
                    track.add(t, st, ns, msg, gop)
            if topic in gops:
                gops[topic] = _gop(gop, bytes(msg.data), str(msg.format).lower())
    finally:
        bar.close()
    series = {t: _series(t, r) for t, r in rows.items()}
    for topic, s in series.items():  # JointState: per joint, in signals (partial messages)
        if _norm(types[topic]) != JOINT_TYPE:
            check_order(s.t_ns, f"{b.where}: topic {topic}")
    return [_episode(b, mapping, types, i, cuts[i], tracks[i], series) for i in chosen_eps]


def _joints(names: list[str]) -> str:
    """A set of joints as a note names it: ``a, b`` or ``first, …, last``."""
    return ", ".join(names) if len(names) <= 3 else f"{names[0]}, …, {names[-1]}"


def _gop(gop: list[bytes] | None, unit: bytes, codec: str) -> list[bytes] | None:
    """The messages since the last keyframe after ``unit``: a keyframe starts a new list;
    none is kept before the first keyframe, or past :data:`MAX_OPENING` messages."""
    if keyframe(codec, unit):
        return [unit]
    if gop is None or len(gop) >= MAX_OPENING:
        return None
    gop.append(unit)
    return gop


def _episode(b: Bag, mapping: Mapping, types: dict[str, str], i: int, cut: tuple[int, int],
             tracks: dict[str, Track], series: dict[str, Series]) -> tuple:
    where = f"{b.where}: episode {i}"
    for name, tr in tracks.items():
        if not tr.t_ns:
            span = "" if mapping.episodes.cut == "bag" else (
                f" ({(cut[0] - b.start_ns) / 1e9:.3f}-{(cut[1] - b.start_ns) / 1e9:.3f} s of "
                "the bag)")
            raise RosbagError(f"{b.where}: topic {tr.topic}: camera {name} has no frames in "
                              f"episode {i}{span}")
    ep = {t: _cut(s, *cut) for t, s in series.items()}
    signal_topics = list(dict.fromkeys(  # a topic read for two roles is reported once
        t for t in mapping.topics().values() if t in ep and t != mapping.episodes.topic))
    for t in signal_topics:
        if not len(ep[t].t_ns):
            raise RosbagError(f"{b.where}: topic {t}: no message in episode {i}")
    firsts = [tr.t_ns[0] for tr in tracks.values()] + [int(ep[t].t_ns[0]) for t in signal_topics]
    lasts = [tr.t_ns[-1] for tr in tracks.values()] + [int(ep[t].t_ns[-1]) for t in signal_topics]
    t0, end = min(firsts), max(lasts)
    signals, sig_notes = build_signals(mapping, ep, t0, where, series)
    cams, hows, channels, lines = [], {}, {}, list(sig_notes)
    for name in sorted(tracks):
        tr = tracks[name]
        vp, how = tr.finish(t0)
        cams.append(vp)
        hows[name] = how
        channels[tr.topic] = r = report(*(np.array(x, dtype=np.int64) for x in (
            tr.t_ns, tr.stamp_ns, tr.log_ns)), end, t0)
        lines += notes(tr.topic, r)
        if how.get("skipped_before_keyframe"):
            lines.append(f"{tr.topic}: {how['skipped_before_keyframe']} frame(s) before the "
                         "episode's first keyframe dropped")
        late = (tr.t_ns[0] - t0) / 1e9
        if late > period_s(np.array(tr.t_ns, dtype=np.int64)):  # more than a frame late
            lines.append(f"{tr.topic}: starts {late:.3f} s after the episode's first message: "
                         "judging samples only the span every camera covers")
    for t in signal_topics:
        s = ep[t]
        if _norm(types[t]) == JOINT_TYPE:
            channels[t] = r = joint_report([tuple(m.name) for m in s.msgs], s.t_ns,
                                           s.stamp_ns, s.log_ns, end, t0)
            for g in r.get("groups", []):  # partial messages: each set of joints on its own
                lines += notes(f"{t} ({_joints(g['joints'])})", g)
            if "groups" in r:
                continue
        else:
            channels[t] = r = report(s.t_ns, s.stamp_ns, s.log_ns, end, t0)
        lines += notes(t, r)
    e = mapping.episodes
    if e.cut == "markers" and cut[1] == b.end_ns + 1:  # a start without its stop
        hint = split_hint(b.path) if len(b.paths) == 1 else ""
        lines.append(f"{e.topic}: no {e.stop!r} marker after the episode's {e.start!r}: it "
                     f"runs to the bag's end{hint}")
    first_msgs = {t: s.msgs[0] for t, s in ep.items() if s.msgs}
    return (i, cut, t0, end, cams, hows, signals, {"channels": channels, "notes": lines},
            first_msgs)


def list_bag(bag: str | Path) -> dict:
    """The bag's storage, topics (type, count, rate over its first to last message) and a
    starter mapping (``mapping_yaml``) to edit."""
    path = Path(bag)
    with open_bag(path) as b:
        topics = b.topics()
        first: dict[str, int] = {}
        lastt: dict[str, int] = {}
        for topic, ns, _ in b.raw():
            first.setdefault(topic, ns)
            lastt[topic] = ns
        rows = []
        for name, tp in topics.items():
            span = (lastt.get(name, 0) - first.get(name, 0)) / 1e9
            rows.append({"topic": name, "type": _norm(tp.msgtype), "count": tp.count,
                         "rate_hz": round((tp.count - 1) / span, 2) if span > 0 else 0.0})
        joints = next((t["topic"] for t in rows if t["type"] == JOINT_TYPE), None)
        names: list[str] = []
        if joints is not None:  # the joint names of its first messages, for the starter
            for k, (_, _, msg) in enumerate(b.messages([joints])):
                names += [str(n) for n in msg.name if str(n) not in names]
                if k >= 20:
                    break
        result = {"bag": str(path), "storage": b.storage,
                  "duration_s": round((b.end_ns - b.start_ns) / 1e9, 3), "topics": rows,
                  "joint_names": names, "custom_data": b.custom_data()}
    from judge.bundle.rosbag.starter import starter

    result["mapping_yaml"] = starter(rows, names, result["custom_data"])
    return result

