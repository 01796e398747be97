"""``rcjudge average``: one judge version from several trained alike, its models their mean.

``rcjudge train`` with one ``--split-seed`` and several ``--seed`` values makes versions
that saw the same runs in the same parts and differ only in their models' initial weights
and data order. How far one training's figures move with that seed is measured in
docs/judge-quality.md (more than any recipe change). Averaging them is the usual remedy (a
deep ensemble): the new version keeps the three voters, and each answers with the mean of
its checkpoints' probabilities (``ModelEntry.members``, ``models.members``).

What must match, each refused with the field that differs: the parent, the training data
(``data_sha256``), the split (its parts' sizes and test seed groups), the held-out tasks,
the training options, and everything but the checkpoints that makes up a version (models'
kinds and settings, prompts, frames, sampling, vote rule). The ledger's labelled runs are
split again as the members were (checked against their test seed groups); the calibration
part fits the new version's per-model and ensemble maps afresh, on the mean answers, and
the validation part gives its record's metrics, as ``rcjudge train`` does (through
the serving backend where it loads, else transformers: ``train.answer_specs``). No weights are
written: the new version names the members' checkpoint folders.
"""

from __future__ import annotations

import json
import shutil
import time
from collections.abc import Sequence
from pathlib import Path

from judge.ensemble.fingerprint import fingerprint
from judge.ensemble.taxonomy import load_taxonomy
from judge.ensemble.version import TRAINED_COPY, Calibration, JudgeVersion, Training
from judge.learn.calibrate import confidence_report, fit_version, version_path, write_version
from judge.learn.train import (
    PARTS,
    TrainConfig,
    TrainError,
    answer_specs,
    answers_dataset,
    labelled_runs,
    prepare_parts,
    read_through,
    split_runs,
    training_specs,
)
from judge.ledgers.seen import check_unrecorded, label_rows, record_training
from judge.ledgers.store import Ledger
from rcjudge.home import models_dir

#: Version fields that must be equal across the members (the models apart from where their
#: checkpoints are and how they are calibrated, and the training record, are checked apart).
SHARED = ("prompts", "frames", "sampling")


def _same(versions: Sequence[JudgeVersion], what: str, values: list) -> None:
    """Refuse, naming ``what`` and each version's value (of a mapping: the keys that differ)."""
    if any(v != values[0] for v in values[1:]):
        if all(isinstance(x, dict) for x in values):
            keys = sorted({k for x in values for k in x if any(y.get(k) != x.get(k)
                                                                for y in values)})
            values = [{k: x.get(k) for k in keys} for x in values]
        shown = "; ".join(f"{v.name}: {x}" for v, x in zip(versions, values, strict=True))
        raise TrainError(f"the versions differ in {what} ({shown}); average versions trained "
                         "alike on one split (rcjudge train --split-seed S --seed 0, 1, ...)")


def split_seed(t: Training) -> int:
    """The seed a trained version's split was drawn with (``--split-seed``, else ``--seed``)."""
    s = t.options.get("split_seed")
    return t.seed if s is None else int(s)


def check_members(versions: Sequence[JudgeVersion]) -> Training:
    """The training record the members share, once everything that must match does.

    Raises:
        TrainError: fewer than two versions, one not made by ``rcjudge train`` or itself an
            average, or a field that differs (named, with each version's value).
    """
    if len(versions) < 2:
        raise TrainError(f"--versions: at least 2 versions to average, got {len(versions)}")
    names = [v.name for v in versions]
    if len(set(names)) != len(names):
        raise TrainError(f"--versions: each version once, got {', '.join(names)}")
    for v in versions:
        if v.training is None:
            raise TrainError(f"{v.name}: not made by rcjudge train (no training record); "
                             "only trained versions are averaged")
        if v.training.members or any(m.members for m in v.models):
            raise TrainError(f"{v.name}: already an average; name its members instead")
    seen: dict[str, str] = {}
    for v in versions:
        for m in v.models:
            if m.path in seen:
                raise TrainError(f"{seen[m.path]} and {v.name} name the same checkpoint folder "
                                 f"{m.path}; average versions with checkpoints of their own")
            seen[m.path] = v.name
    records = [v.training for v in versions]
    _same(versions, "parent", [t.parent for t in records])
    _same(versions, "held-out tasks", [t.held_out.get("tasks", []) for t in records])
    if any(t.held_out.get("test_seed_groups") != records[0].held_out.get("test_seed_groups")
           for t in records[1:]):
        seeds = ", ".join(f"{v.name} {split_seed(t)}"
                          for v, t in zip(versions, records, strict=True))
        raise TrainError(f"the versions differ in their split's test seed groups (split seeds: "
                         f"{seeds}); average versions trained on one split (rcjudge train "
                         "--split-seed S --seed 0, 1, ...)")
    _same(versions, "split (runs per part)", [t.split for t in records])
    _same(versions, "training data (data_sha256)", [t.data_sha256 for t in records])
    # the split itself is compared above: --split-seed S and --seed S alone split alike
    _same(versions, "training options",
          [{k: v for k, v in t.options.items() if k != "split_seed"} for t in records])
    _same(versions, "models (apart from their checkpoints and calibration)",
          [[m.model_dump(exclude={"path", "calibration"}) for m in v.models] for v in versions])
    for field in SHARED:
        _same(versions, field, [getattr(v, field) for v in versions])
    _same(versions, "vote rule", [v.vote.model_dump(exclude={"calibration"}) for v in versions])
    return records[0]


