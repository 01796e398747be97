"""Fingerprints: a judge version names everything that can change an answer, by content.

A version's fingerprint is the sha256 of its *parts*, each itself a sha256 of canonical
JSON: one part per model (its entry without ``path``, ``gpu_share``, ``replicas``,
``batch_size`` and ``min_answer_mass``: where and how many times it runs and a check at
load, not what it answers; plus the digest of
every file in its checkpoint folder: weights, processor, tokenizer, chat template), the
prompts, the frames shown (images per question, tiling), the vote (threshold and
ensemble calibration), the effective sampling settings (the version's own, else
``configs/sampling.yaml``) and the taxonomy. Where the files are does not matter; what
they hold does. A served model (backend openai, docs/served.md) has no files: its part holds
its endpoint's host, the model asked and how answers are read, and what the server says it
serves (the answering model's id, its ``root``, its ``system_fingerprint``:
:func:`served_identity`, asked when the fingerprint is taken), so a server that now serves
something else changes the version; prices, concurrency and the key's variable are left out.

The task catalog is pinned per task instead: each judgment row keeps the sha256 of the
instruction its questions used (:func:`instruction_sha256`), and the ledgers refuse a
judgment of the same version and task whose instruction changed. Adding a task to the
catalog changes no version.

File digests are cached under ``<RCJUDGE_HOME>/cache/sha256.json`` by absolute path,
size and modification time, so real-size checkpoints are hashed once.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from judge.config import FingerConfig
from judge.ensemble.taxonomy import Taxonomy
from judge.ensemble.version import JudgeVersion, ModelEntry
from models.endpoint import RUN_ONLY as ENDPOINT_RUN_ONLY
from rcjudge.home import home

_BLOCK = 1 << 20
# model-entry fields that say where and how a model runs, where its files were fetched from
# (the files themselves are hashed), or what is checked at load — not what it answers
RUN_ONLY = {"path", "members", "gpu_share", "replicas", "batch_size", "repo", "revision",
            "min_answer_mass"}


def _sha(obj: Any) -> str:
    text = json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(text.encode()).hexdigest()


class _DigestCache:
    """sha256 of files keyed by (absolute path, size, mtime_ns), kept on disk."""

    def __init__(self) -> None:
        self.path = home() / "cache" / "sha256.json"
        try:
            self.entries: dict[str, list] = json.loads(self.path.read_text())
        except (OSError, ValueError):
            self.entries = {}
        self.dirty = False

    def digest(self, file: Path) -> str:
        st = file.stat()
        key = str(file.resolve())
        hit = self.entries.get(key)
        if hit and hit[0] == st.st_size and hit[1] == st.st_mtime_ns:
            return hit[2]
        h = hashlib.sha256()
        with file.open("rb") as f:
            while block := f.read(_BLOCK):
                h.update(block)
        self.entries[key] = [st.st_size, st.st_mtime_ns, h.hexdigest()]
        self.dirty = True
        return h.hexdigest()

    def save(self) -> None:
        """Write the cache atomically; a cache that cannot be written is simply not kept."""
        if not self.dirty:
            return
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(dir=self.path.parent, suffix=".tmp")
            with os.fdopen(fd, "w") as f:
                json.dump(self.entries, f)
            os.replace(tmp, self.path)
        except OSError:
            pass


def folder_digest(folder: Path, cache: _DigestCache | None = None) -> str:
    """sha256 over ``"<relative path>:<sha256>\\n"`` of every file under ``folder``, sorted.

    ``<folder>/.cache/`` is left out: the fetch record and huggingface_hub's download
    metadata (``models.hub``) say where the files came from, not what they hold.
    """
    cache = cache or _DigestCache()
    files = sorted(p for p in folder.rglob("*")
                   if p.is_file() and p.relative_to(folder).parts[0] != ".cache")
    lines = "".join(f"{p.relative_to(folder).as_posix()}:{cache.digest(p)}\n" for p in files)
    return hashlib.sha256(lines.encode()).hexdigest()


def instruction_sha256(task_id: str, instruction: str) -> str:
    """sha256 of one task-catalog entry, as each judgment row records it."""
    return hashlib.sha256(f"{task_id}\n{instruction}".encode()).hexdigest()


@dataclass(frozen=True)
class Fingerprint:
    """A version's fingerprint and the parts it is made of (part name -> sha256)."""

    digest: str
    parts: dict[str, str]

    def changed(self, other_parts: dict[str, str]) -> list[str]:
        """Names of the parts that differ from ``other_parts`` (added and removed ones too)."""
        names = sorted(set(self.parts) | set(other_parts))
        return [n for n in names if self.parts.get(n) != other_parts.get(n)]


