"""Batch sources: a folder of bundles, a glob, or a list file of bundle URIs."""

from __future__ import annotations

import posixpath
from collections.abc import Iterable

from judge.bundle.filesystems import url_to_fs
from judge.bundle.manifest import MANIFEST
from judge.errors import JudgeError


class SourceError(JudgeError, ValueError):
    """A batch source names nothing usable."""


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


def resolve_sources(source: str) -> list[str]:
    """URIs, sorted, from a bundle folder, a folder of bundles, a glob or a list file.

    Every entry of a folder of bundles (and every glob match) is returned, bundle or not,
    except hidden ones (names starting with ``.``): intake refuses an entry that is not a
    bundle (:class:`~judge.errors.NotABundleError`), so a batch counts and records it instead
    of dropping it. A list file (``.txt`` / ``.list``) holds one URI per line; blank lines
    and lines starting with ``#`` are skipped; a relative entry is relative to the list
    file's folder (not the working folder); an entry named again (in any spelling of the
    same path) is dropped, so each distinct bundle path is verified once.

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
        found = [p for p in fs.glob(path) if not _hidden(p)]
        any_bundle = any(is_bundle(p) for p in found)
    elif fs.isfile(path):
        with fs.open(path, "r") as f:
            lines = [ln.strip() for ln in f.read().splitlines()]
        found = [ln for ln in lines if ln and not ln.startswith("#")]
        if not found:
            raise SourceError(f"{source}: the list file names no bundle")
        here = posixpath.dirname(path)
        return distinct(ln if "://" in ln or "::" in ln or posixpath.isabs(ln)
                        else uri(posixpath.join(here, ln)) for ln in found)
    elif fs.isdir(path):
        if is_bundle(path):
            return [uri(path)]
        found = [p.rstrip("/") for p in fs.ls(path, detail=False) if not _hidden(p)]
        any_bundle = bool(fs.glob(posixpath.join(path, "*", MANIFEST)))
    else:
        try:
            fs.info(path)  # a symlink loop or a denied folder says so, not "no such folder"
        except FileNotFoundError:
            pass
        except OSError as exc:
            raise SourceError(f"{source}: {exc.strerror or exc}") from None
        raise SourceError(f"{source}: no such folder, glob match or list file")
    if not any_bundle:
        names = sorted(posixpath.basename(p) for p in found)
        listed = f"; not bundles: {', '.join(names[:10])}{', …' if len(names) > 10 else ''}"
        raise SourceError(f"{source}: no bundle (a folder with {MANIFEST}) found"
                          + (listed if names else ""))
    return [uri(p) for p in sorted(found)]
