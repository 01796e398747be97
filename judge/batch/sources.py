"""Batch sources: a folder of bundles, a glob, or a list file of bundle URIs."""

from __future__ import annotations

import posixpath
from collections.abc import Iterable
from dataclasses import dataclass, field

from judge.bundle.filesystems import url_to_fs
from judge.bundle.manifest import MANIFEST
from judge.errors import JudgeError
from rcjudge.errors import InputError


class SourceError(JudgeError, InputError, ValueError):
    """A batch source names nothing usable: the input is refused (exit 1), whether it names
    no path, an unknown protocol, or a folder without bundles."""


def _hidden(path: str) -> bool:
    return posixpath.basename(path.rstrip("/")).startswith(".")


def _spelling(entry: str) -> str:
    """One spelling of a list file's entry: its path normalised (``./b/``, ``b//``,
    ``x/../b`` -> ``b``; ``s3://k/b/`` -> ``s3://k/b``); a chained URI (``::``) as given."""
    if "::" in entry:
        return entry
    proto, sep, rest = entry.rpartition("://")
    return f"{proto}{sep}{posixpath.normpath(rest)}" if rest else entry


def distinct(entries: Iterable[str]) -> list[str]:
    """``entries`` in their order, each spelling once (:func:`_spelling`): a list file of
    10,000 lines naming one bundle verifies that bundle once (issue 36 item 8)."""
    return list(dict.fromkeys(_spelling(e) for e in entries))


@dataclass(frozen=True)
class Sources:
    """What a batch source names: the bundle URIs, and the entries a scan passed over."""

    uris: list[str]
    passed_over: list[str] = field(default_factory=list)  # URIs, sorted
    folders: int = 0  # how many of ``passed_over`` are folders
    source: str = ""

    def note(self) -> str:
        """One line naming what the scan passed over ("" when nothing)."""
        n = len(self.passed_over)
        if not n:
            return ""
        files = n - self.folders
        names = [posixpath.basename(p.rstrip("/")) for p in self.passed_over]
        shown = ", ".join(names[:5]) + (", …" if n > 5 else "")
        return (f"{self.source}: passed over {n} entr{'y' if n == 1 else 'ies'} without "
                f"{MANIFEST} ({files} file{'' if files == 1 else 's'}, {self.folders} "
                f"folder{'' if self.folders == 1 else 's'}): {shown}")


def resolve_sources(source: str) -> list[str]:
    """The bundle URIs of ``source`` (:func:`find_sources`)."""
    return find_sources(source).uris


def find_sources(source: str) -> Sources:
    """URIs, sorted, from a bundle folder, a folder of bundles, a glob or a list file.

    A folder scan (and a glob) takes the entries that hold a ``manifest.json`` and passes
    over the rest (a converter's side files, notes, empty folders), which it names in
    :meth:`Sources.note`; hidden entries (names starting with ``.``) are not looked at. A
    list file (``.txt`` / ``.list``) holds one URI per line, every one kept (intake refuses
    one that is not a bundle, and a batch records it); blank lines and lines starting with
    ``#`` are skipped; a relative entry is relative to the list file's folder (not the
    working folder); an entry named again (in any spelling of the same path) is dropped, so
    each distinct bundle path is verified once.

    Raises:
        SourceError: the source names nothing, holds no bundle at all, or its protocol is
            unknown or not installed.
    """
    fs, path = url_to_fs(source, SourceError)
    proto = source.split("://")[0] + "://" if "://" in source else ""

    def uri(p: str) -> str:
        return proto + p if proto else p

    def is_bundle(p: str) -> bool:
        return fs.exists(posixpath.join(p, MANIFEST))

    if any(c in path for c in "*?["):
        found = {p.rstrip("/"): d for p, d in fs.glob(path, detail=True).items()
                 if not _hidden(p)}
        bundles = {p for p in found if found[p].get("type") == "directory" and is_bundle(p)}
    elif fs.isfile(path):
        with fs.open(path, "r") as f:
            lines = [ln.strip() for ln in f.read().splitlines()]
        listed = [ln for ln in lines if ln and not ln.startswith("#")]
        if not listed:
            raise SourceError(f"{source}: the list file names no bundle")
        here = posixpath.dirname(path)
        return Sources(distinct(ln if "://" in ln or "::" in ln or posixpath.isabs(ln)
                                else uri(posixpath.join(here, ln)) for ln in listed),
                       source=source)
    elif fs.isdir(path):
        if is_bundle(path):
            return Sources([uri(path)], source=source)
        found = {d["name"].rstrip("/"): d for d in fs.ls(path, detail=True)
                 if not _hidden(d["name"])}
        bundles = {posixpath.dirname(m) for m in fs.glob(posixpath.join(path, "*", MANIFEST))
                   } & found.keys()
    else:
        try:
            fs.info(path)  # a symlink loop or a denied folder says so, not "no such folder"
        except FileNotFoundError:
            pass
        except OSError as exc:
            raise SourceError(f"{source}: {exc.strerror or exc}") from None
        raise SourceError(f"{source}: no such folder, glob match or list file")
    if not bundles:
        names = sorted(posixpath.basename(p) for p in found)
        listed = f"; not bundles: {', '.join(names[:10])}{', …' if len(names) > 10 else ''}"
        raise SourceError(f"{source}: no bundle (a folder with {MANIFEST}) found"
                          + (listed if names else ""))
    rest = sorted(p for p in found if p not in bundles)
    return Sources([uri(p) for p in sorted(bundles)], [uri(p) for p in rest],
                   sum(found[p].get("type") == "directory" for p in rest), source)