def averaged(versions: Sequence[JudgeVersion], new_name: str) -> JudgeVersion:
    """The first version with each model's checkpoints the members' (its own, then the
    others' in order) and no calibration yet."""
    first = versions[0]
    models = tuple(m.model_copy(update={"members": tuple(v.models[i].path for v in versions[1:]),
                                        "calibration": Calibration()})
                   for i, m in enumerate(first.models))
    return first.model_copy(update={
        "name": new_name, "models": models,
        "vote": first.vote.model_copy(update={"calibration": Calibration()}), "training": None})


def average_versions(ledger: Ledger, versions: Sequence[JudgeVersion], new_name: str,
                     labels_file: str | None = None, config_out: str | None = None,
                     progress: bool = True) -> tuple[Path, dict]:
    """Write ``new_name``, whose models average ``versions``' checkpoints; (config, report).

    Raises:
        TrainError: the versions do not match (:func:`check_members`), the ledger's labels
            no longer split as theirs did, or the name is taken.
        CalibrationError: the config file exists.
    """
    record = check_members(versions)
    training_specs(versions[0], "--versions")  # a backend without weights: refused here
    target = version_path(new_name, config_out)  # refused before any work if taken
    weights_root = models_dir() / new_name
    if weights_root.exists():
        raise TrainError(f"{weights_root}: already exists; a version's folder is never "
                         "overwritten")
    check_unrecorded(ledger, new_name)
    t0 = time.perf_counter()
    cfg = TrainConfig(seed=split_seed(record),
                      hold_out_tasks=tuple(record.held_out.get("tasks", [])),
                      **{k: float(record.options[k])
                         for k in ("test_fraction", "val_fraction", "calib_fraction")})
    parts = split_runs(labelled_runs(ledger, record.parent, labels_file), cfg)
    groups = sorted({g for _, _, g in parts["test"]})
    if groups != record.held_out.get("test_seed_groups"):
        raise TrainError(f"the labelled runs of {record.parent!r} no longer split as "
                         f"{versions[0].name}'s did ({len(groups)} test seed groups, "
                         f"{len(record.held_out.get('test_seed_groups', []))} then); average "
                         "with the ledger or label file they were trained from")
    examples, skipped = prepare_parts(parts, ("calibration", "validation"), versions[0],
                                      progress)
    mean = averaged(versions, new_name)
    answers: dict[str, list] = {"calibration": [], "validation": []}
    specs, serving = answer_specs(mean, "--versions")
    for spec in specs:  # as train reads them; one model resident at a time
        read_through(spec, answers, examples, mean)
    calibrated = fit_version(mean, answers_dataset(answers["calibration"],
                                                   examples["calibration"]))
    val_metrics = confidence_report(calibrated, answers_dataset(answers["validation"],
                                                                examples["validation"]))
    used_file = Path(record.used_runs.replace("{models_dir}", str(models_dir())))
    weights_root.mkdir(parents=True)
    (weights_root / "used_runs.json").write_bytes(used_file.read_bytes())
    new_record = record.model_copy(update={
        "used_runs": f"{{models_dir}}/{new_name}/used_runs.json",
        "metrics": {f"validation_{q}_{k}": float(val_metrics[q][k])
                    for q in ("attempt", "success") for k in ("accuracy", "ece")
                    if val_metrics[q][k] is not None},
        "members": [v.name for v in versions], "seed": split_seed(record),
        "options": {**record.options, "split_seed": split_seed(record),
                    "calibrated_with_serving_backend": serving},
        "fingerprint": fingerprint(calibrated, load_taxonomy()).digest})
    new = calibrated.model_copy(update={
        "description": f"the mean of {', '.join(v.name for v in versions)} (rcjudge average; "
                       f"trained from {record.parent} on one split)",
        "training": new_record})
    path = write_version(new, target)
    shutil.copyfile(path, weights_root / TRAINED_COPY)  # found by name: any --config
    # what it saw: its members' parts (their weights) and its own calibration on them
    record_training(ledger, new_name, record.parent, labels_file or "ledger", label_rows(
        ledger, [(run.run_id, label, part) for part in PARTS[:3] for run, label, _ in parts[part]],
        from_file=labels_file is not None))
    report = {"members": [v.name for v in versions], "to": new_name, "config": str(path),
              "parent": record.parent, "split": record.split,
              "calibration_runs": len(examples["calibration"]),
              "validation_runs": len(examples["validation"]), "skipped": skipped,
              "validation": val_metrics, "fingerprint": new_record.fingerprint,
              "used_runs": len(json.loads(used_file.read_text())),
              "seconds": round(time.perf_counter() - t0, 1)}
    return path, report
