"""Bags into a batch: ``rcjudge batch BAGS --mapping FILE`` imports each ROS bag, then judges.

A prepare actor imports a bag (:func:`import_cached`, wrapping
:func:`judge.bundle.rosbag.import_bag`) into the bag cache, ``--bundles-dir`` (default
``<RCJUDGE_HOME>/bag-bundles``); its bundles then go through the batch like any others.
The cache is keyed by the bag's content and the mapping's: ``<cache>/<key>/`` holds the
bag's bundles and ``import.json`` (what the import said), written under a temporary name
and renamed into place when complete, so a folder there is always a whole import. A re-run
converts nothing it converted before, and it does not even hash the bag again while the
bag's files keep their sizes and modification times (``<cache>/index/``, a memo from the
bag's path to its key): the driver finds such a bag's bundles before Ray starts, and a
bag whose bundles are all judged is skipped like a judged bundle.

A bag that cannot be imported is one failure record (its path, ``RosbagError``, the line
naming bag, topic and problem); the batch goes on and exits 1.
"""

from __future__ import annotations

import hashlib
import json
import os
import posixpath
import shutil
from collections import deque
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from judge.batch.sources import SourceError
from judge.errors import JudgeError

#: Part of every cache key: bumped when the importer writes different bundles from the
#: same bag and mapping, so an old cache entry is not taken for a new one.
IMPORT_FORMAT = "rcjudge-rosbag-import 1"
BAG_SUFFIXES = (".mcap", ".bag")


@dataclass(frozen=True)
class BagImport:
    """What a prepare actor needs to import a bag: the mapping (by content) and the cache."""

    mapping: str  # the mapping file's copy in the cache, named by its content
    mapping_sha: str
    cache: str


@dataclass
class BagsToImport:
    """The driver's bags: those still to import, how, and what became of them."""

    how: BagImport
    judged: set[str]  # bundle hashes this judge version already judged
    todo: deque[str] = field(default_factory=deque)
    stats: dict[str, Any] = field(default_factory=lambda: {
        "bags": 0, "imported": 0, "cached": 0, "failed": 0, "bundles": 0})

    def not_judged(self, bundles: list[str]) -> list[str]:
        """Those of ``bundles`` whose (claimed) bundle hash is not judged yet."""
        from judge.bundle.manifest import claimed_bundle_hash

        return [b for b in bundles if claimed_bundle_hash(b) not in self.judged]


def sort_bags(bags: list[str], how: BagImport, judged: set[str]) -> tuple[list[str],
                                                                         BagsToImport]:
    """(the bundles of bags the cache already holds, the bags still to import), before Ray
    starts: a re-run neither hashes nor converts a bag it imported before."""
    found: list[str] = []
    rest = BagsToImport(how, judged)
    rest.stats.update(bags=len(bags), bundles_dir=how.cache)
    for bag in bags:
        bundles = cached_bundles(bag, how)
        if bundles is None:
            rest.todo.append(bag)
        else:
            rest.stats["cached"] += 1
            rest.stats["bundles"] += len(bundles)
            found += bundles
    return found, rest


def bag_cache(root: str | Path, mapping_path: str | Path) -> BagImport:
    """The cache at ``root`` with a content-named copy of the (already checked) mapping."""
    root = Path(root).expanduser().absolute()
    data = Path(mapping_path).read_bytes()
    sha = hashlib.sha256(data).hexdigest()
    copy = root / "mappings" / f"{sha[:32]}.yaml"
    if not copy.is_file():
        try:
            copy.parent.mkdir(parents=True, exist_ok=True)
            tmp = copy.with_name(f".{copy.name}.{os.getpid()}.part")
            tmp.write_bytes(data)
            os.replace(tmp, copy)
        except OSError as exc:
            raise JudgeError(f"--bundles-dir {root}: cannot be written: "
                             f"{exc.strerror or exc}") from None
    return BagImport(str(copy), sha, str(root))


def resolve_bags(source: str) -> list[str]:
    """Bags, sorted, absolute, from a bag (a ROS 2 bag folder, a ``.mcap``, a ROS 1 ``.bag``),
    a folder of bags or a list file (``.txt``/``.list``, one path a line, ``#`` comments; a
    relative one is relative to the list file's folder).

    Every entry of a folder of bags is returned, bag or not, except hidden ones: the import
    refuses an entry that is not a bag, so the batch records it instead of dropping it.

    Raises:
        SourceError: the source names nothing, or a folder holds no bag at all.
    """
    path = Path(source).expanduser().absolute()  # the workers' folder is not the driver's
    if path.is_file() and path.suffix in (".txt", ".list"):
        lines = [ln.strip() for ln in path.read_text(encoding="utf-8").splitlines()]
        found = [ln for ln in lines if ln and not ln.startswith("#")]
        if not found:
            raise SourceError(f"{source}: the list file names no bag")
        return [str(p if Path(p).is_absolute() else path.parent / p) for p in found]
    if is_bag(path):
        return [str(path)]
    if not path.is_dir():
        raise SourceError(f"{source}: no such bag, folder of bags or list file")
    found = sorted(p for p in path.iterdir() if not p.name.startswith("."))
    if not any(is_bag(p) for p in found):
        names = [p.name for p in found]
        raise SourceError(f"{source}: no bag (a ROS 2 bag folder with metadata.yaml, a .mcap "
                          "or a .bag) found" + (f"; not bags: {', '.join(names[:10])}"
                                                f"{', …' if len(names) > 10 else ''}"
                                                if names else ""))
    return [str(p) for p in found]