def version_parts(version: JudgeVersion, taxonomy: Taxonomy) -> dict[str, Any]:
    """The canonical content of each part (before hashing): what ``judges show`` prints."""
    cache = _DigestCache()
    parts: dict[str, Any] = {}
    for m in version.models:
        # endpoint, added later, adds nothing to an in-process model: its fingerprint stays
        entry = m.model_dump(mode="json", exclude=RUN_ONLY | ({"endpoint"} if m.endpoint is None
                                                              else set()))
        entry["device"] = m.device.split(":")[0]  # which card does not change an answer
        if m.endpoint is not None:  # a served model: which server, and what it says it is
            entry["endpoint"] = {"host": m.endpoint.host, **m.endpoint.model_dump(
                mode="json", exclude=ENDPOINT_RUN_ONLY)}
            entry["served"] = served_identity(m)
        entry["files"] = folder_digest(m.checkpoint(), cache) if m.path else None
        if m.members:  # a mean does not depend on the order of what it averages
            entry["files"] = sorted(folder_digest(f, cache) for f in m.checkpoints())
        parts[f"models.{m.name}"] = entry
    cache.save()
    parts["prompts"] = version.prompts.model_dump(mode="json")
    parts["frames"] = version.frames.model_dump(mode="json")
    parts["vote"] = version.vote.model_dump(mode="json")
    sampling = version.sampling_settings()
    # settings added later add nothing at their defaults (finger detection, the impact
    # floor): fingerprints from before them stay valid
    exclude: dict[str, Any] = {}
    if sampling.fingers == FingerConfig():
        exclude["fingers"] = True
    if sampling.contacts.impact_min_nm == 0:
        exclude["contacts"] = {"impact_min_nm"}
    parts["sampling"] = sampling.model_dump(mode="json", exclude=exclude or None)
    parts["taxonomy"] = taxonomy.model_dump(mode="json")
    return parts


def served_identity(entry: ModelEntry) -> dict[str, Any]:
    """What a served model's endpoint says it serves (``models.served.read_identity``):
    the answering model's id, the server's ``root`` and ``system_fingerprint``.

    Raises:
        ModelError: the server is unreachable or does not serve the model (one line).
    """
    from models.endpoint import ServedClient
    from models.served import read_identity

    client = ServedClient(entry.name, entry.endpoint)
    try:
        return read_identity(client)[0]
    finally:
        client.close()


def served_parts(content: dict[str, Any]) -> dict[str, dict]:
    """Per served model, the identity :func:`version_parts` recorded (``spec.pinned``)."""
    return {name.removeprefix("models."): c["served"] for name, c in content.items()
            if name.startswith("models.") and isinstance(c, dict) and "served" in c}


def fingerprint(version: JudgeVersion, taxonomy: Taxonomy) -> Fingerprint:
    """The fingerprint of ``version`` as it would judge now (model folders must exist).

    Raises:
        ConfigError: a model's checkpoint folder is missing (named, with where it was looked for).
    """
    return fingerprint_of(version_parts(version, taxonomy))


def fingerprint_of(content: dict[str, Any]) -> Fingerprint:
    """The fingerprint of parts already gathered by :func:`version_parts`."""
    parts = {name: _sha(c) for name, c in content.items()}
    return Fingerprint(digest=_sha(parts), parts=parts)
