"""``rcjudge train --plan``: each model's estimated peak memory in training, before any work.

``rcjudge train`` trains its parent's models one at a time (``judge.learn.train``), so each
model's peak must fit the device alone. The estimate, per model, from its config (built on
the "meta" device: shapes, no weights) and its processor (the real prompt of the parent's
longest question over ``images_per_question`` frames, with the processor settings both
backends pass):

* weights: every parameter in the model's dtype;
* gradients and AdamW's two states for what trains, in the trainable parameters' dtype
  (torch keeps AdamW's states in it): LoRA adapters (peft makes them float32), or every
  weight in the model's dtype for full fine-tuning; plus one trainable-sized temporary of
  the step (foreach AdamW's square root);
* activations of one question (per-question backward: ``train.accumulate``), for each
  tower (text: the prompt's tokens; vision: its patches) ``tokens × layers × (12·hidden +
  m·intermediate) × bytes`` (m = 4 for a gated MLP, 2 for fc1-GELU-fc2), the elements
  autograd keeps per token of a pre-norm transformer layer with fused attention (no
  tokens² term: SDPA); with gradient checkpointing ``tokens × (layers · hidden + one
  layer's full) × bytes``; plus the last position's logits and their gradient (the
  backend asks for that position's only: ``logits_to_keep=1``).

Peak = weights + gradients + optimizer + max(activations, the step's temporary).
Checked against measured peaks of a real step on CPU (``bench.train_memory``; the tensors
alive during forward, backward and the AdamW step, counted as torch creates and frees
them) in ``tests/integration/test_train_memory.py``; rc-judge-v1's figures are in
docs/train.md.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from judge.ensemble.version import JudgeVersion
from judge.learn.recipe import TrainConfig, training_specs
from judge.learn.step import TrainError, default_lr, lora_targets

GIB = 2**30
BYTES = {"float32": 4, "float16": 2, "bfloat16": 2}
#: Frame shapes (H, W) the plan tries, tiled cameras included; it keeps the largest prompt.
PLAN_FRAMES = ((240, 320), (240, 640), (240, 960), (448, 448), (720, 1280))
#: The question's text lines a run's prompt carries (a long instruction, sensors, motion).
INSTRUCTION = "pick up the puck and place it at the goal beside the wall, then release it"
SENSORS = ("The force sensors recorded: grasp at 0.5 s, slip at 1.9 s, contact with the table "
           "at 2.4 s; the run lasted 3.0 s.")
MOTION = ("The arm's joints travelled 7.6 rad and were still at the end. The fingers closed to "
          "40 % of their widest at 0.5 s, gripping, and ended at 45 %.")


@dataclass(frozen=True)
class Tower:
    """One stack of transformer layers (text or vision) and what runs through it."""

    name: str  # its module path, e.g. model.language_model.layers
    layers: int
    hidden: int
    intermediate: int
    gated: bool  # a gated MLP (gate, up, down): 4 intermediate-sized tensors kept, else 2
    vision: bool

    def per_token(self) -> int:
        """Elements autograd keeps per token of one layer (see the module docstring)."""
        return 12 * self.hidden + (4 if self.gated else 2) * self.intermediate


def towers(model) -> list[Tower]:
    """The model's layer stacks: its checkpointable layers grouped by their container."""
    import torch
    from transformers.modeling_layers import GradientCheckpointingLayer

    groups: dict[str, list] = {}
    for name, module in model.named_modules():
        if isinstance(module, GradientCheckpointingLayer):
            groups.setdefault(name.rpartition(".")[0], []).append(module)
    out = []
    for name, layers in groups.items():
        linears = {n: m for n, m in layers[0].named_modules() if isinstance(m, torch.nn.Linear)}
        down = max(linears.values(), key=lambda m: m.in_features)  # the MLP's last projection
        out.append(Tower(name, len(layers), down.out_features, down.in_features,
                         any(n.endswith(("gate_proj", "gate_up_proj")) for n in linears),
                         "vision" in name or "visual" in name))
    return out


def meta_model(config):
    """The architecture of ``config`` on the meta device: shapes only, nothing allocated."""
    import torch
    from transformers import AutoModelForImageTextToText

    with torch.device("meta"):
        return AutoModelForImageTextToText.from_config(config)


def lora_parameters(model, rank: int) -> int:
    """What ``train.add_lora`` trains: rank × (in + out) per adapted projection."""
    modules = dict(model.named_modules())
    return sum(rank * (modules[n].in_features + modules[n].out_features)
               for n in lora_targets(model))


