"""``rcjudge train``: the next judge version, trained on the labelled history of the last one.

Data: every run the parent version judged that has a label (the ledger's current operator
labels, or a label file) — the disagreements of the calibration set among them. Each run
is prepared exactly as the parent judges it (intake, decode, contacts, the same sampled
frames: ``judge.ensemble.judge.prepare``), and asked the parent's exact questions:

* attempt and success, two yes/no requests, the label's answer as the target;
* on a labelled failure with a class: the family letter, then the class letter.

Each of the three models (their own transformers architectures, loaded from the parent's
checkpoints through transformers, also when the parent serves them with vLLM, which cannot
train: ``training_specs``; the new version serves them as its parent did) is trained — all
its weights, or LoRA adapters (peft) on the attention projections, the default on CUDA,
merged back before saving — on the cross-entropy of the answer tokens' next-token logits —
the very numbers the judge reads (``TransformersBackend.choice_logits``) — with its own
seed and data order, so their errors stay diverse. Early stopping on the validation part.

Memory (docs/train.md): the models are trained one at a time — each trained, its raw P(yes)
on the calibration and validation parts read (through the serving backend where it loads
here, else transformers: ``answer_specs``), saved and freed before the next loads; one
question's graph at a time (``accumulate``); gradient checkpointing on CUDA; the best epoch
kept as a CPU copy of the trainable parameters; ``judge.learn.memory`` refuses a model whose
estimated peak exceeds its device before any run is prepared.

Split by seed group (runs of one task sharing a ``seed`` attribution) — never by frame
or by run of one rollout: a deterministic hash of the group and the split seed (``--split-seed``,
by default ``--seed``) assigns it to ``test``
(never used: what ``rcjudge eval`` scores), ``train``, ``validation`` or
``calibration``; ``--hold-out-tasks`` keeps whole tasks out. The calibration part fits
the new version's per-model and ensemble maps (``judge.learn.calibrate``).

Writes the weights under ``{models_dir}/<NEW>/<model>`` (never committed), the list of
every run used (``used_runs.json``), and ``$RCJUDGE_HOME/judges/<NEW>.yaml`` (or
``--config``) with its ``training`` record: parent, data hash and size, split, held-out
sets, seed, the other options (epochs, lr, dropout, jitter, ...), validation metrics,
fingerprint. The ledger records what the version saw (``judge.ledgers.seen``: each run of
the train, validation and calibration parts with its label's id), so its rates are never
rectified with those labels.
"""

from __future__ import annotations

import hashlib
import json
import shutil
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass, replace
from pathlib import Path

import numpy as np

from judge.ensemble.fingerprint import fingerprint
from judge.ensemble.judge import prepare
from judge.ensemble.prompts import (
    class_request,
    family_request,
    scale_travel,
    yes_no_requests,
)
from judge.ensemble.taxonomy import Taxonomy, load_taxonomy
from judge.ensemble.version import TRAINED_COPY, JudgeVersion, Training
from judge.errors import JudgeError
from judge.learn.calibrate import (
    Dataset,
    confidence_report,
    fit_version,
    version_path,
    write_version,
)
from judge.learn.recipe import TrainConfig, training_specs
from judge.learn.step import (
    CLIP_NORM,
    TrainError,
    accumulate,
    add_lora,
    default_lr,
    enable_checkpointing,
    mean_loss,
    merge_lora,
    restore,
    snapshot,
)
from judge.ledgers.labels import read_labels
from judge.ledgers.records import Label
from judge.ledgers.seen import check_unrecorded, label_rows, record_training
from judge.ledgers.store import Ledger
from models.base import ScoreRequest
from rcjudge.home import models_dir
from rcjudge.progress import Progress, say

PARTS = ("train", "validation", "calibration", "test")