def is_bag(path: Path) -> bool:
    return ((path.is_dir() and (path / "metadata.yaml").is_file())
            or (path.is_file() and path.suffix in BAG_SUFFIXES))


def _files(bag: Path) -> list[Path]:
    return sorted(p for p in bag.rglob("*") if p.is_file()) if bag.is_dir() else [bag]


def _stat(bag: Path) -> list[list]:
    """What says a bag's files are as they were: relative name, size, mtime (ns)."""
    return [[str(p.relative_to(bag)) if bag.is_dir() else p.name, p.stat().st_size,
             p.stat().st_mtime_ns] for p in _files(bag)]


def bag_hash(bag: Path) -> str:
    """sha256 over the bag's files: each one's relative name, size and bytes, in order."""
    h = hashlib.sha256()
    for p in _files(bag):
        name = str(p.relative_to(bag)) if bag.is_dir() else ""
        h.update(f"{name}\0{p.stat().st_size}\0".encode())
        with open(p, "rb") as f:
            while chunk := f.read(1 << 20):
                h.update(chunk)
    return h.hexdigest()


def _memo(cache: Path, bag: Path) -> Path:
    return cache / "index" / f"{hashlib.sha256(str(bag).encode()).hexdigest()[:32]}.json"


def _bundles(entry: Path) -> list[str] | None:
    """The bundles of a complete cache entry, or None when there is none."""
    try:
        names = json.loads((entry / "import.json").read_text())["bundles"]
    except (OSError, ValueError, KeyError):
        return None
    return [str(entry / n) for n in names]


def cached_bundles(bag: str, how: BagImport) -> list[str] | None:
    """The bundles an earlier import made of ``bag`` with this mapping, found without hashing
    the bag (its files' sizes and mtimes as the memo has them); else None."""
    path = Path(bag).absolute()
    try:
        memo = json.loads(_memo(Path(how.cache), path).read_text())
        if memo["mapping_sha"] != how.mapping_sha or memo["stat"] != _stat(path):
            return None
    except (OSError, ValueError, KeyError):
        return None
    return _bundles(Path(how.cache) / memo["key"])


def import_cached(bag: str, how: BagImport) -> tuple[list[str], bool]:
    """``bag``'s bundles, imported now unless the cache holds them; (bundles, imported now).

    Raises:
        RosbagError: the bag, a mapped topic or a message cannot be imported (one line).
    """
    from judge.bundle.rosbag import import_bag
    from judge.bundle.rosbag.bag import storage_of

    path = Path(bag).absolute()
    storage_of(path)  # not a bag, or a .db3 without its metadata.yaml: refused here, in one line
    cache, stat = Path(how.cache), _stat(path)
    key = hashlib.sha256(f"{IMPORT_FORMAT}\0{how.mapping_sha}\0{bag_hash(path)}".encode()
                         ).hexdigest()[:32]
    bundles = _bundles(cache / key)
    imported = bundles is None
    if bundles is None:
        tmp = cache / f".{key}.{os.getpid()}.part"
        shutil.rmtree(tmp, ignore_errors=True)
        try:
            done = import_bag(path, how.mapping, tmp)
            names = [posixpath.relpath(str(d["bundle"]), str(tmp)) for d in done]
            episodes = [{**d, "bundle": str(cache / key / n)} for d, n in zip(done, names,
                                                                               strict=True)]
            (tmp / "import.json").write_text(json.dumps(
                {"bag": str(path), "bundles": names, "episodes": episodes}, indent=2,
                default=str))
            try:
                os.replace(tmp, cache / key)
            except OSError:  # the entry is there: another worker imported the same bytes
                if _bundles(cache / key) is None:
                    raise
                imported = False
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
        bundles = _bundles(cache / key)
    memo = _memo(cache, path)
    memo.parent.mkdir(parents=True, exist_ok=True)
    part = memo.with_name(f".{memo.name}.{os.getpid()}.part")
    part.write_text(json.dumps({"bag": str(path), "mapping_sha": how.mapping_sha,
                                "stat": stat, "key": key}))
    os.replace(part, memo)
    return bundles, imported


def check_bundles_dir(root: str) -> None:
    """Refuse a ``--bundles-dir`` that is a file, before any work."""
    path = Path(root).expanduser()
    if path.exists() and not path.is_dir():
        raise JudgeError(f"--bundles-dir {root}: is a file; expected a folder")
