"""``rcjudge models fetch VERSION``: every model of a judge version from the hub, at its pin.

Where it sits: before a version first judges on a new machine. Each model entry with a
checkpoint path names ``repo`` and ``revision`` (``judge.ensemble.version.ModelEntry``);
:func:`fetch_version` refuses, before any download, a version where one is missing, then
fetches each model into its path (``{models_dir}`` expanded) with
``models.hub.fetch_checkpoint``. The files are hashed once, through the fingerprint's
digest cache, so ``rcjudge judges show`` and every judgment's fingerprint read those
digests instead of hashing the weights again.
"""

from __future__ import annotations

from pathlib import Path

from judge.ensemble.version import JudgeVersion
from models.hub import FetchError, fetch_checkpoint


def check_pins(version: JudgeVersion) -> None:
    """Refuse a version that cannot be fetched as pinned, naming the first model at fault.

    Raises:
        FetchError: a trained version, or a model with a path but no repo or revision.
    """
    if version.training is not None:
        raise FetchError(f"judge version {version.name!r} was trained (from "
                         f"{version.training.parent!r}): its checkpoints are not on the hub; "
                         f"fetch {version.training.parent!r} and train again, or copy them")
    for m in version.models:
        if not m.path:
            continue
        if m.repo is None:
            hint = ("; the tiny models are built locally: `rcjudge models build-tiny`"
                    if "/tiny" in m.path else "")
            raise FetchError(f"model {m.name!r} of {version.name!r}: no repo pinned (set repo "
                             f"and revision, a 40-hex commit, in its entry){hint}")
        if m.revision is None:
            raise FetchError(f"model {m.name!r} of {version.name!r}: {m.repo}: no revision "
                             f"pinned (set revision to a 40-hex commit of {m.repo}; a branch "
                             f"would move under the version)")


def fetch_version(version: JudgeVersion, progress: bool = True) -> list[dict]:
    """Fetch every model of ``version`` into its folder; one report per model fetched.

    Raises:
        FetchError: one line naming the model, repo and revision (offline, no such repo or
            revision, gated without a token, hub down); the models fetched before stay.
    """
    from judge.ensemble.fingerprint import _DigestCache

    check_pins(version)
    cache = _DigestCache()
    reports = []
    try:
        for m in version.models:
            if not m.path:
                continue
            assert m.repo is not None and m.revision is not None  # check_pins
            report = fetch_checkpoint(m.repo, m.revision, Path(m.resolved_path()),
                                      cache.digest, f"model {m.name!r}", progress)
            reports.append({"model": m.name, **report.as_dict()})
    finally:
        cache.save()  # the digests of what was fetched, even when a later model fails
    return reports


def format_fetch(reports: list[dict]) -> str:
    """One line per model: how many files were fetched and kept, and where."""
    return "\n".join(
        f"{r['model']:<16} {r['repo']}@{r['revision'][:12]}: {len(r['fetched'])} fetched "
        f"({r['bytes_fetched'] / 1e9:.2f} GB), {len(r['kept'])} already there -> {r['folder']}"
        + (f"; {len(r['extra'])} file(s) not in the commit left there (they count in the "
           f"fingerprint): {', '.join(r['extra'][:3])}" if r["extra"] else "")
        for r in reports)