@dataclass(frozen=True)
class Example:
    """One labelled run, prepared as the parent judges it."""

    run_id: str
    bundle_hash: str
    task_id: str
    group: str
    frames: np.ndarray  # (K, H, W', 3) uint8, the images every question shows
    instruction: str
    label: Label
    sensors: str = ""  # the contact events as text (Prepared.sensors)
    motion: str = ""  # the arm's and fingers' motion as text (Prepared.motion)


def _sha(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def assign_part(group: str, seed: int, cfg: TrainConfig) -> str:
    """The part a seed group belongs to: a deterministic hash of (seed, group) in [0, 1)."""
    u = int(_sha(f"{seed}:{group}")[:12], 16) / 16**12
    edges = np.cumsum([cfg.test_fraction, cfg.val_fraction, cfg.calib_fraction])
    return ("test", "validation", "calibration", "train")[int(np.searchsorted(edges, u, "right"))]


def seed_group(task_id: str, seed: str | None, run_id: str) -> str:
    """The seed group a run is split by: its task and its ``seed`` attribution (else its id)."""
    return f"{task_id}:{seed or run_id}"


def split_runs(pairs: Sequence[tuple[object, Label]],
               cfg: TrainConfig) -> dict[str, list[tuple[object, Label, str]]]:
    """(run, label, seed group) of each labelled run in its part (:data:`PARTS`), by the split
    seed (``cfg.split_seed``, else ``cfg.seed``); runs of ``cfg.hold_out_tasks`` in none."""
    split_seed = cfg.seed if cfg.split_seed is None else cfg.split_seed
    parts: dict[str, list] = {p: [] for p in PARTS}
    for run, label in pairs:
        if run.attribution.task.id in cfg.hold_out_tasks:
            continue
        group = seed_group(run.attribution.task.id, run.attribution.seed, run.run_id)
        parts[assign_part(group, split_seed, cfg)].append((run, label, group))
    return parts


def labelled_parts(parts: dict[str, list], total: int, cfg: TrainConfig) -> dict:
    """How many labelled runs went to each part (:data:`PARTS`), of ``total``, and how many
    the held-out tasks kept out of every part."""
    counts = {p: len(parts[p]) for p in PARTS}
    return {"total": total, **counts, "held_out_tasks": total - sum(counts.values())}


def describe_parts(labelled: dict, parent: str, cfg: TrainConfig) -> str:
    """One line: the labelled runs per part, and how to train on the test part too."""
    line = (f"train: {labelled['total']} labelled runs of {parent}: "
            + " / ".join(f"{p} {labelled[p]}" for p in PARTS))
    if labelled["held_out_tasks"]:
        line += f"; {labelled['held_out_tasks']} of --hold-out-tasks, never used"
    if labelled["test"]:
        return line + (f" (--test-fraction {cfg.test_fraction:g}: {labelled['test']} kept out "
                       "of training for `rcjudge eval`; if you hold your own test set, "
                       "--test-fraction 0 trains on them too)")
    rest = "every other labelled run" if labelled["held_out_tasks"] else "every labelled run"
    return line + f" (--test-fraction {cfg.test_fraction:g}: {rest} used)"


def prepare_parts(parts: dict[str, list[tuple[object, Label, str]]], names: Sequence[str],
                  version: JudgeVersion,
                  progress: bool) -> tuple[dict[str, list[Example]], list[dict]]:
    """The runs of the ``names`` parts, prepared as ``version`` judges them; those that
    cannot be prepared listed as skipped (run id, error, message) instead."""
    meter = Progress(sum(len(parts[n]) for n in names), progress, "prepare")
    examples: dict[str, list[Example]] = {}
    skipped: list[dict] = []
    for part in names:
        examples[part] = []
        for run, label, group in parts[part]:
            try:
                p = prepare(run.bundle_uri, version, run_id=run.run_id)
            except JudgeError as exc:
                skipped.append({"run_id": run.run_id, "error": type(exc).__name__,
                                "message": str(exc)})
                continue
            finally:
                meter.step()
            examples[part].append(Example(run.run_id, p.bundle_hash, p.attribution.task.id,
                                          group, p.frames, p.instruction, label, p.sensors,
                                          p.motion))
    meter.close()
    return examples, skipped


def labelled_runs(ledger: Ledger, parent: str,
                  labels_file: str | None = None) -> list[tuple[object, Label]]:
    """(run, label) of every run ``parent`` judged that has a label, by run id."""
    if labels_file is not None:
        parsed, errors = read_labels(labels_file)
        if errors:
            raise TrainError(f"{labels_file}: {len(errors)} bad row(s); first: {errors[0]}")
        labels = {lb.run_id: lb for _, lb in parsed}  # the file's last row of a run wins
    else:
        labels = {rid: s.label for rid, s in ledger.current_labels().items()}
    judged = ledger.judged_run_ids(parent)
    if not judged:
        known = ", ".join(ledger.judge_versions()) or "none"
        raise TrainError(f"--from {parent!r}: no judgment of this version in the ledger "
                         f"(versions with judgments: {known})")
    return [(ledger.get_run(rid), labels[rid]) for rid in sorted(judged & set(labels))]


def questions(ex: Example, version: JudgeVersion,
              taxonomy: Taxonomy) -> list[tuple[ScoreRequest, int]]:
    """The parent's questions about one run, each with the index of the right answer."""
    attempt, success = yes_no_requests(ex.frames, ex.instruction, version, ex.sensors, ex.motion)
    out = [(attempt, 0 if ex.label.attempt else 1), (success, 0 if ex.label.success else 1)]
    cls = ex.label.failure_class
    if not ex.label.success and cls in taxonomy.classes:
        fam = family_request(ex.frames, ex.instruction, version, taxonomy, ex.sensors,
                             ex.motion)
        out.append((fam, fam.labels.index(cls.partition(".")[0])))
        req = class_request(ex.frames, ex.instruction, cls.partition(".")[0], version, taxonomy,
                            ex.sensors, ex.motion)
        out.append((req, req.labels.index(cls)))
    return out


def blanked(batch: Sequence[tuple[ScoreRequest, int]], p: float,
            rng: np.random.Generator) -> list[tuple[ScoreRequest, int]]:
    """Each question, with probability ``p``, shown black frames instead of its own (modality
    dropout: a model that cannot lean on the images of a run it memorised must read the text)."""
    if p <= 0:
        return list(batch)
    hide = rng.random(len(batch)) < p
    return [(replace(req, frames=np.zeros_like(req.frames)), t) if h else (req, t)
            for (req, t), h in zip(batch, hide, strict=True)]


def text_hidden(shown: Sequence[tuple[ScoreRequest, int]],
                batch: Sequence[tuple[ScoreRequest, int]],
                textless: Sequence[tuple[ScoreRequest, int]], p: float,
                rng: np.random.Generator) -> list[tuple[ScoreRequest, int]]:
    """The other half of modality dropout: each question of ``shown`` (``batch`` after
    :func:`blanked`) that kept its own frames is, with probability ``p``, swapped for its
    twin in ``textless`` (the same question asked without the ``{sensors}`` and ``{motion}``
    lines), so a model has to read the end state from the images too. A question is never
    left with neither: one ``blanked`` hid keeps its text."""
    if p <= 0:
        return list(shown)
    drop = rng.random(len(shown)) < p
    return [q if d and s[0] is b[0] else s
            for s, b, q, d in zip(shown, batch, textless, drop, strict=True)]


def jittered(batch: Sequence[tuple[ScoreRequest, int]], j: float,
             rng: np.random.Generator) -> list[tuple[ScoreRequest, int]]:
    """Each question's arm travel (``{motion}``: "travelled 7.6 rad") times a factor drawn
    log-uniformly from [1/(1+j), 1+j]. How far the joints travel depends on the task's path
    (pick-place-wall lifts over a wall) as much as on the outcome: a model that learnt one
    task's range of it as a cue misreads a task whose path is longer."""
    if j <= 0:
        return list(batch)
    factors = np.exp(rng.uniform(-1.0, 1.0, len(batch)) * np.log1p(j))
    return [(replace(req, prompt=scale_travel(req.prompt, float(f))), t)
            for (req, t), f in zip(batch, factors, strict=True)]


def serving_importable(backend: str) -> bool:
    """Whether the backend that serves a model can be loaded here (vLLM: when it imports)."""
    import importlib.util

    return backend == "transformers" or importlib.util.find_spec(backend) is not None


def answer_specs(version: JudgeVersion, flag: str = "--from") -> tuple[list, bool]:
    """The specs the calibration maps' raw answers are read through, and whether they are the
    serving ones: each model as it is served where every serving backend loads here (vLLM
    where it imports), else as it trains (:func:`training_specs`: transformers, which
    vLLM matches within 1e-3 on the tiny models, ``tests/vllm``).

    Raises:
        TrainError: a model served by a backend without weights (``fake``).
    """
    specs = training_specs(version, flag)
    if all(serving_importable(m.backend) for m in version.models):
        return [m.spec() for m in version.models], True
    return specs, False


def train_model(backend, train: list, val: list, seed: int, cfg: TrainConfig,
                meter: Progress, textless: list | None = None) -> dict:
    """Fit one loaded transformers backend in place; keep the weights of the best epoch.

    ``textless``: ``train``'s questions, in the same order, asked without the ``{sensors}``
    and ``{motion}`` lines (what ``cfg.blank_text`` draws from)."""
    import torch

    cuda = backend.spec.device.startswith("cuda")
    lora = cfg.lora if cfg.lora is not None else cuda
    checkpointing = (cfg.gradient_checkpointing if cfg.gradient_checkpointing is not None
                     else cuda)
    size = sum(p.numel() for p in backend.model.parameters())
    lr = cfg.lr if cfg.lr is not None else default_lr(size, lora, cfg.small_lr)
    if checkpointing:
        enable_checkpointing(backend)
    if lora:
        add_lora(backend, cfg.lora_rank, seed)
    trainable = sum(p.numel() for p in backend.model.parameters() if p.requires_grad)
    total = sum(p.numel() for p in backend.model.parameters())  # adapters included
    torch.manual_seed(seed)
    rng = np.random.default_rng(seed)
    model = backend.model
    params = [p for p in model.parameters() if p.requires_grad]
    opt = torch.optim.AdamW(params, lr=lr, weight_decay=0.0)
    warm = torch.optim.lr_scheduler.LambdaLR(
        opt, lambda s: min(1.0, (s + 1) / cfg.warmup_steps) if cfg.warmup_steps else 1.0)
    best = {"val_loss": mean_loss(backend, val), "epoch": 0, "state": snapshot(model)}
    history, steps, stale = [], 0, 0
    blank_rng = np.random.default_rng([seed, 1])  # its own stream: data order stays the same
    jitter_rng = np.random.default_rng([seed, 2])
    text_rng = np.random.default_rng([seed, 3])
    for epoch in range(1, cfg.epochs + 1):
        model.train()
        order = rng.permutation(len(train))
        losses = []
        for i in range(0, len(order), cfg.batch):
            idx = order[i:i + cfg.batch]
            batch = jittered([train[j] for j in idx], cfg.travel_jitter, jitter_rng)
            shown = blanked(batch, cfg.blank_images, blank_rng)
            if textless is not None:
                shown = text_hidden(shown, batch, [textless[j] for j in idx], cfg.blank_text,
                                    text_rng)
            opt.zero_grad()
            losses.append(accumulate(backend, shown))
            torch.nn.utils.clip_grad_norm_(params, CLIP_NORM)
            opt.step()
            warm.step()
            steps += 1
            meter.step(note=f"epoch {epoch} loss {np.mean(losses):.3f}")
            if cfg.max_steps is not None and steps >= cfg.max_steps:
                break
        model.eval()
        val_loss = mean_loss(backend, val)
        history.append({"epoch": epoch, "train_loss": round(float(np.mean(losses)), 5),
                        "val_loss": round(val_loss, 5)})
        if val_loss < best["val_loss"]:
            best = {"val_loss": val_loss, "epoch": epoch, "state": snapshot(model)}
            stale = 0
        else:
            stale += 1
        if stale >= cfg.patience or (cfg.max_steps is not None and steps >= cfg.max_steps):
            break
    restore(model, best["state"])
    if lora:
        merge_lora(backend)
    return {"best_epoch": best["epoch"], "best_val_loss": round(best["val_loss"], 5),
            "steps": steps, "lora": lora, "lr": lr, "gradient_checkpointing": checkpointing,
            "blank_images": cfg.blank_images,
            "travel_jitter": cfg.travel_jitter, "blank_text": cfg.blank_text,
            "trainable_parameters": trainable,
            "parameters": total, "history": history}


def raw_answers(backend, examples: Sequence[Example], version: JudgeVersion) -> np.ndarray:
    """One model's raw P(yes) on each run's attempt and success question: (n, 2)."""
    rows = []
    for ex in examples:
        reqs = yes_no_requests(ex.frames, ex.instruction, version, ex.sensors, ex.motion)
        rows.append([float(a[0]) for a in backend.score(reqs)])
    return np.array(rows, float).reshape(-1, 2)


def answers_dataset(answers: Sequence[np.ndarray], examples: Sequence[Example]) -> Dataset:
    """The calibration data of ``examples`` from each model's :func:`raw_answers`."""
    pa = np.stack([a[:, 0] for a in answers], axis=1) if answers else np.zeros((0, 0))
    ps = np.stack([a[:, 1] for a in answers], axis=1) if answers else np.zeros((0, 0))
    return Dataset(task=np.array([ex.task_id for ex in examples]),
                   p_attempt=pa.reshape(-1, 3), p_success=ps.reshape(-1, 3),
                   attempt=np.array([ex.label.attempt for ex in examples], float),
                   success=np.array([ex.label.success for ex in examples], float))


def read_parts(backend, answers: dict[str, list], examples: dict[str, list[Example]],
               version: JudgeVersion) -> None:
    """Append ``backend``'s :func:`raw_answers` on each part's runs to ``answers[part]``."""
    for part, got in answers.items():
        got.append(raw_answers(backend, examples[part], version))


def read_through(spec, answers: dict[str, list], examples: dict[str, list[Example]],
                 version: JudgeVersion) -> None:
    """:func:`read_parts` through the backend ``spec`` names: loaded, read, freed."""
    from models.registry import create_backend

    backend = create_backend(spec)
    backend.load()
    try:
        read_parts(backend, answers, examples, version)
    finally:
        free(backend)


def free(backend) -> None:
    """Close a backend and hand its memory back (the GPU's cache too) before the next loads."""
    import gc

    device = backend.spec.device
    backend.close()
    gc.collect()
    if device.startswith("cuda"):
        import torch

        torch.cuda.empty_cache()


def training_options(cfg: TrainConfig, model_reports: dict[str, dict]) -> dict:
    """The options a version was trained with, for its ``training`` record: every knob of
    ``cfg`` but the seed and the held-out tasks (recorded on their own); ``lora``,
    ``gradient_checkpointing`` and ``lr`` as used (each model's ``train_model`` report).
    Where the models differ: None, and an lr differing by model as ``lr:<model>`` too."""
    options = {k: v for k, v in asdict(cfg).items() if k not in ("seed", "hold_out_tasks")}
    if options["small_lr"] is None:  # no recipe's small-model rate: as before recipes
        del options["small_lr"]
    for key in ("lora", "gradient_checkpointing", "lr"):
        used = {m[key] for m in model_reports.values()}
        options[key] = used.pop() if len(used) == 1 else None
    if options["lr"] is None:
        options.update({f"lr:{name}": m["lr"] for name, m in model_reports.items()})
    return options


def data_sha256(examples: Sequence[Example]) -> str:
    """sha256 over the sorted (bundle hash, attempt, success, class) of the runs used."""
    rows = sorted(f"{e.bundle_hash}:{int(e.label.attempt)}:{int(e.label.success)}:"
                  f"{e.label.failure_class or ''}\n" for e in examples)
    return _sha("".join(rows))


def train_version(ledger: Ledger, parent: JudgeVersion, new_name: str,
                  cfg: TrainConfig = TrainConfig(), labels_file: str | None = None,
                  config_out: str | None = None, progress: bool = True,
                  device_memory_bytes: int | None = None) -> tuple[Path, dict]:
    """Train ``new_name`` from ``parent``; write its weights and config; return (config, report).

    ``device_memory_bytes``: the memory each model's estimated training peak must fit
    (``judge.learn.memory``; default: its device's).

    Raises:
        TrainError / CalibrationError: nothing to train on, an empty part, the name taken,
            a model whose training would not fit its device's memory.
    """
    from judge.learn.memory import check_plan, training_memory_plan
    from models.registry import create_backend

    if not 0.0 <= cfg.blank_images < 1.0:
        raise TrainError(f"--blank-images {cfg.blank_images}: a probability in [0, 1) "
                         "(at 1 no question would show its images)")
    if not 0.0 <= cfg.blank_text < 1.0:
        raise TrainError(f"--blank-text {cfg.blank_text}: a probability in [0, 1) "
                         "(at 1 no question would show its text)")
    if not (0.0 <= cfg.test_fraction < 1.0
            and cfg.test_fraction + cfg.val_fraction + cfg.calib_fraction < 1.0):
        raise TrainError(f"--test-fraction {cfg.test_fraction}: a share in [0, 1) that leaves "
                         f"room for validation {cfg.val_fraction} and calibration "
                         f"{cfg.calib_fraction} and a train part (0 when the lab holds its "
                         "own test set)")
    if not cfg.travel_jitter >= 0.0:
        raise TrainError(f"--travel-jitter {cfg.travel_jitter}: must be 0 or more (a factor "
                         "range [1/(1+J), 1+J])")
    target = version_path(new_name, config_out)  # refused before any work if taken
    weights_root = models_dir() / new_name
    if weights_root.exists():
        raise TrainError(f"{weights_root}: already exists; a trained version's weights are "
                         "never overwritten")
    check_unrecorded(ledger, new_name)  # a name the ledger records a training of: refused
    if any(m.members for m in parent.models):
        of = f" ({', '.join(parent.training.members)})" if parent.training else ""
        raise TrainError(f"--from {parent.name}: its models average several checkpoints{of}; "
                         "train from a version with one checkpoint a model")
    specs = training_specs(parent)
    _, serving = answer_specs(parent)
    memory_plan = training_memory_plan(parent, cfg, device_memory_bytes)
    check_plan(memory_plan)  # before any run is prepared
    taxonomy = load_taxonomy()
    t0 = time.perf_counter()
    pairs = labelled_runs(ledger, parent.name, labels_file)
    held_tasks = set(cfg.hold_out_tasks)
    parts = split_runs(pairs, cfg)
    labelled = labelled_parts(parts, len(pairs), cfg)
    say(describe_parts(labelled, parent.name, cfg), progress)
    empty = [p for p in ("train", "validation", "calibration") if not parts[p]]
    if empty:
        raise TrainError(f"{len(pairs)} labelled run(s) of {parent.name!r} leave the "
                         f"{', '.join(empty)} part(s) empty; label more runs (need several "
                         "seed groups per part)")
    examples, skipped = prepare_parts(parts, ("train", "validation", "calibration"), parent,
                                      progress)
    prepare_s = time.perf_counter() - t0

    qs = {part: [q for ex in examples[part] for q in questions(ex, parent, taxonomy)]
          for part in examples}
    textless = ([q for ex in examples["train"]
                 for q in questions(replace(ex, sensors="", motion=""), parent, taxonomy)]
                if cfg.blank_text > 0 else None)
    # one model at a time: trained, its raw answers on the calibration and validation parts
    # read, saved and freed before the next loads (never two resident together)
    answers: dict[str, list[np.ndarray]] = {"calibration": [], "validation": []}
    model_reports = {}
    staging = weights_root.with_name(f".{new_name}.partial")  # renamed once all are saved
    if staging.exists():
        shutil.rmtree(staging)
    t1 = time.perf_counter()
    for i, (entry, spec) in enumerate(zip(parent.models, specs, strict=True)):
        backend = create_backend(spec)
        backend.load()
        try:
            steps = cfg.epochs * -(-len(qs["train"]) // cfg.batch)
            meter = Progress(min(steps, cfg.max_steps or steps), progress, f"train {entry.name}")
            model_reports[entry.name] = train_model(backend, qs["train"], qs["validation"],
                                                    cfg.seed * 100 + i, cfg, meter, textless)
            meter.close()
            if not serving or entry.backend == "transformers":  # read through this one
                read_parts(backend, answers, examples, parent)
            backend.save(staging / entry.name)
        finally:
            free(backend)
        if serving and entry.backend != "transformers":  # through vLLM, as it will serve
            read_through(replace(entry.spec(), path=str(staging / entry.name)), answers,
                         examples, parent)
    train_s = time.perf_counter() - t1
    staging.rename(weights_root)

    models = tuple(entry.model_copy(update={"path": f"{{models_dir}}/{new_name}/{entry.name}"})
                   for entry in parent.models)
    trained = parent.model_copy(update={"name": new_name, "models": models})
    calibrated = fit_version(trained, answers_dataset(answers["calibration"],
                                                      examples["calibration"]))
    val_metrics = confidence_report(calibrated, answers_dataset(answers["validation"],
                                                                examples["validation"]))

    used = sorted(e.bundle_hash for part in examples.values() for e in part)
    (weights_root / "used_runs.json").write_text(json.dumps(used, indent=0) + "\n")
    all_used = [e for part in examples.values() for e in part]
    options = {**training_options(cfg, model_reports),
               "calibrated_with_serving_backend": serving}
    record = Training(
        parent=parent.name, data_sha256=data_sha256(all_used), runs=len(all_used),
        seed=cfg.seed, options=options,
        split={**{p: len(examples[p]) for p in PARTS[:3]}, "test": len(parts["test"])},
        held_out={"tasks": sorted(held_tasks),
                  "test_seed_groups": sorted({g for _, _, g in parts["test"]})},
        used_runs=f"{{models_dir}}/{new_name}/used_runs.json",
        metrics={f"validation_{q}_{k}": float(val_metrics[q][k])
                 for q in ("attempt", "success") for k in ("accuracy", "ece")
                 if val_metrics[q][k] is not None},
        fingerprint=fingerprint(calibrated, taxonomy).digest)
    new = calibrated.model_copy(update={
        "description": f"{parent.name} fine-tuned on {len(examples['train'])} labelled runs "
                       f"(rcjudge train, seed {cfg.seed})",
        "training": record})
    path = write_version(new, target)
    shutil.copyfile(path, weights_root / TRAINED_COPY)  # found by name: any --config
    seen = record_training(ledger, new_name, parent.name, labels_file or "ledger", label_rows(
        ledger, [(e.run_id, e.label, part) for part in PARTS[:3] for e in examples[part]],
        from_file=labels_file is not None))
    report = {"from": parent.name, "to": new_name, "config": str(path),
              "weights": str(weights_root), "split": record.split, "labelled": labelled,
              "questions": {p: len(q) for p, q in qs.items()},
              "skipped": skipped, "models": model_reports, "validation": val_metrics,
              "memory_plan": memory_plan,
              "fingerprint": record.fingerprint, "data_sha256": record.data_sha256,
              "seen_recorded": seen,
              "seconds": {"prepare": round(prepare_s, 1), "train": round(train_s, 1),
                          "total": round(time.perf_counter() - t0, 1)}}
    return path, report