def longest_request(version: JudgeVersion, frames: np.ndarray):
    """The parent's question with the longest text (a class question with its options)."""
    from judge.ensemble.prompts import class_request, family_request, yes_no_requests
    from judge.ensemble.taxonomy import load_taxonomy

    taxonomy = load_taxonomy()
    reqs = [*yes_no_requests(frames, INSTRUCTION, version, SENSORS, MOTION),
            family_request(frames, INSTRUCTION, version, taxonomy, SENSORS, MOTION)]
    reqs += [class_request(frames, INSTRUCTION, fam, version, taxonomy, SENSORS, MOTION)
             for fam in sorted({c.partition(".")[0] for c in taxonomy.classes})]
    return max(reqs, key=lambda r: len(r.prompt))


def prompt_size(processor, spec, config, version: JudgeVersion,
                frame_shapes: Sequence[tuple[int, int]] = PLAN_FRAMES) -> tuple[int, int]:
    """(prompt tokens, vision patches) of the longest question, at its worst frame shape, as
    the transformers backend encodes it: the frames as ``models.processing.model_images``
    prepares them (fitted to ``spec.max_pixels``, padded to a square where the options say)
    and the spec's processor kwargs (e.g. SmolVLM's ``size``, Qwen's pixel budget)."""
    from models.hf import TransformersBackend
    from models.processing import model_images, processor_kwargs

    encoder = TransformersBackend(spec)
    encoder.processor = processor
    kwargs = processor_kwargs(config.model_type, spec.max_pixels, spec.options, processor)
    patch = config.vision_config.patch_size
    tokens = patches = 0
    for h, w in frame_shapes:
        frames = np.zeros((version.frames.images_per_question, h, w, 3), np.uint8)
        req = longest_request(version, frames)
        images = model_images(req.frames, spec.max_pixels, spec.options)
        enc = processor(text=[encoder.prompt_text(len(images), req.prompt)], images=[images],
                        return_tensors="pt", **kwargs)
        pv = enc["pixel_values"]
        n = (pv.shape[0] if pv.ndim == 2  # Qwen2.5-VL: one row a 14 × 14 patch
             else int(np.prod(pv.shape[:-3])) * (pv.shape[-2] // patch) * (pv.shape[-1] // patch))
        tokens, patches = max(tokens, enc["input_ids"].shape[1]), max(patches, n)
    return tokens, patches


def estimate(model, tokens: int, patches: int, dtype: str, lora_rank: int | None,
             checkpointing: bool) -> dict[str, int]:
    """Bytes of each part of one model's training peak (see the module docstring)."""
    size = BYTES[dtype]
    params = sum(p.numel() for p in model.parameters())
    trainable = lora_parameters(model, lora_rank) if lora_rank else params
    tsize = 4 if lora_rank else size  # peft keeps adapters in float32
    acts = 0
    for t in towers(model):
        n = patches if t.vision else tokens
        acts += (n * (t.layers * t.hidden + t.per_token()) if checkpointing
                 else n * t.layers * t.per_token()) * size
    vocab = model.config.get_text_config().vocab_size
    acts += 2 * vocab * size  # the last position's logits (logits_to_keep=1), and their gradient
    parts = {"weights": params * size, "gradients": trainable * tsize,
             "optimizer": 2 * trainable * tsize, "activations": acts}
    parts["peak"] = (parts["weights"] + parts["gradients"] + parts["optimizer"]
                     + max(acts, trainable * tsize))
    return {"parameters": params, "trainable": trainable, **parts}


def plan_model(name: str, config, processor, spec, version: JudgeVersion, cfg: TrainConfig,
               frame_shapes: Sequence[tuple[int, int]] = PLAN_FRAMES) -> dict:
    """One row of the plan: the model's sizes, its prompt, and its estimates with and
    without gradient checkpointing (``peak``: as ``cfg`` trains it on ``spec.device``)."""
    cuda = spec.device.startswith("cuda")
    lora = cfg.lora if cfg.lora is not None else cuda
    ckpt = cfg.gradient_checkpointing if cfg.gradient_checkpointing is not None else cuda
    model = meta_model(config)
    tokens, patches = prompt_size(processor, spec, config, version, frame_shapes)
    rank = cfg.lora_rank if lora else None
    with_ckpt = estimate(model, tokens, patches, spec.dtype, rank, True)
    without = estimate(model, tokens, patches, spec.dtype, rank, False)
    chosen = with_ckpt if ckpt else without
    lr = cfg.lr if cfg.lr is not None else default_lr(chosen["parameters"], lora, cfg.small_lr)
    return {"model": name, "device": spec.device, "dtype": spec.dtype, "lora": lora,
            "gradient_checkpointing": ckpt, "lr": lr, "prompt_tokens": tokens,
            "vision_patches": patches,
            **{k: chosen[k] for k in ("parameters", "trainable", "weights", "gradients",
                                      "optimizer", "activations")},
            "activations_checkpointed": with_ckpt["activations"],
            "activations_kept": without["activations"],
            "peak_checkpointed": with_ckpt["peak"], "peak_kept": without["peak"],
            "peak": chosen["peak"]}


def device_memory(device: str) -> int:
    """Bytes of memory of ``device``: the GPU's total on CUDA, the machine's RAM otherwise."""
    if device.startswith("cuda"):
        import torch

        return int(torch.cuda.get_device_properties(torch.device(device)).total_memory)
    return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")


def training_memory_plan(version: JudgeVersion, cfg: TrainConfig,
                         device_memory_bytes: int | None = None) -> list[dict]:
    """Each of ``version``'s models as ``rcjudge train`` would train it: a :func:`plan_model`
    row, with ``device_memory`` (``device_memory_bytes``, else :func:`device_memory` of
    its device) and ``fits``.

    Raises:
        TrainError: a model not trainable (``recipe.training_specs``) or whose config or
            processor cannot be read from its folder.
    """
    from pathlib import Path

    from transformers import AutoConfig, AutoProcessor

    rows = []
    for entry, spec in zip(version.models, training_specs(version), strict=True):
        if not Path(spec.path).is_dir():
            raise TrainError(f"model {entry.name}: {spec.path} is not a folder; its config "
                             "and processor are read from there to plan its memory")
        try:
            config = AutoConfig.from_pretrained(spec.path)
            processor = AutoProcessor.from_pretrained(spec.path)
        except (OSError, ValueError) as exc:
            raise TrainError(f"model {entry.name}: cannot read its config and processor from "
                             f"{spec.path} to plan its memory: {exc}".splitlines()[0]) from None
        row = plan_model(entry.name, config, processor, spec, version, cfg)
        memory = device_memory_bytes or device_memory(spec.device)
        rows.append({**row, "device_memory": memory, "fits": row["peak"] <= memory})
    return rows


def size(n: int) -> str:
    """Bytes as GiB from 1 GiB on, else MiB."""
    return f"{n / GIB:.2f} GiB" if n >= GIB else f"{n / 2**20:.1f} MiB"


def check_plan(rows: Sequence[dict]) -> None:
    """Refuse the first model whose estimated peak exceeds its device's memory (one line)."""
    for r in rows:
        if not r["fits"]:
            raise TrainError(f"model {r['model']}: training needs an estimated "
                             f"{size(r['peak'])} at its peak (rcjudge train --plan), more than "
                             f"the {size(r['device_memory'])} of {r['device']}"
                             "; train on a larger device, with --lora or --gradient-"
                             "checkpointing, or plan for another with --device-memory-gib")


def format_plan(rows: Sequence[dict]) -> str:
    """The plan as a table, in GiB (MiB when every peak is under 1 GiB)."""
    unit, scale = ("GiB", GIB) if max(r["peak"] for r in rows) >= GIB else ("MiB", 2**20)
    lines = [f"| model | LoRA | checkpointing | lr | prompt tokens | vision patches | weights | "
             f"gradients | optimizer | activations kept / checkpointed | peak kept / "
             f"checkpointed | peak {unit} | device {unit} | fits |", "|---" * 14 + "|"]
    for r in rows:
        g = {k: f"{r[k] / scale:.2f}" for k in (
            "weights", "gradients", "optimizer", "activations_kept", "activations_checkpointed",
            "peak_kept", "peak_checkpointed", "peak", "device_memory")}
        lines.append(
            f"| {r['model']} | {r['lora']} | {r['gradient_checkpointing']} | {r['lr']:g} | "
            f"{r['prompt_tokens']} | {r['vision_patches']} | {g['weights']} | "
            f"{g['gradients']} | {g['optimizer']} | {g['activations_kept']} / "
            f"{g['activations_checkpointed']} | {g['peak_kept']} / {g['peak_checkpointed']} | "
            f"{g['peak']} | {g['device_memory']} | {'yes' if r['fits'] else 'NO'} |")
    return "\n".join(lines)
